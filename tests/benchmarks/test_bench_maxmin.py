"""Benchmarks of the max-min solver alone (flowemu.kernels.maxmin).

Targets (2-core machine, after JIT warm-up):

* random permutation with random sizes on torus:64x64 (4095 flows, 4095
  distinct finish events): <= 2 s. Measured with one hashed path per flow
  (131K route entries; the default screened re-solves, and the full and
  restricted ones for comparison) and with ECMP split routes (2.35M entries,
  18x as many);
* one recursive-doubling step on torus:128x128 (rank r sends to r XOR 8192,
  every peer 64 hops away, split both ways round: 16384 flows, 2M entries,
  one level, one event): <= ~10 ms.

Run with ``pytest tests/benchmarks/test_bench_maxmin.py``; with
``--benchmark-disable`` each benchmark runs once, as a smoke test. Routes come
from :class:`flowemu.topology.torus.Torus`; the JIT is warmed up on a tiny
instance first so compile time never lands inside a measurement.
"""

from __future__ import annotations

import numpy as np
import pytest

from flowemu.kernels.maxmin import STATUS_OK, max_min_rates, solve_completion
from flowemu.topology.torus import Torus


@pytest.fixture(scope="module", autouse=True)
def warm_jit():
    topo = Torus(dims=(4, 4))
    src = np.arange(16)
    dst = (src + 5) % 16
    routes = topo.route(src, dst, ecmp="split")
    cap = np.ones(topo.num_links)
    sizes = np.linspace(1.0, 2.0, 16)
    solve_completion(routes, cap, sizes)
    solve_completion(routes, cap, sizes, flow_dst=dst, ingress_capacity=np.full(16, 4.0),
                     incast_threshold=1, incast_slope=0.1)
    max_min_rates(routes, cap)


def _permutation_64x64(ecmp):
    topo = Torus(dims=(64, 64))
    rng = np.random.default_rng(2026)
    src = np.arange(topo.num_nodes)
    dst = rng.permutation(topo.num_nodes)
    keep = src != dst
    routes = topo.route(src[keep], dst[keep], ecmp=ecmp)
    sizes = rng.uniform(0.1, 1.0, int(keep.sum()))
    return routes, np.ones(topo.num_links), sizes


@pytest.fixture(scope="module")
def permutation_64x64():
    return _permutation_64x64("split")


@pytest.fixture(scope="module")
def permutation_64x64_hash():
    return _permutation_64x64("hash")


@pytest.fixture(scope="module")
def recdoub_128x128():
    topo = Torus(dims=(128, 128))
    src = np.arange(topo.num_nodes)
    routes = topo.route(src, src ^ 8192, ecmp="split")
    return routes, np.ones(topo.num_links), np.ones(topo.num_nodes)


def test_bench_completion_permutation_64x64(benchmark, permutation_64x64):
    routes, cap, sizes = permutation_64x64
    sol = benchmark.pedantic(solve_completion, args=(routes, cap, sizes), rounds=2,
                             iterations=1)
    assert sol.status == STATUS_OK
    assert np.all(np.isfinite(sol.finish))
    assert len(np.unique(sol.finish)) > 0.9 * routes.num_flows  # thousands of events


@pytest.mark.parametrize("method", ["auto", "incremental", "screened"])
def test_bench_completion_permutation_64x64_hash(benchmark, permutation_64x64_hash, method):
    routes, cap, sizes = permutation_64x64_hash
    sol = benchmark.pedantic(solve_completion, args=(routes, cap, sizes),
                             kwargs={"method": method}, rounds=3, iterations=1)
    assert sol.status == STATUS_OK
    assert len(np.unique(sol.finish)) > 0.9 * routes.num_flows


def test_bench_completion_recdoub_128x128(benchmark, recdoub_128x128):
    routes, cap, sizes = recdoub_128x128
    sol = benchmark(solve_completion, routes, cap, sizes)
    assert sol.status == STATUS_OK
    # 128 flows of fraction 1/2 cross every link of a column ring: 1/32 each
    np.testing.assert_allclose(sol.rate0, 1 / 32, rtol=1e-12)
    np.testing.assert_allclose(sol.finish, 32.0, rtol=1e-12)


def test_bench_static_rates_permutation_64x64(benchmark, permutation_64x64):
    routes, cap, _ = permutation_64x64
    rates = benchmark(max_min_rates, routes, cap)
    assert np.all(rates > 0)
