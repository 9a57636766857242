"""Incast in the flow engine: the solver's ingress resources, one class
(every family without tiers) and one per tree level (incast per tier).

* completion of a random permutation with random sizes on torus:64x64, one
  hashed path per flow, incast on (w_t = 1: every ingress resource is
  penalised, 4095 events each growing a capacity back);
* co-located PS on all 1,024 hosts of tree:16x64 (1,047,552 flows a step,
  every receiver's fan-in split into its middle (63) and root (960) flows);
* bandwidth-optimal recursive doubling on the 16,384-host tree:32x32x16 with
  the network's incast on (three levels: three classes).

Run with ``pytest tests/benchmarks/test_bench_incast.py`` (``--benchmark-disable``
for a smoke run); report the figures beside the yardstick (a 1 GiB numpy copy)
timed in the same run. Compile time and routing warm-up are outside the
timed part.
"""

from __future__ import annotations

import numpy as np
import pytest

from flowemu.algorithms import get_algorithm
from flowemu.core.network import Network
from flowemu.engine.profiles import profile
from flowemu.kernels.maxmin import STATUS_OK, solve_completion
from flowemu.topology import parse_topology

INCAST = Network.from_si(incast_threshold=1, incast_slope=2e-12)


@pytest.fixture(scope="module", autouse=True)
def warm_jit():
    topo = parse_topology("tree:2x4")
    sched = get_algorithm("cps").build(8, topo, False)
    profile(sched, topo, INCAST, threads=1)
    profile(sched, parse_topology("tree:2x4,eps=1ps:2ps,wt=1:1"), Network(), threads=1)
    torus = parse_topology("torus:4x4")
    src = np.arange(16)
    routes = torus.route(src, (src + 5) % 16, ecmp="hash")
    solve_completion(routes, np.ones(torus.num_links), np.linspace(1, 2, 16),
                     flow_dst=(src + 5) % 16, ingress_capacity=np.full(16, 4.0),
                     incast_threshold=1, incast_slope=0.1)


def test_bench_incast_permutation_64x64(benchmark):
    topo = parse_topology("torus:64x64")
    rng = np.random.default_rng(2026)
    src = np.arange(topo.num_nodes)
    dst = rng.permutation(topo.num_nodes)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    routes = topo.route(src, dst, ecmp="hash")
    sizes = rng.uniform(0.1, 1.0, len(src))
    cap = np.ones(topo.num_links)
    ingress = np.full(topo.num_nodes, 0.5)

    def run():
        return solve_completion(routes, cap, sizes, flow_dst=dst, ingress_capacity=ingress,
                                incast_threshold=1, incast_slope=0.5)

    sol = benchmark.pedantic(run, rounds=2, iterations=1)
    assert sol.status == STATUS_OK
    assert len(np.unique(sol.finish)) > 0.9 * len(src)


def test_bench_incast_cps_tree_1024(benchmark):
    topo = parse_topology("tree:16x64,bw=10x:1x,eps=1.5ps:30.5ps,wt=9:9")
    spec = get_algorithm("cps")

    def run():   # a fresh schedule each round: nothing cached
        return profile(spec.build(topo.num_endpoints, topo, False), topo, Network(), threads=1)

    prof = benchmark.pedantic(run, rounds=2, iterations=1)
    assert prof.num_steps == 2


def test_bench_incast_recdoub_tree_16k(benchmark):
    topo = parse_topology("tree:32x32x16,uplinks=4:2:1")
    spec = get_algorithm("recdoub")
    opts = spec.parse_options({"variant": "bandwidth"})

    def run():
        return profile(spec.build(topo.num_endpoints, topo, False, **opts), topo, INCAST,
                       threads=1)

    prof = benchmark.pedantic(run, rounds=2, iterations=1)
    assert prof.num_steps == 2 * 14
