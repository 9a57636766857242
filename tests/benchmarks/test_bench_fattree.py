"""Fat-tree acceptance benchmarks (issue 13), on the 2-core machine after JIT
warm-up:

* a full bandwidth-optimal recursive-doubling profile on fattree:k=40
  (16,000 hosts; 28 steps, 15 distinct patterns of up to 8,192 flows;
  split routes have 2 + k + 2(k/2)² = 842 entries a flow across pods, 51M
  in all): <= 2 s with ``ecmp=split``, <= 1 s with ``hash`` (``dmodk`` is
  timed too);
* a random permutation with random sizes on fattree:k=32 (8,192 hosts,
  ~8,000 distinct finish events), event by event: <= 2 s for every mode.

``extra_info`` records where the time goes: ``route_ms`` (``Topology.route``
of the distinct patterns), ``solve_ms`` (the rest of route + solve), and
``copy_1gib_ms``, a 1 GiB numpy copy timed in the same run as a yardstick of
the machine's speed at that moment. Run with ``-s`` to see them printed.
"""

from __future__ import annotations

import numpy as np
import pytest

from flowemu.algorithms import Reduction, get_algorithm
from flowemu.algorithms.base import Traffic
from flowemu.core.network import Network
from flowemu.engine.profiles import make_context, profile, step_profile
from flowemu.topology import parse_topology
from tests.benchmarks.yardstick import best_seconds, copy_1gib_ms, record_target
from tests.helpers.traffic import random_permutation

MODES = ["split", "hash", "dmodk"]
TARGET_S = {"split": 2.0, "hash": 1.0, "dmodk": 1.0}
#: issue 25's targets for the k=32 random permutation (ms at a 95 ms copy)
TARGET_MS = {"dmodk": 25.0, "split": 40.0}


def _recdoub(topo):
    return get_algorithm("recdoub").build(topo.num_endpoints, topo, False, variant="bandwidth")


def _profile(topo, ecmp):
    return profile(_recdoub(topo), topo, Network(), ecmp=ecmp)


def _route_and_solve(topo, traffic, ecmp):
    ctx = make_context(topo, Network(), ecmp=ecmp)   # fresh cache: really routes and solves
    return step_profile(ctx, traffic, Reduction.none(), "bench")




def _min_s(benchmark) -> float | None:
    """The fastest round in seconds, None with ``--benchmark-disable``."""
    stats = getattr(benchmark, "stats", None)
    return None if stats is None else stats.stats.min




@pytest.fixture(scope="module", autouse=True)
def warm_jit():
    small = parse_topology("fattree:k=4")
    for ecmp in MODES:
        _profile(small, ecmp)
        src = np.arange(16)
        _route_and_solve(small, Traffic(src, (src + 5) % 16, np.linspace(1, 2, 16)), ecmp)


@pytest.fixture(scope="module")
def k40():
    return parse_topology("fattree:k=40")


@pytest.mark.parametrize("ecmp", MODES)
def test_recdoub_bandwidth_profile_k40(benchmark, k40, ecmp):
    prof = benchmark.pedantic(_profile, args=(k40, ecmp), rounds=3, iterations=1)
    assert prof.num_steps == 28 and k40.num_endpoints == 16000
    distinct = list({id(s.traffic): s.traffic for s in _recdoub(k40).steps}.values())

    def route_all():
        for tr in distinct:
            k40.route(tr.src, tr.dst, ecmp)

    total_s = _min_s(benchmark)
    if total_s is None:
        return   # a smoke run (--benchmark-disable): no figures
    route_s = best_seconds(route_all, repeat=2)
    info = {"route_ms": 1e3 * route_s, "solve_ms": 1e3 * max(total_s - route_s, 0.0),
            "entries": sum(k40.route_entries(tr.src, tr.dst, ecmp) for tr in distinct),
            "copy_1gib_ms": copy_1gib_ms()}
    benchmark.extra_info.update(info)
    print(f"\nrecdoub k=40 {ecmp}: total={1e3 * total_s:.0f} ms, "
          + ", ".join(f"{k}={v:.0f}" for k, v in info.items()))
    assert total_s <= TARGET_S[ecmp]


@pytest.mark.parametrize("ecmp", MODES)
def test_random_permutation_k32(benchmark, ecmp):
    """Every flow finishes at its own time: the incremental solver (issue 25:
    <= 25 ms with dmodk, <= 40 ms with split, at a 95 ms copy); split routes
    reach it as one merged resource per uplink group (6 entries a flow, not
    2 + k + 2(k/2)²)."""
    topo = parse_topology("fattree:k=32")
    traffic = random_permutation(topo)
    prof = benchmark.pedantic(_route_and_solve, args=(topo, traffic, ecmp), rounds=3,
                              iterations=1)
    assert prof.num_flows == traffic.num_flows
    best = _min_s(benchmark)
    if best is None:
        return
    if ecmp in TARGET_MS:
        record_target(benchmark, TARGET_MS[ecmp])
    else:
        benchmark.extra_info["copy_1gib_ms"] = copy_1gib_ms()
    assert best <= 2.0


@pytest.mark.parametrize("spec, ecmp", [("fattree:k=32,taper=2", "dmodk"),
                                        ("fattree:k=32,taper=2", "split"),
                                        ("fattree:k=32,taper=4", "split"),
                                        pytest.param("fattree:k=32,taper=1:3", "split",
                                                     marks=pytest.mark.slow)])
def test_random_permutation_k32_tapered(benchmark, spec, ecmp):
    """Tapered trees: with split routes the shared uplink groups couple most
    flows, so a finish changes ~200 rates (by k=32) that the incremental
    solver follows one by one. Issue 25 asks <= 40 ms at a 95 ms copy for
    taper=2 (recorded for both modes)."""
    topo = parse_topology(spec)
    traffic = random_permutation(topo)
    benchmark.pedantic(_route_and_solve, args=(topo, traffic, ecmp), rounds=1 if ecmp == "split"
                       else 3, iterations=1)
    if spec.endswith("taper=2"):
        record_target(benchmark, 40.0)
    elif _min_s(benchmark) is not None:
        benchmark.extra_info["copy_1gib_ms"] = copy_1gib_ms()
