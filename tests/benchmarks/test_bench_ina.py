"""In-network aggregation (``ina``) on ``fattree:k=40`` (16,000 hosts): the
whole-tree stream (one flow over the tree's ~64,000 links), four trees
sharing the host links, and the tier cut-off at the edge switches (800
groups' reduce and multicast streams around a ring of 800 representatives).
The time goes into building the streams' trees (the topology's aggregation
parents, vectorized per stream) and one max-min solve per distinct step.

``extra_info`` holds ``copy_1gib_ms``, a 1 GiB numpy copy timed in the same
run (the yardstick; ``-s`` prints both). Marked slow (16,000 hosts); run with
``pytest -m slow tests/benchmarks/test_bench_ina.py`` (``--benchmark-disable``
for a smoke run).
"""

from __future__ import annotations

import pytest

import flowemu
from flowemu.topology import parse_topology
from tests.benchmarks.yardstick import copy_1gib_ms

SPEC = "fattree:k=40"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def topo():
    topo = parse_topology(SPEC)
    flowemu.simulate(topo, "ina:tiers=1", "1MiB")     # numba warm-up
    return topo


@pytest.mark.parametrize("algorithm", ["ina", "ina:trees=4", "ina:tiers=1"])
def test_bench_ina_fattree_k40(benchmark, topo, algorithm):
    """``flowemu.simulate`` as a user runs it: build + streams + solve, 3 sizes."""
    df = benchmark.pedantic(flowemu.simulate, args=(topo, algorithm, "1KiB,1MiB,1GiB"),
                            rounds=3, iterations=1)
    copy = copy_1gib_ms()
    benchmark.extra_info.update(copy_1gib_ms=copy, hosts=topo.num_endpoints)
    stats = getattr(benchmark, "stats", None)
    best = f"{1e3 * stats.stats.min:.0f} ms" if stats is not None else "(not timed)"
    print(f"\n{algorithm} on {SPEC}: {best}; yardstick {copy:.0f} ms")
    assert len(df) == 3 and (df.time_s > 0).all()
