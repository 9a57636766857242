"""Routing and end-to-end benchmarks of the dragonfly and graph families.

* ``dragonfly:a=16,p=8,h=8`` (129 groups, 16,512 hosts): a random permutation
  routed ``split``, ``hash`` and ``valiant``, and a full bandwidth-optimal
  recursive-doubling profile (minimal split);
* ``graph:`` a 64x64 torus written as a file (4,096 nodes, 16,384 links): a
  random permutation routed on shortest paths, and the full recursive
  doubling profile.

Each records ``extra_info["yardstick_ms"]``: a 1 GiB numpy copy timed in the
same run, to read the figures against this machine. The JIT is warmed up on
tiny instances first.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from flowemu.algorithms import get_algorithm
from flowemu.core.network import Network
from flowemu.engine.profiles import profile
from flowemu.topology import Graph, parse_topology
from tests.benchmarks.yardstick import copy_1gib_ms

DRAGONFLY = "dragonfly:a=16,p=8,h=8"




@pytest.fixture(scope="module")
def yardstick():
    return copy_1gib_ms()


@pytest.fixture(scope="module")
def torus_file(tmp_path_factory):
    topo = parse_topology("torus:64x64")
    path = tmp_path_factory.mktemp("graph") / "torus64.json"
    nodes = [{"id": v, "endpoint": True} for v in range(topo.num_nodes)]
    links = [{"src": int(s), "dst": int(d), "bidirectional": False}
             for s, d in zip(topo.link_src, topo.link_dst, strict=True)]
    path.write_text(json.dumps({"nodes": nodes, "links": links}))
    return str(path)


@pytest.fixture(scope="module", autouse=True)
def warm_jit(torus_file):
    small = parse_topology("dragonfly:a=2,p=1,h=1")
    for mode in ("split", "hash", "valiant"):
        small.route(np.array([0, 1]), np.array([5, 2]), ecmp=mode)
    g = Graph(torus_file)
    for mode in ("split", "hash"):
        g.route(np.array([0, 1]), np.array([5, 2]), ecmp=mode)
    _recdoub(parse_topology("dragonfly:a=2,p=2,h=1"))


def _recdoub(topo):
    spec = get_algorithm("recdoub")
    p = 1 << int(np.log2(topo.num_endpoints))
    sched = spec.build(p, topo, False, **spec.parse_options({"variant": "bandwidth"}))
    return profile(sched, topo, Network())


@pytest.mark.parametrize("mode", ["split", "hash", "valiant"])
def test_bench_dragonfly_permutation(benchmark, mode, yardstick):
    topo = parse_topology(DRAGONFLY)
    n = topo.num_endpoints
    src = np.arange(n)
    dst = np.random.default_rng(0).permutation(n)
    routes = benchmark(topo.route, src, dst, ecmp=mode, seed=1)
    benchmark.extra_info["yardstick_ms"] = yardstick
    assert n == 16512 and routes.num_flows == n


def test_bench_dragonfly_recdoub_profile(benchmark, yardstick):
    topo = parse_topology(DRAGONFLY)
    prof = benchmark.pedantic(_recdoub, args=(topo,), rounds=2, iterations=1)
    benchmark.extra_info["yardstick_ms"] = yardstick
    assert prof.times([2.0**20])[0] > 0


@pytest.mark.parametrize("mode", ["split", "hash"])
def test_bench_graph_permutation_torus64(benchmark, mode, torus_file, yardstick):
    topo = Graph(torus_file)
    src = np.arange(topo.num_nodes)
    dst = np.random.default_rng(0).permutation(topo.num_nodes)
    routes = benchmark(topo.route, src, dst, ecmp=mode, seed=1)
    benchmark.extra_info["yardstick_ms"] = yardstick
    assert routes.num_flows == 4096


def test_bench_graph_recdoub_profile_torus64(benchmark, torus_file, yardstick):
    topo = Graph(torus_file)
    prof = benchmark.pedantic(_recdoub, args=(topo,), rounds=2, iterations=1)
    benchmark.extra_info["yardstick_ms"] = yardstick
    assert prof.times([2.0**20])[0] > 0
