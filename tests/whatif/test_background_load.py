"""What LOAD means for a background on a torus (docs/whatif.md, "Why perm:0.5
slows a torus collective tenfold"): the load a permutation puts on the
average link, from flowemu's own routes of the background's flows, against
the formula L·h̄·C with h̄ = D·k/4·N/(N−1)."""

import numpy as np
import pytest

import flowemu
from flowemu.topology import parse_topology
from flowemu.whatif.background import parse_background


def link_loads(topology, bg):
    """Offered bytes/s and background flows (ECMP fractions) on every link."""
    routes = topology.route(bg.src, bg.dst)
    flow = np.repeat(np.arange(len(bg.src)), np.diff(routes.flow_ptr))
    offered = np.bincount(routes.link, weights=routes.frac * bg.demand[flow],
                          minlength=topology.num_links)
    flows = np.bincount(routes.link, weights=routes.frac, minlength=topology.num_links)
    return offered, flows, routes.hops


@pytest.mark.parametrize("k, load", [(16, 0.5), (32, 0.5), (32, 0.1)])
def test_average_link_is_offered_load_times_average_hops(k, load):
    topology, network = parse_topology(f"torus:{k}x{k}"), flowemu.Network()
    c, dims, n = network.bandwidth, 2, k * k
    bg = parse_background(f"perm:{load}:3", topology, network)
    # LOAD is a fraction of the injection bandwidth: 2D outgoing links of capacity C
    np.testing.assert_allclose(bg.demand, load * 2 * dims * c, rtol=1e-12)
    offered, flows, hops = link_loads(topology, bg)
    assert topology.num_links == 2 * dims * n
    # exactly: L·C·(the flows' mean hops) on the average link, h̄/(2D) flows
    np.testing.assert_allclose(offered.mean(), load * c * hops.mean(), rtol=1e-12)
    np.testing.assert_allclose(flows.mean(), hops.mean() / (2 * dims), rtol=1e-12)
    # the flows' mean distance is the torus's average distance (a random sample of it)
    h_bar = dims * k / 4 * n / (n - 1)
    assert abs(hops.mean() - h_bar) <= 0.03 * h_bar
    assert offered.mean() / c == pytest.approx(load * h_bar, rel=0.03)


def test_documented_torus_16x16_numbers():
    topology, network = parse_topology("torus:16x16"), flowemu.Network()
    bg = parse_background("perm:0.5", topology, network)
    offered, flows, _ = link_loads(topology, bg)
    assert offered.mean() / network.bandwidth == pytest.approx(4.0, rel=0.02)
    assert flows.mean() == pytest.approx(2.0, rel=0.02)
    size = [64 * 2**20]
    healthy = flowemu.simulate(topology, "swing:variant=bandwidth", size)["time_s"][0]
    slowed = {spec: flowemu.simulate(topology, "swing:variant=bandwidth", size,
                                     background=spec)["time_s"][0] / healthy
              for spec in ("perm:0.5", "perm:0.1")}
    # a collective flow gets C/(1 + m) on a link with m background flows: the
    # slowdown lies between the average link's and the busiest link's
    assert 1 + flows.mean() <= slowed["perm:0.5"] <= 1 + flows.max()
    assert slowed["perm:0.5"] == pytest.approx(4.91, abs=0.01)
    # saturated links: a lighter LOAD slows it as much
    assert slowed["perm:0.1"] == pytest.approx(slowed["perm:0.5"], rel=1e-9)


def test_routing_a_background_is_checked_against_the_runs_own_limit(monkeypatch):
    """The background's routes were checked against FLOWEMU_MAX_MEMORY (or
    80 % of memory) whatever limit the run had: max_memory= (--max-memory)
    and a sweep worker's share were ignored there, and the refusal named
    the variable."""
    monkeypatch.setenv("FLOWEMU_MAX_MEMORY", "1KiB")
    df = flowemu.simulate("torus:8x8", "swing", "1MiB", background="perm:0.5",
                          max_memory="8GiB")
    assert df["background_Bps"].iloc[0] > 0
    for call in (lambda: flowemu.flows("torus:8x8", "swing", size="1MiB", steps="0",
                                       background="perm:0.5", max_memory="8GiB"),
                 lambda: flowemu.link_loads("torus:8x8", "swing", steps="0",
                                            background="perm:0.5", max_memory="8GiB"),
                 lambda: flowemu.simulate("torus:8x8", "swing", "1MiB", background="perm:0.5",
                                          sync="dataflow", max_memory="8GiB"),
                 lambda: flowemu.simulate_jobs("torus:8x8", ["algorithm=ring size=1MiB ranks=8"],
                                               background="perm:0.5", max_memory="8GiB")):
        assert len(call()) > 0
