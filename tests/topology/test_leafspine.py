"""leafspine topology: spec parsing, routes, closed-form times."""

import pickle
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import flowemu
from flowemu.algorithms import get_algorithm, shapes
from flowemu.api.run import expand_algorithm
from flowemu.cli.app import main
from flowemu.core.errors import ConfigError
from flowemu.core.network import Network
from flowemu.engine.profiles import profile
from flowemu.topology import LeafSpine, parse_topology, topology_families
from tests.helpers.cli import assert_bad_topology

B = 50e9          # 400 Gb/s in bytes/s
LAT = 400e-9      # link 100 ns + hop 300 ns


def build(name, p, topo=None, **opts):
    spec = get_algorithm(name)
    return spec.build(p, topo, False, **spec.parse_options(opts))


def kinds(t: LeafSpine, link):
    """0 host->leaf, 1 leaf->spine, 2 spine->leaf, 3 leaf->host, from the
    link's end vertices (independent of the id layout)."""
    n, leaves = t.num_endpoints, t.leaves
    s, d = t.link_src[link], t.link_dst[link]
    is_host = lambda v: v < n
    is_spine = lambda v: v >= n + leaves
    return np.select([is_host(s), is_spine(d), is_spine(s), is_host(d)], [0, 1, 2, 3], -1)


# ------------------------------------------------------------------ structure

