"""In-network aggregation (``ina``): hand-worked times on small trees, the
stream problem against the pure-Python oracle, and every door refusing what
it cannot do by name."""

from __future__ import annotations

import numpy as np
import pytest

import flowemu
from flowemu.algorithms import get_algorithm
from flowemu.core.errors import ConfigError
from flowemu.core.network import Network
from flowemu.engine.aggregation import stream_problem
from flowemu.engine.context import make_context
from flowemu.engine.profiles import direct_times, profile
from flowemu.kernels.maxmin import solve_completion
from flowemu.topology import checks as topology_checks
from flowemu.topology.aggregation import ALLREDUCE, BROADCAST, REDUCE, stream_tree
from tests.helpers.maxmin_oracle import check_maxmin, completion, csr_to_lists, stream_links

B = 100e9 / 8            # 100 Gb/s in bytes/s
LINK, HOP, ALPHA = 100e-9, 50e-9, 1e-6
NET = {"bandwidth": "100Gb/s", "link_latency": "100ns", "hop_latency": "50ns", "alpha": "1us",
       "gamma": "0ps", "delta": "0ps"}
SIZES = [2**20, 2**30]


def times(topology, algorithm, sizes=SIZES):
    df = flowemu.simulate(topology, algorithm, sizes, **NET)
    return df.time_s.to_numpy()


def lat(hops):
    return ALPHA + hops * (LINK + HOP)


# ------------------------------------------------------------------ closed forms

def test_nonblocking_fat_tree_takes_n_over_b_against_rings_2p_minus_1_over_p():
    # fattree:k=4: 16 hosts, host - edge - agg - core: 3 links up, 3 down
    n = np.asarray(SIZES, float)
    assert np.allclose(times("fattree:k=4", "ina"), lat(6) + n / B, rtol=1e-12)
    p = 16
    ring = times("fattree:k=4", "ring:ports=1")
    ina = times("fattree:k=4", "ina")
    # bandwidth terms: the slope over n
    assert (ina[1] - ina[0]) / (n[1] - n[0]) == pytest.approx(1 / B, rel=1e-9)
    assert (ring[1] - ring[0]) / (n[1] - n[0]) == pytest.approx(2 * (p - 1) / p / B, rel=1e-9)


def test_leaf_spine_and_two_level_fat_tree_and_a_tree():
    n = np.asarray(SIZES, float)
    for spec, hops in (("leafspine:4x4x2", 4), ("fattree:k=4,levels=2", 4), ("tree:4x4", 4),
                       ("tree:8", 2)):
        assert np.allclose(times(spec, "ina"), lat(hops) + n / B, rtol=1e-12), spec


def test_the_tightest_edge_of_the_tree_sets_the_rate():
    n = np.asarray(SIZES, float)
    # edge-agg links at half speed, then agg-core links at a quarter (taper 1:4)
    assert np.allclose(times("fattree:k=4,taper=2", "ina"), lat(6) + 2 * n / B, rtol=1e-12)
    assert np.allclose(times("fattree:k=4,taper=1:4", "ina"), lat(6) + 4 * n / B, rtol=1e-12)
    assert np.allclose(times("leafspine:4x4x1,uplink=0.25", "ina"), lat(4) + 4 * n / B,
                       rtol=1e-12)


def test_trees_split_the_vector_and_share_links_max_min():
    n = np.asarray(SIZES, float)
    # taper=2: each edge uplink carries B/2. Two trees use aggregation switches
    # 0 and 1, disjoint uplinks: each stream n/2 at B/2 (the host links carry
    # both, B/2 each): n/B, against 2n/B for one tree
    assert np.allclose(times("fattree:k=4,taper=2", "ina:trees=2"), lat(6) + n / B,
                       rtol=1e-12)
    # three trees: trees 0 and 2 share the uplinks to aggregation switch 0
    # (B/2 for two: B/4 each), tree 1 has aggregation switch 1's alone and
    # takes what the host links leave (B − 2·B/4 = B/2). Each carries n/3:
    # trees 0 and 2 finish at (n/3)/(B/4) = 4n/(3B), tree 1 earlier
    assert np.allclose(times("fattree:k=4,taper=2", "ina:trees=3"), lat(6) + 4 * n / (3 * B),
                       rtol=1e-12)


def test_a_switch_reduction_rate_caps_every_stream_it_combines():
    n = np.asarray(SIZES, float)
    r = B / 4   # 25 Gb/s
    assert np.allclose(times("fattree:k=4", "ina:rate=25Gb/s"), lat(6) + n / r, rtol=1e-12)
    # two trees meet in every edge switch: they share its rate (n/2 at r/2 each)
    assert np.allclose(times("fattree:k=4", "ina:rate=25Gb/s,trees=2"), lat(6) + n / r,
                       rtol=1e-12)
    # a rate above the links' changes nothing
    assert np.array_equal(times("fattree:k=4", "ina:rate=1Tb/s"), times("fattree:k=4", "ina"))


