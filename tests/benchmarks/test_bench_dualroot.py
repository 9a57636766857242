"""``dualroot:blocks=1000`` on 16,384 ranks (issue 15, point 4): ~3,050
bulk-synchronous steps, of which ~100 are distinct traffic patterns (the
fill and drain of the trees; the steady state repeats three). The builder
hands repeated steps the same Traffic and Reduction objects, so the engine
routes and solves each pattern once and looks the others up by identity.

Target (2-core machine, after warm-up): the full profile (every step) <=
2 s on torus:128x128, fattree:k=32 (8,192 hosts) and tree:32x32x16.
``extra_info`` holds ``copy_1gib_ms``, a 1 GiB numpy copy timed in the same
run (the yardstick; ``-s`` prints both).

Run with ``pytest tests/benchmarks/test_bench_dualroot.py`` (``--benchmark-disable``
for a smoke run).
"""

from __future__ import annotations

import pytest

import flowemu
from flowemu.algorithms import get_algorithm
from flowemu.engine.profiles import profile
from flowemu.topology import parse_topology
from tests.benchmarks.yardstick import copy_1gib_ms

SPECS = ["torus:128x128", "fattree:k=32", "tree:32x32x16"]


@pytest.fixture(scope="module", params=SPECS)
def case(request):
    topo = parse_topology(request.param)
    p = min(16384, topo.num_endpoints)
    sched = get_algorithm("dualroot").build(p, topo, False, blocks=1000)
    profile(sched, topo)                       # numba warm-up (compiles once per tree)
    return topo, sched


def test_bench_dualroot_profile(benchmark, case):
    """Every step of the prebuilt schedule profiled (fresh engine cache each
    round: the distinct patterns are really routed and solved)."""
    topo, sched = case
    prof = benchmark.pedantic(profile, args=(sched, topo), rounds=3, iterations=1)
    distinct = sched.info["distinct_steps"]
    benchmark.extra_info.update(steps=sched.num_steps, distinct=distinct,
                                copy_1gib_ms=copy_1gib_ms())
    print(f"\ndualroot:blocks=1000 {topo.spec} p={sched.p}: {sched.num_steps} steps, "
          f"{distinct} distinct; yardstick {benchmark.extra_info['copy_1gib_ms']:.0f} ms")
    assert len(prof.steps) == sched.num_steps and distinct <= 120


def test_bench_dualroot_simulate(benchmark, case):
    """``flowemu.simulate`` as a user runs it: build + profile + one size."""
    topo, sched = case
    df = benchmark.pedantic(flowemu.simulate, args=(topo, "dualroot:blocks=1000", "256MiB"),
                            kwargs={"ranks": sched.p}, rounds=3, iterations=1)
    benchmark.extra_info.update(copy_1gib_ms=copy_1gib_ms())
    assert df["steps"].item() == sched.num_steps
