"""Routing throughput on the workloads the design targets.

Run with ``pytest tests/benchmarks/test_bench_routing.py`` (add
``--benchmark-disable`` for a quick smoke run). The JIT is warmed up on a tiny
topology first so compile time never lands inside a measurement.
"""

from __future__ import annotations

import numpy as np
import pytest

from flowemu.topology import Torus


@pytest.fixture(scope="module", autouse=True)
def warm_jit():
    small = Torus((4, 4))
    for mode in ("split", "dor", "hash"):
        small.route(np.array([0, 1]), np.array([10, 1]), ecmp=mode)


def test_bench_split_tie_128x128(benchmark):
    """Every node of torus:128x128 sends to its peer 64 away in dim 0 (all ties)."""
    topo = Torus((128, 128))
    coords = topo.coords(np.arange(topo.num_nodes))
    coords[:, 0] = (coords[:, 0] + 64) % 128
    src = np.arange(topo.num_nodes)
    dst = topo.node_of(coords)
    routes = benchmark(topo.route, src, dst)
    assert routes.num_flows == 16384
    assert routes.num_entries == 16384 * 128
    assert np.all(routes.hops == 64)


def test_bench_split_permutation_64x64(benchmark):
    """A random permutation on torus:64x64, split over all minimal paths."""
    topo = Torus((64, 64))
    src = np.arange(topo.num_nodes)
    dst = np.random.default_rng(0).permutation(topo.num_nodes)
    routes = benchmark(topo.route, src, dst)
    assert routes.num_flows == 4096
    assert routes.num_entries > 1_000_000


@pytest.mark.parametrize("mode", ["dor", "hash"])
def test_bench_single_path_permutation_64x64(benchmark, mode):
    """The same permutation with one path per flow."""
    topo = Torus((64, 64))
    src = np.arange(topo.num_nodes)
    dst = np.random.default_rng(0).permutation(topo.num_nodes)
    routes = benchmark(topo.route, src, dst, ecmp=mode, seed=1)
    np.testing.assert_array_equal(np.diff(routes.flow_ptr), routes.hops)
