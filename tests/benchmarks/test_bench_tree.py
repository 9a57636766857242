"""Tree routing and a full profile on a 16,384-host three-level tree.

Run with ``pytest tests/benchmarks/test_bench_tree.py`` (``--benchmark-disable``
for a smoke run). Report the figures beside the yardstick timed in the same
run (a 1 GiB numpy copy), since the machine is shared. Everything is warmed up
outside the timed part (routing is numpy; the solver is a numba kernel).
"""

from __future__ import annotations

import numpy as np
import pytest

from flowemu.algorithms import get_algorithm
from flowemu.core.network import Network
from flowemu.engine.profiles import profile
from flowemu.topology import parse_topology

SPEC = "tree:32x32x16,uplinks=4:2:1"     # 16,384 hosts, tapered 4:1 at the middle


@pytest.fixture(scope="module")
def tree():
    t = parse_topology(SPEC)
    t.route(np.array([0, 1]), np.array([5000, 1]))            # warm-up
    return t


@pytest.mark.parametrize("mode", ["split", "hash"])
def test_bench_route_random_64_per_host(benchmark, tree, mode):
    """2**20 flows (every host to 64 random hosts)."""
    n = tree.num_endpoints
    src = np.repeat(np.arange(n), 64)
    dst = np.random.default_rng(0).integers(0, n, len(src))
    routes = benchmark(tree.route, src, dst, mode, 1 if mode == "hash" else 0)
    assert routes.num_flows == 2**20


@pytest.mark.parametrize("mode", ["split", "hash"])
def test_bench_recdoub_profile(benchmark, tree, mode):
    """Bandwidth-optimal recursive doubling on all 16,384 hosts: every step
    routed and solved (a fresh schedule each round, so nothing is cached)."""
    spec = get_algorithm("recdoub")
    opts = spec.parse_options({"variant": "bandwidth"})
    net = Network()
    profile(spec.build(64, None, False, **opts), parse_topology("tree:4x16"), net, ecmp=mode)

    def run():
        return profile(spec.build(tree.num_endpoints, tree, False, **opts), tree, net,
                       ecmp=mode)

    prof = benchmark.pedantic(run, rounds=3, iterations=1)
    assert len(prof.steps) == 2 * 14