def test_reduce_climbs_every_path_and_comes_down_the_roots():
    n = np.asarray(SIZES, float)
    assert np.allclose(times("fattree:k=4", "ina:collective=reduce,root=5"), lat(6) + n / B,
                       rtol=1e-12)
    # tree:4x4+2x2: root 17 (in a 2-host switch): up 2 links from every host, down 2
    assert np.allclose(times("tree:4x4", "ina:collective=reduce,root=15"), lat(4) + n / B,
                       rtol=1e-12)


def test_tier_cut_off_on_a_small_tree():
    # tree:4x4, tiers=1: four groups of four reduce into ranks 0, 4, 8, 12
    # (up 1 link, down 1: n/B), the four run a ring allreduce (6 steps of n/4,
    # 4 hops each, disjoint links: n/(4B)), then multicast (2 hops, n/B)
    n = np.asarray(SIZES, float)
    want = 2 * (lat(2) + n / B) + 6 * (lat(4) + n / (4 * B))
    df = flowemu.simulate("tree:4x4", "ina:tiers=1", SIZES, **NET)
    assert np.allclose(df.time_s, want, rtol=1e-12)
    assert df.steps.tolist() == [8, 8]
    assert df.variant[0] == "allreduce, tiers=1: 4 groups and a ring"
    # tiers=2 is the top: one stream
    assert np.array_equal(times("tree:4x4", "ina:tiers=2"), times("tree:4x4", "ina"))
    # a reduce: the ring's reduce-scatter (3 steps) and a gather at the root's group
    want = lat(2) + n / B + 3 * (lat(4) + n / (4 * B)) + lat(4) + 3 * n / (4 * B)
    assert np.allclose(times("tree:4x4", "ina:tiers=1,collective=reduce,root=4"), want,
                       rtol=1e-12)


def test_multi_site_tree_aggregates_per_site_and_rings_across():
    # two sites of 2x4: each site one group (its root is the top); the two
    # representatives exchange over the cross-site link
    df = flowemu.simulate("tree:dc(2x4)+dc(2x4)", "ina", SIZES, **NET)
    assert df.variant[0] == "allreduce, tiers=2: 2 groups and a ring"
    # one stream over both sites has no switch to meet in
    topo = topology_checks.topology("tree:dc(2x4)+dc(2x4)")
    with pytest.raises(ConfigError, match="no common ancestor"):
        stream_tree(topo, np.arange(16), 0, ALLREDUCE, 0, np.zeros(topo.num_links))


def test_profile_is_exact_against_direct_solves_with_background():
    from flowemu.whatif.background import parse_background

    topo = topology_checks.topology("fattree:k=4,taper=2")
    sched = get_algorithm("ina").build(16, topo, False, trees=3, tiers=2)
    net = Network(bandwidth="100Gb/s", link_latency="100ns", hop_latency="50ns", alpha="1us")
    bg = parse_background("perm:0.5:3", topo)
    sizes = [1e3, 1e6, 1e9]
    for kw in ({}, {"background": bg}):
        prof = profile(sched, topo, net, threads=1, **kw)
        assert np.allclose(prof.times(sizes), direct_times(sched, topo, net, sizes, **kw),
                           rtol=1e-9)


# ------------------------------------------------------------------ the oracle