@pytest.mark.parametrize("spec,L,H,S,U,up", [
    ("leafspine:4x3x2", 4, 3, 2, 1, 1.0),
    ("leafspine:2x8x3,uplinks=2,uplink=2.5", 2, 8, 3, 2, 2.5),
    (" leafspine: 1 x 2 x 1 , uplink = 0.5 ", 1, 2, 1, 1, 0.5),
])
def test_shape_links_and_capacities(spec, L, H, S, U, up):
    t = parse_topology(spec)
    n = L * H
    assert (t.num_endpoints, t.num_nodes) == (n, n + L + S)
    assert t.num_links == 2 * n + 2 * L * S * U
    # every host has one link to its leaf and one back, of scale 1
    hosts = np.arange(n)
    for a, b in ((t.link_src, t.link_dst), (t.link_dst, t.link_src)):
        m = a < n
        assert sorted(a[m]) == list(hosts)
        np.testing.assert_array_equal(b[m], n + a[m] // H)
    host_link = (t.link_src < n) | (t.link_dst < n)
    np.testing.assert_array_equal(t.link_capacity_scale[host_link], 1.0)
    np.testing.assert_array_equal(t.link_capacity_scale[~host_link], up)
    # uplinks: U parallel links each way between every leaf and every spine
    pairs = pd.Series(list(zip(t.link_src[~host_link], t.link_dst[~host_link]))).value_counts()
    assert len(pairs) == 2 * L * S and (pairs == U).all()
    # ingress: a host receives 1; a leaf H + S·U·up; a spine L·U·up
    ing = t.ingress_capacity_scale()
    np.testing.assert_allclose(ing, [1] * n + [H + S * U * up] * L + [L * U * up] * S)
    d = t.describe()
    assert d["oversubscription"] == pytest.approx(H / (S * U * up))
    assert (d["leaves"], d["hosts_per_leaf"], d["spines"], d["uplinks"]) == (L, H, S, U)
    # the canonical spec parses back to the same fabric, and pickles by value
    assert parse_topology(t.spec).spec == t.spec
    t2 = pickle.loads(pickle.dumps(t))
    assert t2.spec == t.spec
    np.testing.assert_array_equal(t2.link_dst, t.link_dst)


def test_registry_doc_names_form_and_oversubscription():
    doc = topology_families()["leafspine"]
    assert "LxHxS" in doc and "uplinks=" in doc and "oversubscription" in doc


# --------------------------------------------------------------------- routes

def _all_pairs(n):
    src, dst = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    return src.ravel(), dst.ravel()


@pytest.mark.parametrize("spec", ["leafspine:3x4x2", "leafspine:3x2x3,uplinks=2,uplink=2",
                                  "leafspine:1x5x2"])
@pytest.mark.parametrize("ecmp", ["split", "hash"])
def test_routes_valid_paths(spec, ecmp):
    t = parse_topology(spec)
    n, H, P = t.num_endpoints, t.hosts_per_leaf, t.spines * t.uplinks
    src, dst = _all_pairs(n)
    r = t.route(src, dst, ecmp, seed=7)
    assert r.num_flows == len(src)
    assert t.route_entries(src, dst, ecmp) == r.num_entries
    same_leaf = src // H == dst // H
    np.testing.assert_array_equal(r.hops, np.where(src == dst, 0, np.where(same_leaf, 2, 4)))
    counts = np.diff(r.flow_ptr)
    assert counts.max() <= t.max_route_entries(ecmp)
    width = P if ecmp == "split" else 1
    np.testing.assert_array_equal(counts, np.where(src == dst, 0,
                                                   np.where(same_leaf, 2, 2 + 2 * width)))
    for f in range(r.num_flows):
        link, frac = r.flow_links(f)
        if src[f] == dst[f]:
            continue
        k = kinds(t, link)
        assert (k >= 0).all() and len(set(link.tolist())) == len(link)
        # each hop level carries the whole flow
        levels = [0, 3] if same_leaf[f] else [0, 1, 2, 3]
        assert sorted(set(k.tolist())) == levels
        for lev in levels:
            assert frac[k == lev].sum() == pytest.approx(1.0, rel=1e-12)
        assert t.link_src[link[k == 0]][0] == src[f]
        assert t.link_dst[link[k == 3]][0] == dst[f]
        if not same_leaf[f]:
            up, down = link[k == 1], link[k == 2]
            assert (t.link_src[up] == n + src[f] // H).all()
            assert (t.link_dst[down] == n + dst[f] // H).all()
            # the mass entering each spine leaves it again
            spines_up = np.bincount(t.link_dst[up], weights=frac[k == 1], minlength=t.num_nodes)
            spines_dn = np.bincount(t.link_src[down], weights=frac[k == 2],
                                    minlength=t.num_nodes)
            np.testing.assert_allclose(spines_up, spines_dn)
            expect = 1.0 / P if ecmp == "split" else 1.0
            np.testing.assert_allclose(frac[(k == 1) | (k == 2)], expect)


def test_hash_one_spine_per_flow_deterministic_and_seeded():
    t = parse_topology("leafspine:4x8x4,uplinks=2")
    src, dst = _all_pairs(t.num_endpoints)
    cross = src // 8 != dst // 8
    src, dst = src[cross], dst[cross]
    r1 = t.route(src, dst, "hash", seed=1)
    r1b = t.route(src, dst, "hash", seed=1)
    r2 = t.route(src, dst, "hash", seed=2)
    np.testing.assert_array_equal(r1.link, r1b.link)
    up = r1.link.reshape(-1, 4)[:, 1]
    down = r1.link.reshape(-1, 4)[:, 2]
    # one spine per flow: the uplink's spine is where the downlink starts
    np.testing.assert_array_equal(t.link_dst[up], t.link_src[down])
    spine = t.link_dst[up]
    # hashing spreads the 768 cross-leaf flows over all 4 spines and 8 paths
    assert len(np.unique(spine)) == 4 and len(np.unique(up)) == 4 * 8
    # another seed picks another path for some flows
    assert (r2.link != r1.link).any()


def test_dor_is_refused_with_modes():
    t = parse_topology("leafspine:2x2x2")
    with pytest.raises(ConfigError, match=r"ecmp: 'dor'.*allowed: split, hash"):
        t.route(np.array([0]), np.array([3]), "dor")
    with pytest.raises(ConfigError, match="ecmp: 'dor'"):
        flowemu.simulate("leafspine:2x2x2", "ring", "1KiB", ecmp="dor")


# --------------------------------------------------------------- closed forms

@pytest.mark.parametrize("spec", ["leafspine:4x4x4", "leafspine:2x4x1,uplinks=2,uplink=2",
                                  "leafspine:3x4x4", "leafspine:1x6x1"])
@pytest.mark.parametrize("ports", [1, 2])
def test_ring_allreduce_non_blocking_closed_form(spec, ports):
    t = parse_topology(spec)
    # non-blocking (one leaf: no traffic reaches a spine)
    assert t.leaves == 1 or t.spines * t.uplinks * t.uplink >= t.hosts_per_leaf
    p, H = t.num_endpoints, t.hosts_per_leaf
    n = np.array([64.0, 2.0**20, 2.0**28])
    # every ring step sends rank i to i±1: 4 hops when some neighbour pair
    # crosses leaves, else 2; the host link carries n/p per step
    ranks = np.arange(p)
    hops = np.where(ranks // H == (ranks + 1) % p // H, 2, 4).max()
    alpha = 1e-6
    prof = profile(build("ring", p, ports=ports), t, Network.from_si(alpha=alpha))
    expected = 2 * (p - 1) * (alpha + hops * LAT + n / p / B)
    np.testing.assert_allclose(prof.times(n), expected, rtol=1e-9)


@pytest.mark.parametrize("spec,per_host", [
    ("leafspine:4x4x1", B / 4),                          # 4:1, one spine
    ("leafspine:4x4x2,uplinks=2,uplink=0.5", B / 2),     # 2:1
    ("leafspine:3x4x2,uplink=0.5", B / 4),               # 4:1 with slow uplinks
    ("leafspine:4x4x4", B),                              # non-blocking: host link bound
])
@pytest.mark.parametrize("ecmp", ["split"])
def test_cross_leaf_permutation_limited_by_uplinks(spec, per_host, ecmp):
    t = parse_topology(spec)
    n, H = t.num_endpoints, t.hosts_per_leaf
    # every host sends m bytes to the same host of the next leaf, all at once
    m = 2.0**20
    src = np.arange(n)
    traffic = pd.DataFrame({"step": 0, "src": src, "dst": (src + H) % n, "bytes": m})
    row = flowemu.time_traffic(spec, traffic, ecmp=ecmp).iloc[0]
    rate = min(B, t.spines * t.uplinks * t.uplink * B / H)
    assert rate == pytest.approx(per_host)
    assert row["time_s"] == pytest.approx(4 * LAT + m / rate, rel=1e-9)


def test_swing_bucket_recdoub_run_on_rank_ids():
    for alg in ("swing", "bucket", "recdoub", "ring"):
        df = flowemu.simulate("leafspine:4x4x2", alg, "1MiB")
        assert len(df) == 1 and df["time_s"].iloc[0] > 0


def test_schedule_estimate_counts_rank_ports_not_spine_degree():
    # a spine has L·uplinks = 16 links; ranks send on a 1-D ring of rank ids
    t = parse_topology("leafspine:8x4x2,uplinks=2")
    p = t.num_endpoints
    assert shapes.schedule_shape("ring", {}, p, t) == (2 * p, 1)
    for name in ("ring", "swing", "bucket", "recdoub"):
        spec, candidates = expand_algorithm(name)
        for cand in candidates:
            flows, _ = shapes.schedule_shape(name, cand, p, t)
            sched = spec.build(p, t, False, **cand)
            assert max(len(step.traffic.src) for step in sched.steps) <= flows


# ------------------------------------------------------------------ bad input

@pytest.mark.parametrize("spec,needle", [
    ("leafspine:", "no shape given"),
    ("leafspine:4x4", "expected LxHxS"),
    ("leafspine:4x4x2x1", "expected LxHxS"),
    ("leafspine:0x4x2", "leaves L is 0; expected an integer >= 1"),
    ("leafspine:4x0x2", "hosts per leaf H is 0"),
    ("leafspine:4x4x0", "spines S is 0"),
    ("leafspine:4xax2", "hosts per leaf H is 'a', not an integer"),
    ("leafspine:4x2.5x2", "hosts per leaf H is '2.5', not an integer"),
    ("leafspine:1x1x1", "at least 2 hosts"),
    ("leafspine:4x4x2,uplinks=0", "uplinks is 0; expected an integer >= 1"),
    ("leafspine:4x4x2,uplinks=1.5", "uplinks is '1.5', not an integer"),
    ("leafspine:4x4x2,uplink=0", "uplink is '0'; expected a number > 0"),
    ("leafspine:4x4x2,uplink=fast", "uplink is 'fast'"),
    ("leafspine:4x4x2,uplink=inf", "uplink is 'inf'"),
    ("leafspine:4x4x2,spine=2", "unknown option 'spine'; options: uplinks="),
    ("leafspine:4x4x2,uplinks", "not key=value"),
    ("leafspine:4x4x2,uplinks=2,uplinks=3", "'uplinks' is given twice"),
    ("leafspine:65536x512x1", "at most 16777216"),
])
def test_bad_specs(spec, needle, capsys):
    assert_bad_topology(capsys, spec, needle)


def test_bad_constructor_args():
    with pytest.raises(ConfigError, match=r"spines: 0 is not allowed; expected an integer >= 1"):
        LeafSpine(2, 2, 0)
    with pytest.raises(ConfigError, match=r"uplink: -1 is not allowed"):
        LeafSpine(2, 2, 1, uplink=-1)
    with pytest.raises(ConfigError, match=r"leaves: True is not allowed"):
        LeafSpine(True, 2, 1)


def test_cli_dor_subprocess_exit_2():
    proc = subprocess.run([sys.executable, "-m", "flowemu", "run", "-t", "leafspine:2x2x2",
                           "-a", "ring", "-s", "1KiB", "--ecmp", "dor"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "ecmp: 'dor'" in proc.stderr and "split, hash" in proc.stderr


def test_cli_flows_out_names_leafspine_links(tmp_path):
    out = tmp_path / "flows.csv"
    assert main(["run", "-t", "leafspine:2x2x2", "-a", "ring", "-s", "1KiB",
                 "--flows-out", str(out)]) == 0
    df = pd.read_csv(out)
    # ranks 1 -> 2 cross leaves: 4 hops over both spines (split), paths via vertices
    # 2 hosts x 2 leaves: host 1's leaf is vertex 4, host 2's leaf vertex 5, spines 6 and 7
    row = df[(df.src == 1) & (df.dst == 2)].iloc[0]
    assert row["hops"] == 4
    assert set(row["path"].split()) == {"1>4", "4>6", "4>7", "6>5", "7>5", "5>2"}


def test_sweep_with_leafspine(tmp_path):
    from flowemu.study.sweep import sweep
    from flowemu.study.sweep.dataset import load
    cfg = tmp_path / "ls.toml"
    cfg.write_text('description = "leaf-spine"\nsizes = ["1MiB"]\n[groups.ls]\n'
                   'topology = ["leafspine:2x4x4", "leafspine:2x4x1"]\n'
                   'algorithm = ["ring:ports=1"]\necmp = ["split", "hash"]\n')
    summary = sweep(cfg, tmp_path / "out", jobs=1, progress=False)
    assert not summary.errors
    df = load(tmp_path / "out").set_index(["topology", "ecmp"])["time_s"]
    p, n = 8, 2.0**20
    # non-blocking: the host links bound every step (4 hops at the leaf boundary)
    ideal = 2 * (p - 1) * (4 * LAT + n / p / B)
    assert df["leafspine:2x4x4", "split"] == pytest.approx(ideal, rel=1e-9)
    assert df["leafspine:2x4x4", "hash"] == pytest.approx(ideal, rel=1e-9)
    # one spine: each leaf sends one ring flow over its single uplink: still ideal
    assert df["leafspine:2x4x1", "split"] == pytest.approx(ideal, rel=1e-9)


# ------------------------------------------------------------------ per-link latency

def test_uplink_latency_adds_along_the_path():
    """A flow's latency is the sum of its links' latencies: across leaves two
    host links at the network's latency and two leaf-spine links at
    uplink_latency, plus four hops of processing (closed form)."""
    t = parse_topology("leafspine:2x2x2,uplink_latency=2us")
    assert t.spec == "leafspine:2x2x2,uplink_latency=2us"
    assert t.describe()["uplink_latency"] == 2e-6
    net = Network(hop_latency="300ns", link_latency="100ns", alpha="1us")
    tiny = pd.DataFrame({"step": [0], "src": [0], "dst": [2], "bytes": [1.0]})
    split = flowemu.time_traffic(t, tiny, network=net)
    expect = 1e-6 + 4 * 300e-9 + 2 * 100e-9 + 2 * 2e-6 + 1.0 / B
    assert split["time_s"].iloc[0] == pytest.approx(expect, rel=1e-12)
    hashed = flowemu.time_traffic(t, tiny, network=net, ecmp="hash", seed=3)
    assert hashed["time_s"].iloc[0] == pytest.approx(expect, rel=1e-12)
    # within a leaf the uplinks are not crossed: the network's latency only
    local = pd.DataFrame({"step": [0], "src": [0], "dst": [1], "bytes": [1.0]})
    t_local = flowemu.time_traffic(t, local, network=net)["time_s"].iloc[0]
    assert t_local == pytest.approx(1e-6 + 2 * 300e-9 + 2 * 100e-9 + 1.0 / B, rel=1e-12)


def test_uplink_latency_survives_pickling_and_respec():
    t = parse_topology("leafspine:2x2x2,uplink_latency=1.5us")
    assert pickle.loads(pickle.dumps(t)) == t
    assert parse_topology(t.spec) == t
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(t)).link_latency(Network()),
                                  t.link_latency(Network()))


@pytest.mark.parametrize("opt", ["uplink_latency=5", "uplink_latency=-1ns",
                                 "uplink_latency=fast", "uplink_latency="])
def test_bad_uplink_latency_is_refused(opt):
    with pytest.raises(ConfigError, match="uplink_latency"):
        parse_topology(f"leafspine:2x2x2,{opt}")


def test_sweep_refuses_a_mode_the_family_lacks_before_running(tmp_path, capsys, no_work):
    path = tmp_path / "modes.toml"
    path.write_text('sizes = "1KiB"\ntopology = ["torus:4x4", "leafspine:2x2x2"]\n'
                    'algorithm = "ring"\necmp = ["split", "dor"]\n')
    code = main(["sweep", str(path), "-o", str(tmp_path / "d"), "-q"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "'dor' does not apply to leafspine:2x2x2 (its modes: split, hash, adaptive)" in err
    assert not (tmp_path / "d").exists()


def test_a_fabric_too_big_for_the_memory_limit_is_refused_before_it_is_built(capsys,
                                                                               monkeypatch):
    """16.8M hosts and 1M uplinks: ~0.5 GiB of link arrays by the budget's
    constant (32 B a link), refused under a 100 MB limit before allocating."""
    built = []
    monkeypatch.setattr(LeafSpine, "_build_links", lambda self: built.append(self))
    spec = "leafspine:4096x4096x16"
    with pytest.raises(ConfigError, match=r"max_memory: building leafspine:4096x4096x16 needs"):
        flowemu.simulate(spec, "ring", "1KiB", max_memory="100MB")
    code = main(["run", "-t", spec, "-a", "ring", "-s", "1KiB", "--max-memory", "100MB"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "building leafspine:4096x4096x16 needs" in err and "(--max-memory)" in err
    assert built == []
    monkeypatch.setenv("FLOWEMU_MAX_MEMORY", "100MB")
    with pytest.raises(ConfigError, match="FLOWEMU_MAX_MEMORY"):
        parse_topology(spec)
    assert built == []


@pytest.mark.parametrize("spec, r", [("leafspine:4x4x4", 1.0), ("leafspine:4x4x2", 2.0),
                                     ("leafspine:4x4x1", 4.0), ("leafspine:4x4x1,uplink=2", 2.0),
                                     ("leafspine:4x4x2,uplinks=2,uplink=2", 0.5)])
def test_all_to_all_across_leaves_gets_one_over_r(spec, r):
    """Every host sends m bytes to every host of the other leaves. By symmetry
    each host's N−H flows share its link (B) and a leaf's H·(N−H) flows share
    its S·U uplinks (capacity H·B/r), so every flow runs at B/((N−H)·max(1, r)):
    the fabric gives the all-to-all 1/r of the host rate when r > 1."""
    t = parse_topology(spec)
    H, N = t.hosts_per_leaf, t.num_endpoints
    assert t.oversubscription == pytest.approx(r)
    src, dst = np.meshgrid(np.arange(N), np.arange(N), indexing="ij")
    cross = (src // H) != (dst // H)
    m = 1e6
    traffic = pd.DataFrame({"step": 0, "src": src[cross], "dst": dst[cross], "bytes": m})
    row = flowemu.time_traffic(t, traffic, link_latency=0, hop_latency=0)
    assert row["time_s"].iloc[0] == pytest.approx(m * (N - H) * max(1.0, r) / B, rel=1e-12)
