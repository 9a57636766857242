"""GenTree on a 16,000-host fat tree: the plan (Algorithms 1 and 2, every
candidate priced by GenModel) plus the full flow-level simulation of the
schedule, as ``flowemu.simulate`` runs them (issue target: <= 5 s after
warm-up). ``extra_info`` holds the plan chosen and ``copy_1gib_ms``, a 1 GiB
numpy copy timed in the same run (the yardstick; ``-s`` prints both).

Run with ``pytest tests/benchmarks/test_bench_gentree.py`` (``--benchmark-disable``
for a smoke run); read the figures beside the yardstick timed in the same run.
"""

from __future__ import annotations

import pytest

import flowemu
from flowemu.algorithms.gentree.planner import make_plan
from flowemu.core.network import Network
from flowemu.topology import parse_topology
from tests.benchmarks.yardstick import copy_1gib_ms

SPEC = "fattree:k=40"      # 16,000 hosts, 40 pods of 20 edge switches of 20 hosts


@pytest.fixture(scope="module")
def fattree():
    topo = parse_topology(SPEC)
    flowemu.simulate("fattree:k=4", "gentree", "1MiB")          # numba warm-up
    return topo


@pytest.mark.parametrize("size", ["1MiB", "256MiB"])
def test_bench_gentree_fattree_16000(benchmark, fattree, size):
    """Plan + schedule + every step routed and solved, one size."""
    df = benchmark.pedantic(flowemu.simulate, args=(fattree, "gentree", size),
                            rounds=3, iterations=1, warmup_rounds=1)
    benchmark.extra_info.update(variant=df["variant"].item(), copy_1gib_ms=copy_1gib_ms())
    print(f"\ngentree {SPEC} {size}: {df['variant'].item()}; yardstick "
          f"{benchmark.extra_info['copy_1gib_ms']:.0f} ms")
    assert len(df) == 1 and df["time_s"].item() > 0


def test_bench_gentree_plan_only_16000(benchmark, fattree):
    """GenTree's plan alone (every candidate of every switch class priced)."""
    plan = benchmark.pedantic(make_plan, args=(fattree, Network(), 2.0**28), rounds=3,
                              iterations=1, warmup_rounds=1)
    assert plan.time > 0
