"""Incast where flows converge (a tree's ``incast=switch``, issue 27 item 2):
every switch egress link charges GenModel's incast with its level's (ε, w_t)
and ``w`` the flows crossing it (GenModel §3.2, eq. 7: ``max(w − w_t, 0)·B·ε``
extra, i.e. a per-byte cost ``β + max(w − w_t, 0)·ε``, eq. 10)."""

from __future__ import annotations

import numpy as np
import pytest

import flowemu
from flowemu.algorithms.base import Traffic
from flowemu.core.errors import ConfigError
from flowemu.core.network import Network
from flowemu.topology import parse_topology

B = 5e10          # the default 400 Gb/s
E0 = 2e-11        # the root level's eps (20 ps per byte per flow)
FLAT = {"link_latency": "0s", "hop_latency": "0s"}
TREE = "tree:2x4,eps=20ps:0ps,wt=2:inf"   # root + two leaf switches of 4 hosts


def _time(spec, src, dst, nbytes, **kw):
    traffic = [Traffic(np.array(src), np.array(dst), np.full(len(src), float(nbytes)))]
    return float(flowemu.time_traffic(spec, traffic, **FLAT, **kw)["time_s"].iloc[0])


def test_flows_converging_on_a_root_link_pay_there_not_at_their_receivers():
    """Hosts 0, 1 send to host 4 and hosts 2, 3 to host 5 (b bytes each). The
    root's link down to the second leaf switch carries all four: with
    incast at switches it has capacity 1 / (1/B + (4 − 2)·ε0) for the four,
    so all end at 4b(1/B + 2ε0). At receivers each has fan-in 2 <= w_t = 2:
    no incast, and the shared link gives 4b/B."""
    b = 1e6
    assert _time(TREE + ",incast=switch", [0, 1, 2, 3], [4, 4, 5, 5], b) == pytest.approx(
        4 * b * (1 / B + 2 * E0), rel=1e-12)
    assert _time(TREE, [0, 1, 2, 3], [4, 4, 5, 5], b) == pytest.approx(4 * b / B, rel=1e-12)


def test_receiver_fan_in_is_charged_on_the_last_switch_link():
    """Four flows into host 4 from the other leaf: with w_t = 2 at both
    levels and ε1 on the leaf level, the leaf's link to host 4 (and the
    root's link down, ε0) carry w = 4: the tighter of 1/(1/B + 2ε0) and
    1/(1/B + 2ε1) sets the time, 4b(1/B + 2·max(ε0, ε1)); at receivers the
    flows converge at the root level: 4b(1/B + 2ε0)."""
    b, e1 = 1e6, 5e-11
    spec = "tree:2x4,eps=20ps:50ps,wt=2:2"
    got = _time(spec + ",incast=switch", [0, 1, 2, 3], [4, 4, 4, 4], b)
    assert got == pytest.approx(4 * b * (1 / B + 2 * e1), rel=1e-12)
    assert _time(spec, [0, 1, 2, 3], [4, 4, 4, 4], b) == pytest.approx(
        4 * b * (1 / B + 2 * E0), rel=1e-12)


def test_every_door_and_mode_agrees():
    """The profile (barrier), dataflow, a background and a failed link all
    take the switch incast; the spec round-trips; the preset takes it."""
    spec = TREE + ",incast=switch"
    topo = parse_topology(spec)
    assert topo.spec == "tree:2x4,eps=20ps:0s,wt=2:inf,incast=switch"
    assert parse_topology(topo.spec).spec == topo.spec
    assert parse_topology("tree:CDC384,incast=switch").spec == "tree:CDC384,incast=switch"
    w_t, eps = topo.link_incast(Network())
    up_from_hosts = np.asarray(topo.link_src) < topo.num_endpoints
    assert np.isinf(w_t[up_from_hosts]).all() and (eps[up_from_hosts] == 0).all()
    sizes = [1e3, 1e7]
    barrier = flowemu.simulate(spec, "cps", sizes, **FLAT).time_s.to_numpy()
    dataflow = flowemu.simulate(spec, "cps", sizes, sync="dataflow", **FLAT).time_s.to_numpy()
    np.testing.assert_allclose(dataflow, barrier, rtol=1e-12)
    plain = flowemu.simulate(TREE, "cps", sizes, **FLAT).time_s.to_numpy()
    assert (barrier > plain).all()   # cps across the root: 16 flows on each root link
    loaded = flowemu.simulate(spec, "cps", sizes, background="perm:0.2", **FLAT)
    assert (loaded.time_s.to_numpy() >= barrier).all()
    failed = flowemu.simulate(spec, "cps", sizes, degrade="link:0=0.5", **FLAT)
    assert (failed.time_s.to_numpy() >= barrier).all()


def test_bad_incast_option():
    with pytest.raises(ConfigError, match="incast='nowhere'; expected one of receiver, switch"):
        parse_topology("tree:2x4,incast=nowhere")
    with pytest.raises(ConfigError, match="preset CDC384 takes no options; .* \\(only incast= may follow"):
        parse_topology("tree:CDC384,wt=3")


def test_cdc384_rearrangement_pays_only_with_incast_at_switches():
    """GenTree on CDC384 (GenModel Table 5 network) at 1e8 floats: with incast
    charged on the links where flows converge, rearranging the data before
    the cross-DC step (fewer flows over the 5 Gb/s cross-DC link) is cheaper
    than GenTree* without it, as the paper's Table 7 finds; charged at
    receivers only, it is dearer (docs/genmodel.md)."""
    n = [400_000_000]
    times = {}
    for where in ("", ",incast=switch"):
        for opt in ("auto", "no"):
            df = flowemu.simulate(f"tree:CDC384{where}", f"gentree:rearrange={opt}", n,
                                  network="genmodel-table5")
            times[where, opt] = float(df.time_s.iloc[0])
            assert ("+r" in df.variant.iloc[0]) == (opt == "auto")
    assert times[",incast=switch", "auto"] < times[",incast=switch", "no"]
    assert times["", "auto"] > times["", "no"]


def test_genmodel_refuses_incast_at_switches():
    with pytest.raises(ConfigError, match="model genmodel: tree:SS24,incast=switch: GenModel "
                                          "charges incast at receivers"):
        flowemu.simulate("tree:SS24,incast=switch", "cps", "1MiB", model="genmodel")


def test_aggregation_streams_run_when_incast_is_on():
    """Streams are charged no incast (one stream a link per tree): with the
    network's incast on, or a preset's levels, ina runs and gives the time it
    gives with incast off."""
    on = flowemu.simulate("fattree:k=4", "ina", "8MB", incast_slope="1ps", incast_threshold=2)
    off = flowemu.simulate("fattree:k=4", "ina", "8MB")
    assert on.time_s.iloc[0] == off.time_s.iloc[0]
    assert flowemu.simulate("tree:SS24", "ina", "8MB").time_s.iloc[0] > 0
