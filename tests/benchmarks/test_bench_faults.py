"""Failed links: a full bandwidth-optimal Swing profile (ports=max, 4
collectives) on ``torus:64x64`` with 16 random failed cables
(``random:16:0``), i.e. ``profile(build(...), apply_faults(...), Network())``.

Target <= 200 ms after warm-up (issue 16). Each run records the healthy
torus's figure and ``yardstick_ms`` (a 1 GiB numpy copy timed in the same
run) in ``extra_info``, plus the re-routing breakdown of the distinct steps
(``route_ms``: routing with failures, ``base_route_ms``: the same flows on
the healthy torus, ``rerouted_flows``). Run with ``-s`` to see them printed.
"""

from __future__ import annotations

import numpy as np
import pytest

from flowemu.algorithms import get_algorithm
from flowemu.core.network import Network
from flowemu.engine.profiles import profile
from flowemu.topology import parse_topology
from flowemu.whatif.faults import apply_faults
from tests.benchmarks.yardstick import best_seconds, copy_1gib_ms, record_target

#: timings (make bench); their setups take seconds, which make test spares
pytestmark = pytest.mark.slow

SPEC = "torus:64x64"
FAIL = "random:16:0"


def _swing(topo):
    sched = get_algorithm("swing").build(topo.num_endpoints, topo, variant="bandwidth")
    return profile(sched, topo, Network())




@pytest.fixture(scope="module")
def yardstick():
    return copy_1gib_ms()


@pytest.fixture(scope="module", autouse=True)
def warm_jit():
    _swing(apply_faults(parse_topology("torus:4x4"), fail="random:2:0"))


def test_bench_swing_torus_64x64_16_failed_links(benchmark, yardstick):
    base = parse_topology(SPEC)
    topo = apply_faults(base, fail=FAIL)
    assert int(topo.failed.sum()) == 32                  # 16 cables, both directions
    _swing(topo)                                          # warm-up on this shape
    _swing(base)
    prof = benchmark.pedantic(_swing, args=(topo,), rounds=3, iterations=1)
    healthy_ms = 1e3 * best_seconds(lambda: _swing(base))
    sched = get_algorithm("swing").build(4096, topo, variant="bandwidth")
    distinct = list({id(s.traffic): s.traffic for s in sched.steps}.values())

    def route(t):
        for tr in distinct:
            t.route(tr.src, tr.dst)

    rerouted = 0
    for tr in distinct:
        r = base.route(tr.src, tr.dst)
        hit = np.flatnonzero(topo.failed[r.link])
        rerouted += len(np.unique(np.searchsorted(r.flow_ptr, hit, side="right") - 1))
    info = {"healthy_ms": healthy_ms, "yardstick_ms": yardstick,
            "route_ms": 1e3 * best_seconds(lambda: route(topo)),
            "base_route_ms": 1e3 * best_seconds(lambda: route(base)),
            "rerouted_flows": rerouted, "distinct_steps": len(distinct)}
    benchmark.extra_info.update(info)
    record_target(benchmark, 50.0)   # issue 25 (ms at a 95 ms copy)
    print(f"\n{SPEC} fail={FAIL}: " + ", ".join(
        f"{k}={v:.1f}" if isinstance(v, float) else f"{k}={v}" for k, v in info.items()))
    healthy = _swing(base).times([2.0**20])[0]
    assert prof.times([2.0**20])[0] > healthy