@pytest.mark.parametrize("spec, top, kind, rate", [
    ("fattree:k=4", 32, "allreduce", np.inf),          # core 0: tree 0
    ("fattree:k=4,taper=2", 24, "reduce", 3e9),        # agg 0 of pod 0: ranks 0-3
    ("leafspine:4x2x2", 12, "broadcast", np.inf),
])
def test_stream_links_and_solve_match_the_oracle(spec, top, kind, rate):
    topo = topology_checks.topology(spec)
    net = Network(bandwidth="100Gb/s")
    ctx = make_context(topo, net, p=topo.num_endpoints)
    members = np.arange(topo.num_endpoints) if top != 24 else np.arange(4)
    code = {"allreduce": ALLREDUCE, "reduce": REDUCE, "broadcast": BROADCAST}[kind]
    tree = stream_tree(topo, members, 1, code, 0, np.zeros(topo.num_links))
    assert tree.top == top
    assert tree.links.tolist() == stream_links(topo.link_src, topo.link_dst, members, top,
                                               kind, root=1)
    # several trees and groups in one step, solved by numba and by the oracle
    from flowemu.algorithms.base import Traffic
    from flowemu.algorithms.streams import stream_traffic_parts

    groups = [members, members[: len(members) // 2], members]
    parts = stream_traffic_parts(groups, [1, 1, 1], [code] * 3, [0, 1, 2], [1.0, 0.5, 0.25],
                                 rate)
    traffic = Traffic(*parts[:3], aggregation=parts[3])
    sp = stream_problem(ctx, traffic)
    sol = solve_completion(sp.routes, sp.capacity, traffic.share)
    flows = csr_to_lists(sp.routes.flow_ptr, sp.routes.link, sp.routes.frac)
    rate0, finish, status = completion(flows, list(sp.capacity), list(traffic.share))
    assert status == 0
    assert np.allclose(sol.rate0, rate0, rtol=1e-12)
    assert np.allclose(sol.finish, finish, rtol=1e-12)
    check_maxmin(sp.routes.flow_ptr, sp.routes.link, sp.routes.frac, sp.capacity, sol.rate0)


# ------------------------------------------------------------------ every door

def test_registry_cli_and_refusals(tmp_path):
    spec = get_algorithm("ina")
    assert spec.families == ("tree", "leafspine", "fattree")
    assert {p.name for p in spec.params} == {"collective", "root", "trees", "tiers", "rate"}
    with pytest.raises(ConfigError, match="ina does not run on torus:4x4"):
        flowemu.simulate("torus:4x4", "ina", "1MiB")
    with pytest.raises(ConfigError, match="tiers=4 is not allowed; fattree:k=4 has 3"):
        flowemu.simulate("fattree:k=4", "ina:tiers=4", "1MiB")
    with pytest.raises(ConfigError, match="option rate='100' is not allowed"):
        flowemu.simulate("fattree:k=4", "ina:rate=100", "1MiB")
    with pytest.raises(ConfigError, match="option trees='0' is not allowed"):
        flowemu.simulate("fattree:k=4", "ina:trees=0", "1MiB")
    with pytest.raises(ConfigError, match="root=16 is not allowed"):
        flowemu.simulate("fattree:k=4", "ina:collective=reduce,root=16", "1MiB")
    with pytest.raises(ConfigError, match="cannot express a switch's reduction"):
        flowemu.verify("ina", 8, topology="fattree:k=4")


def test_failed_link_and_slow_port_on_a_stream_are_refused_by_name():
    with pytest.raises(ConfigError, match="crosses the failed link"):
        flowemu.simulate("fattree:k=4", "ina", "1MiB", fail="link:32", fail_policy="reroute")
    with pytest.raises(ConfigError, match="slow network ports"):
        flowemu.simulate("fattree:k=4", "ina", "1MiB", slow="3=0.5:network")
    # degraded core links: the stream takes their share
    n = 2.0**30
    got = flowemu.simulate("fattree:k=4", "ina", [n], degrade="core:*=0.5", **NET).time_s
    assert got.item() == pytest.approx(lat(6) + 2 * n / B, rel=1e-12)


def test_sweep_runs_ina_beside_ring(tmp_path):
    cfg = tmp_path / "ina.toml"
    cfg.write_text('topology = ["fattree:k=4"]\nalgorithm = ["ina:trees=2", "ring"]\n'
                   'sizes = ["1MiB"]\nbandwidth = ["100Gb/s"]\n')
    summary = flowemu.sweep(cfg, out=tmp_path / "out", jobs=1)
    assert summary.failed == 0
    df = flowemu.load(summary)
    assert sorted(df.algorithm) == ["ina", "ring"]
    assert df.set_index("algorithm").variant["ina"] == "allreduce, 2 trees"


def test_command_line_lists_and_runs_it(capsys):
    from tests.helpers.cli import one_error_line, run

    code, out, _ = run(capsys, ["list"])
    assert code == 0
    block = out[out.index("\n  ina "):]
    assert "runs on: tree, leafspine, fattree" in block.splitlines()[2]
    code, out, _ = run(capsys, ["run", "-t", "fattree:k=4", "-a", "ina:trees=2", "-s", "1MiB"])
    assert code == 0 and "allreduce, 2 trees" in out
    code, _, err = run(capsys, ["verify", "-a", "ina", "-t", "fattree:k=4"])
    assert code != 0 and "cannot express a switch's reduction" in one_error_line(err)
    # said at once without a topology too (it asked for one, then refused)
    code, _, err = run(capsys, ["verify", "-a", "ina", "--ranks", "8"])
    assert code != 0 and "cannot express a switch's reduction" in one_error_line(err)


def test_root_applies_to_reduce_only():
    with pytest.raises(ConfigError, match="option root=3 applies to collective=reduce"):
        flowemu.simulate("fattree:k=4", "ina:root=3", "1MiB")
    assert flowemu.simulate("fattree:k=4", "ina:collective=reduce,root=3", "1MiB").time_s[0] > 0
