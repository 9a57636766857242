"""Several jobs at once (issue 27 item 4): two recursive-doubling
allreduces (Rabenseifner, 26 steps of 8,192 flows each) on every host of
``fattree:k=32`` (8,192 hosts; both jobs on all of them, the second
starting 100 µs later), 64 MiB each, split routes, under both
synchronisations. Each run solves each job alone and both together (three
event-driven solves). The copy yardstick of the same run is in
``extra_info``; no target is asserted. Slow: ``make bench`` runs it."""

from __future__ import annotations

import pytest

import flowemu
from tests.benchmarks.yardstick import copy_1gib_ms

pytestmark = pytest.mark.slow

JOBS = ["algorithm=recdoub:variant=bandwidth size=64MiB placement=linear",
        "algorithm=recdoub:variant=bandwidth size=64MiB placement=linear start=100us"]


@pytest.fixture(scope="module", autouse=True)
def warm_jit():
    flowemu.simulate_jobs("fattree:k=4", JOBS)


@pytest.mark.parametrize("sync", ["barrier", "dataflow"])
def test_bench_two_jobs_of_8192_ranks_fattree_k32(benchmark, sync):
    df = benchmark.pedantic(lambda: flowemu.simulate_jobs("fattree:k=32", JOBS, sync=sync),
                            rounds=1, iterations=1)
    assert list(df["ranks"]) == [8192, 8192] and (df["slowdown"] > 1).all()
    if getattr(benchmark, "stats", None) is not None:
        benchmark.extra_info["copy_1gib_ms"] = copy_1gib_ms()
        benchmark.extra_info["slowdown"] = float(df["slowdown"].max())
