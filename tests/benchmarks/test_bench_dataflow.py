"""Dataflow execution (``sync="dataflow"``, issue 27): Swing's bandwidth
schedule on ``torus:64x64`` (4,096 ranks, 24 steps, 393,216 flows in one
event-driven solve) with one slow rank (``3=0.5``: half speed for its
reductions and its ports, γ = 0.1 ns/B), one size (64 MiB). The routing and
stage layout (``dataflow_run``) and the solve are timed apart; the copy
yardstick of the same run is in ``extra_info``. No target is asserted (the
issue asks for the figure beside the copy); slow, so ``make bench`` runs it,
``make test`` does not.

Also Swing on ``torus:16x16`` under a background (``perm:0.5``: every
background flow is in the solve from start to end and couples the stages'
flows), where each finish moves background rates the solver follows."""

from __future__ import annotations

import pytest

from flowemu.algorithms import swing
from flowemu.core.network import Network
from flowemu.engine.dataflow import dataflow_run
from flowemu.topology import parse_topology
from flowemu.whatif.background import parse_background
from flowemu.whatif.stragglers import parse_slow
from tests.benchmarks.yardstick import best_seconds, copy_1gib_ms

pytestmark = pytest.mark.slow

NET = Network(gamma="0.1ns")
SIZE = 64 * 2**20


@pytest.fixture(scope="module", autouse=True)
def warm_jit():
    small = parse_topology("torus:4x4")
    sched = swing.build(16, small, False, variant="bandwidth")
    dataflow_run(sched, small, NET, slow=parse_slow("3=0.5", 16)).times([SIZE])
    dataflow_run(sched, small, NET,
                 background=parse_background("perm:0.5", small, NET)).times([SIZE])


def test_bench_swing_64x64_one_slow_rank_dataflow(benchmark):
    topo = parse_topology("torus:64x64")
    sched = swing.build(topo.num_endpoints, topo, False, variant="bandwidth")
    slow = parse_slow("3=0.5", topo.num_endpoints)
    run = dataflow_run(sched, topo, NET, slow=slow)
    times = benchmark.pedantic(lambda: run.times([SIZE]), rounds=1, iterations=1)
    assert times[0] > 0 and run.num_flows == 24 * 4096 * 4
    if getattr(benchmark, "stats", None) is None:
        return   # a smoke run (--benchmark-disable): no figures
    layout_s = best_seconds(lambda: dataflow_run(sched, topo, NET, slow=slow), repeat=1)
    benchmark.extra_info.update(layout_ms=1e3 * layout_s, copy_1gib_ms=copy_1gib_ms())
    print(f"\nswing 64x64 dataflow, one slow rank: solve {1e3 * benchmark.stats.stats.min:.0f} "
          f"ms, layout {1e3 * layout_s:.0f} ms")


def test_bench_swing_16x16_background_dataflow(benchmark):
    topo = parse_topology("torus:16x16")
    sched = swing.build(topo.num_endpoints, topo, False, variant="bandwidth")
    run = dataflow_run(sched, topo, NET, background=parse_background("perm:0.5", topo, NET))
    times, carried = benchmark.pedantic(lambda: run.times_and_background([SIZE]), rounds=3,
                                        iterations=1)
    assert times[0] > 0 and carried[0] > 0
    if getattr(benchmark, "stats", None) is None:
        return   # a smoke run (--benchmark-disable): no figures
    benchmark.extra_info.update(copy_1gib_ms=copy_1gib_ms())
    print(f"\nswing 16x16 dataflow, perm:0.5 background: solve "
          f"{1e3 * benchmark.stats.stats.min:.0f} ms")
