"""Acceptance benchmarks for the core: route + solve on 16k and 4k node tori.

Targets (2-core machine, after JIT warm-up): one recursive-doubling step on
torus:128x128 ≤ 20 ms; a random permutation with random sizes on torus:64x64
(event-driven, thousands of distinct finish times) ≤ 2 s.
"""

import pytest

from flowemu.algorithms import Reduction, get_algorithm
from flowemu.core.network import Network
from flowemu.engine.profiles import make_context, step_profile
from flowemu.topology import parse_topology
from tests.helpers.traffic import random_permutation


def _route_and_solve(topo, traffic, ecmp="split"):
    ctx = make_context(topo, Network(), ecmp=ecmp)  # fresh cache: really routes and solves
    return step_profile(ctx, traffic, Reduction.none(), "bench")


@pytest.fixture(scope="module")
def torus128():
    return parse_topology("torus:128x128")


@pytest.mark.parametrize("step", [0, 6, 13])
def test_recdoub_step_128x128(benchmark, torus128, step):
    """Step 13 is the heaviest: every node's peer is 64 hops away (a tie, so
    ECMP split uses both ways round: 128 links per flow, 2M route entries)."""
    spec = get_algorithm("recdoub")
    sched = spec.build(16384, torus128, False, variant="latency")
    traffic = sched.steps[step].traffic
    _route_and_solve(torus128, traffic)  # JIT warm-up
    prof = benchmark(_route_and_solve, torus128, traffic)
    assert prof.num_flows == 16384


@pytest.mark.parametrize("ecmp", ["split", "hash"])
def test_random_permutation_64x64(benchmark, ecmp):
    """Every flow finishes at its own time: ~4,000 events. ``hash`` puts
    ~32 links on a flow, ``split`` ~570. An event re-solves the flows at or
    above the finished rate (~680 on average) over their entries on the
    links near capacity only (~14 a flow with split routes)."""
    topo = parse_topology("torus:64x64")
    traffic = random_permutation(topo)
    _route_and_solve(topo, traffic, ecmp)
    prof = benchmark.pedantic(_route_and_solve, args=(topo, traffic, ecmp), rounds=3,
                              iterations=1)
    assert prof.num_flows == traffic.num_flows
