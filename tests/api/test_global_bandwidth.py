"""``flowemu.global_bandwidth``: the uniform all-to-all's link loads and rate
per endpoint, against loads worked by hand, and the exact reductions
(translations, switches) against routing every pair."""

from __future__ import annotations

import numpy as np
import pytest

import flowemu
from flowemu.api.globalbw import alltoall_loads
from flowemu.core.errors import ConfigError
from flowemu.topology import parse_topology


def test_torus_4x4_every_link_carries_k_cubed_over_8():
    # k = 4: along +x a source reaches dx = 1 (one hop) and dx = 2 (two hops, half
    # each way): 1 + 2/2 = 2 = k²/8 link-messages a source a row; k rows of k sources
    # share the row's k +x links: k·2 = 8 messages on every directed link
    loads, how = alltoall_loads("torus:4x4")
    assert how == "translations"
    np.testing.assert_allclose(loads, 8.0, rtol=1e-12)
    row = flowemu.global_bandwidth("torus:4x4").iloc[0]
    # each node sends N − 1 = 15 messages in the time its links take for 8, and
    # injects through 4 links: 15/8/4
    assert row["global_bw"] == pytest.approx(15 / 32, rel=1e-12)
    assert row["injection_Bps"] == pytest.approx(4 * row["bandwidth_Bps"])
    assert row["alltoall_Bps"] == pytest.approx(15 / 8 * row["bandwidth_Bps"], rel=1e-12)


def test_leafspine_uplinks_bound_the_alltoall():
    # 4 leaves of 3 hosts, 2 spines: a leaf's 3 hosts send 3·9 = 27 messages off the
    # leaf over 2 uplinks (13.5 each); a host link carries its N − 1 = 11
    topo = parse_topology("leafspine:4x3x2")
    loads, how = alltoall_loads(topo)
    assert how == "switches"
    n = topo.num_endpoints
    host = (topo.link_src < n) | (topo.link_dst < n)
    np.testing.assert_allclose(loads[host], 11.0)
    np.testing.assert_allclose(loads[~host], 13.5, rtol=1e-12)
    row = flowemu.global_bandwidth(topo).iloc[0]
    assert row["global_bw"] == pytest.approx(11 / 13.5, rel=1e-12)
    assert row["bottleneck"].startswith("leaf:")


def test_hyperx_behind_a_nic():
    # hyperx:4x4: a row link u -> v carries the direct message, half of u's 3 messages
    # to v's column (row first) and half of the 3 messages from u's column to v
    # (column first): 1 + 1.5 + 1.5 = 4 = k
    loads, _ = alltoall_loads("hyperx:4x4")
    np.testing.assert_allclose(loads, 4.0, rtol=1e-12)
    bare = flowemu.global_bandwidth("hyperx:4x4").iloc[0]
    # 15 messages in the time of 4, over the node's 6 links
    assert bare["global_bw"] == pytest.approx(15 / 4 / 6, rel=1e-12)
    # behind a NIC of the link rate, the NIC carries the 15: it is the bottleneck
    nic = flowemu.global_bandwidth("hyperx:4x4", nic="400Gb/s").iloc[0]
    assert nic["global_bw"] == pytest.approx(1.0, rel=1e-12)
    assert nic["bottleneck"] == "nic"
    assert nic["injection_Bps"] == pytest.approx(50e9)
    half = flowemu.global_bandwidth("hyperx:4x4", nic="400Gb/s", injection="800Gb/s")
    assert half["global_bw"].iloc[0] == pytest.approx(0.5, rel=1e-12)


@pytest.mark.parametrize("spec, ecmp, method", [
    ("torus:6x4", "split", "translations"),
    ("torus:5x3x4", "split", "translations"),
    ("hyperx:4x3", "split", "translations"),
    ("hyperx:3x3x2", "split", "translations"),
    ("hx2mesh:3x2", "split", "translations"),
    ("hammingmesh:2x3,2x3", "split", "translations"),
    ("hx4mesh:2x2", "split", "translations"),
    ("hammingmesh:1x2,3x2", "split", "pairs"),   # parallel ports: no orbit reading
    ("leafspine:5x3x2,uplinks=2", "split", "switches"),
    ("fattree:k=4", "split", "switches"),
    ("fattree:k=6,taper=2", "split", "switches"),
    ("dragonfly:a=4,p=3,h=2,g=5", "split", "switches"),
    ("dragonfly:a=4,p=2,h=2", "valiant", "switches"),
    ("tree:4x3+2x5", "split", "switches"),
    ("mesh:3x4", "split", "pairs"),
    ("torus:4x4", "hash", "pairs"),
])
def test_reductions_equal_every_pair_routed(spec, ecmp, method):
    fast, how = alltoall_loads(spec, ecmp)
    slow, pairs = alltoall_loads(spec, ecmp, method="pairs")
    assert (how, pairs) == (method, "pairs")
    np.testing.assert_allclose(fast, slow, rtol=1e-12, atol=1e-9)


def test_a_mesh_line_closed_form():
    """mesh:4 is the line 0-1-2-3 (its wrap-around links have capacity 0):
    the middle link 1→2 carries the 2·2 flows from {0, 1} to {2, 3}, so the
    all-to-all takes 4b/B while each endpoint sends 3b: 3B/4 per endpoint,
    against an inner node's two links, 2B: 0.375 (no NaN from the missing
    links)."""
    df = flowemu.global_bandwidth("mesh:4")
    b = 5e10
    assert df["alltoall_Bps"].iloc[0] == pytest.approx(0.75 * b, rel=1e-12)
    assert df["injection_Bps"].iloc[0] == pytest.approx(2 * b, rel=1e-12)
    assert df["global_bw"].iloc[0] == pytest.approx(0.375, rel=1e-12)


def test_refusals():
    with pytest.raises(ConfigError, match="adaptive"):
        flowemu.global_bandwidth("torus:4x4", ecmp="adaptive")
    with pytest.raises(ConfigError, match="nic"):
        flowemu.global_bandwidth("torus:4x4", nic=5e10)
    with pytest.raises(ConfigError, match="method"):
        alltoall_loads("torus:4x4", method="fast")
    with pytest.raises(ConfigError, match="unknown keyword"):
        flowemu.global_bandwidth("torus:4x4", bandwith="400Gb/s")


@pytest.mark.parametrize("k", [3, 4, 6])
def test_hx1mesh_row_ports_bound_the_alltoall(k):
    # 1x1 boards: a node's two row ports (2 links) carry its k − 1 messages to its
    # row, half of its (k − 1)² to other rows and columns (row first) and half of
    # the (k − 1)² it forwards from its column into its row: k(k − 1) over 2
    # links; it sends k² − 1, injects through 4 links: (k + 1)/(2k)
    row = flowemu.global_bandwidth(f"hammingmesh:1x1,{k}x{k}").iloc[0]
    assert row["global_bw"] == pytest.approx((k + 1) / (2 * k), rel=1e-12)


def test_tapered_leafspine_closed_form():
    # L leaves of H hosts, U uplinks each: a leaf's uplinks carry H(N − H) messages
    # over U links, a host's link N − 1: U(N − 1)/(H(N − H)) when below 1
    n = 7 * 6
    row = flowemu.global_bandwidth("leafspine:7x6x2").iloc[0]
    assert row["global_bw"] == pytest.approx(2 * (n - 1) / (6 * (n - 6)), rel=1e-12)
