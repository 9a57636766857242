"""Swing on the torus-like networks of Swing §5.4: a full bandwidth-optimal
Swing allreduce (schedule + route + solve, ``profile(build(...), topo,
Network())``) on a 4,096-node HyperX (64x64), Hx2Mesh (2x2 boards, 32x32)
and Hx4Mesh (4x4 boards, 16x16).

Target ≤ 100 ms each (2-core machine, after JIT warm-up). ``extra_info``
records ``route_ms`` (``Topology.route`` of the distinct steps) and
``yardstick_ms``, a 1 GiB numpy copy timed in the same run, so figures from
different machines or loads can be compared; run with ``-s`` to see them.
"""

from __future__ import annotations

import pytest

from flowemu.algorithms import swing
from flowemu.core.network import Network
from flowemu.engine.profiles import profile
from flowemu.topology import parse_topology
from tests.benchmarks.yardstick import best_seconds, copy_1gib_ms

SPECS = ["hyperx:64x64", "hx2mesh:32x32", "hx4mesh:16x16"]


def _end_to_end(topo):
    sched = swing.build(topo.num_endpoints, topo, False, variant="bandwidth")
    return profile(sched, topo, Network())


@pytest.fixture(scope="module", autouse=True)
def warm_jit():
    for spec in ("hyperx:4x4", "hammingmesh:2x2,2x2"):
        _end_to_end(parse_topology(spec))






@pytest.mark.parametrize("spec", SPECS)
def test_bench_swing_bandwidth_grids(benchmark, spec):
    topo = parse_topology(spec)
    _end_to_end(topo)                             # warm-up on this shape
    prof = benchmark.pedantic(_end_to_end, args=(topo,), rounds=5, iterations=1)
    assert prof.num_steps == 2 * 12
    sched = swing.build(topo.num_endpoints, topo, False, variant="bandwidth")
    distinct = list({id(s.traffic): s for s in sched.steps}.values())

    def route_all():
        for s in distinct:
            topo.route(s.traffic.src, s.traffic.dst, ecmp="split")

    info = {"route_ms": 1e3 * best_seconds(route_all), "yardstick_ms": copy_1gib_ms(),
            "distinct_steps": len(distinct)}
    benchmark.extra_info.update(info)
    print(f"\n{spec}: " + ", ".join(f"{k}={v:.1f}" if isinstance(v, float) else f"{k}={v}"
                                    for k, v in info.items()))
