"""Background traffic and slow ranks in the engine (issue 16, points 3, 4).

Full profile of bandwidth-optimal Swing (ports=max) on torus:32x32:

* healthy (the yardstick of this file's own figures);
* with a random-permutation background at load 0.5 (1,024 persistent flows,
  split ECMP: ~300 entries each join every step's problem, and the
  collective's 4,096 flows a step then finish at up to 4,096 distinct times);
* with 16 random slow ranks (port caps only: 32 virtual resources).

The background's cost is the solver's event-driven completion over the
joined problem (O(events × re-solved entries)); it grows steeply with the
torus (16x16: ~10x the healthy profile; 64x64: seconds). Run with
``pytest tests/benchmarks/test_bench_background.py`` (``--benchmark-disable``
for a smoke run) and report the figures beside the yardstick (a 1 GiB numpy
copy) timed in the same run. Compile time is outside the timed part.
"""

from __future__ import annotations

import pytest

from flowemu.algorithms import swing
from flowemu.api.profiling import profile
from flowemu.core.network import Network
from flowemu.topology import parse_topology

SPEC = "torus:32x32"
CASES = {"healthy": {}, "background": {"background": "perm:0.5:1"},
         "slow": {"slow": "random:16:1=0.5"}}


@pytest.fixture(scope="module", autouse=True)
def warm_jit():
    topo = parse_topology("torus:4x4")
    profile(swing.build(16, topo, False, variant="bandwidth"), topo, background="perm:0.5",
            slow="1=0.5", threads=1)


@pytest.mark.parametrize("case", list(CASES))
def test_bench_swing_profile_with_load(benchmark, case):
    topo = parse_topology(SPEC)
    sched = swing.build(topo.num_endpoints, topo, False, variant="bandwidth")
    kwargs = CASES[case]
    prof = benchmark.pedantic(lambda: profile(sched, topo, Network(), threads=1, **kwargs),
                              rounds=3, iterations=1)
    assert prof.num_steps == 2 * 10
    if case == "background":
        assert 0 < prof.background_throughput([2**20])[0] <= prof.info["background_rate"]
