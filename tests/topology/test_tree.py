"""tree topology: spec grammar, structure, routes against a BFS and a parent
walk written here, closed forms (ring on one switch, a slow cross-site link),
the pure-Python max-min oracle, the GenTree presets, and bad specs."""

import math
import pickle
from collections import deque
from itertools import pairwise

import numpy as np
import pandas as pd
import pytest

import flowemu
from flowemu.algorithms import get_algorithm
from flowemu.core.errors import ConfigError
from flowemu.core.network import Network
from flowemu.core.presets import GENTREE_TABLE5
from flowemu.engine.profiles import profile
from flowemu.topology import Tree, parse_topology, topology_families
from flowemu.topology.treespec import preset_tree
from tests.helpers.cli import assert_bad_topology, run
from tests.helpers.maxmin_oracle import completion, csr_to_lists

B = 50e9          # network default: 400 Gb/s in bytes/s
LINK = 100e-9     # default link latency
HOP = 300e-9      # default per-hop latency


def build(name, p, topo=None, **opts):
    spec = get_algorithm(name)
    return spec.build(p, topo, False, **spec.parse_options(opts))


def neighbours(t):
    """Undirected adjacency (vertex -> set of vertices) from the link arrays."""
    adj = {v: set() for v in range(t.num_nodes)}
    for a, b in zip(t.link_src.tolist(), t.link_dst.tolist(), strict=True):
        adj[a].add(b)
        adj[b].add(a)
    return adj


def bfs_path(adj, s, d):
    """A shortest vertex path s -> d by breadth-first search (the test's own
    enumeration; in a tree it is the only simple path)."""
    prev = {s: None}
    queue = deque([s])
    while queue:
        v = queue.popleft()
        if v == d:
            break
        for w in sorted(adj[v]):
            if w not in prev:
                prev[w] = v
                queue.append(w)
    path = [d]
    while path[-1] != s:
        path.append(prev[path[-1]])
    return path[::-1]


def parallel(t):
    """Number of links from a to b, keyed (a, b)."""
    return pd.Series(list(zip(t.link_src.tolist(), t.link_dst.tolist(), strict=True))) \
        .value_counts().to_dict()


def all_pairs(n):
    s, d = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    return s.ravel(), d.ravel()


# ------------------------------------------------------------------ structure

@pytest.mark.parametrize("spec,hosts,switches,levels", [
    ("tree:24", 24, 1, 1),
    ("tree:16x24", 384, 17, 2),
    ("tree:8x32+8x16", 384, 17, 2),
    ("tree:2x(4x8+16)", 2 * (32 + 16), 1 + 2 * 5, 3),
    ("tree:dc(8x32)+dc(8x16)", 384, 18, 3),
    ("tree:dc(3)+dc(2x2)+dc(4)", 11, 1 + 3 + 1, 3),
    ("tree: 4 x 2 + 3 ", 11, 5, 2),
])
def test_sizes_levels_and_round_trip(spec, hosts, switches, levels):
    t = parse_topology(spec)
    assert (t.num_endpoints, t.num_switches, t.num_nodes) == (hosts, switches, hosts + switches)
    assert t.num_levels == levels
    # every non-root vertex has one link up and one down (uplinks=1) and the
    # roots of k sites are joined pairwise in both directions
    k = len(t.roots)
    assert t.num_links == 2 * (t.num_nodes - k) + k * (k - 1)
    assert parse_topology(t.spec).spec == t.spec
    t2 = pickle.loads(pickle.dumps(t))
    assert t2.spec == t.spec and t2 == t
    np.testing.assert_array_equal(t2.link_src, t.link_src)
    d = t.describe()
    assert (d["family"], d["hosts"], d["levels"], d["links"]) == ("tree", hosts, levels,
                                                                  t.num_links)
    assert t.grid is None


def test_asymmetric_parents_written_out():
    # 8x32+8x16 at small scale: a root, 2 switches of 3 hosts and 2 of 2 hosts
    t = parse_topology("tree:2x3+2x2")
    n = 10
    root, mids = n, [n + 1, n + 2, n + 3, n + 4]
    expect = [mids[0]] * 3 + [mids[1]] * 3 + [mids[2]] * 2 + [mids[3]] * 2 + [-1] + [root] * 4
    assert t.parent.tolist() == expect
    assert t.depth.tolist() == [2] * n + [0] + [1] * 4
    # every host link and every middle link: one each way, scale 1
    pairs = parallel(t)
    for v, p in enumerate(expect):
        if p >= 0:
            assert pairs[(v, p)] == 1 and pairs[(p, v)] == 1
    np.testing.assert_array_equal(t.link_capacity_scale, 1.0)
    assert t.link_bandwidth_abs is None and t.link_latency_abs is None


def test_sites_are_joined_root_to_root():
    t = parse_topology("tree:dc(2x2)+dc(3)")
    # hosts 0-3 in site 0 (two middle switches), 4-6 in site 1 (on its root)
    r0, r1 = t.roots.tolist()
    assert t.site[:7].tolist() == [0, 0, 0, 0, 1, 1, 1]
    assert t.parent[4:7].tolist() == [r1] * 3
    cross = t.link_level == 0
    assert sorted(zip(t.link_src[cross].tolist(), t.link_dst[cross].tolist())) == \
        [(r0, r1), (r1, r0)]


def test_per_level_values_on_links():
    t = parse_topology("tree:dc(2x2)+dc(3),bw=1Gb/s:2x:,lat=30ms::0.5x,uplinks=:2:")
    net = Network()
    cap = t.link_capacity(net)
    lat = t.link_latency(net)
    ends = list(zip(t.link_src.tolist(), t.link_dst.tolist(), strict=True))
    hosts = t.num_endpoints
    for link, (a, b) in enumerate(ends):
        lev = t.link_level[link]
        low = max(a, b) if min(a, b) < hosts else None
        # independently: cross = both ends roots; level 1 = a root and a child
        roots = set(t.roots.tolist())
        if a in roots and b in roots:
            assert lev == 0 and cap[link] == 1e9 / 8 and lat[link] == 30e-3
        elif a in roots or b in roots:
            assert lev == 1 and cap[link] == 2 * B and lat[link] == LINK
        else:
            assert low is not None and lev == 2
            assert cap[link] == B and lat[link] == pytest.approx(LINK / 2)
    pairs = parallel(t)
    r0 = int(t.roots[0])
    mid = int(t.parent[0])
    assert pairs[(mid, r0)] == 2 and pairs[(r0, mid)] == 2
    # site 1's hosts hang from their root: level 1, two links each
    assert pairs[(4, int(t.roots[1]))] == 2
    assert t.spec == "tree:dc(2x2)+dc(3),uplinks=:2:,bw=1Gb/s:2x:,lat=30ms::0.5x"


def test_incast_terms_stored_per_level_and_vertex():
    t = parse_topology("tree:2x3,eps=:30.5ps,wt=4:9")
    assert t.incast_slope == (None, 30.5e-12) and t.incast_threshold == (4.0, 9.0)
    s, w = t.vertex_incast_slope, t.vertex_incast_threshold
    # hosts take their parent's level (1), the middle switches their own (1), the root 0
    assert np.isnan(s[6]) and w[6] == 4
    np.testing.assert_array_equal(s[:6], 30.5e-12)
    np.testing.assert_array_equal(s[7:], 30.5e-12)
    np.testing.assert_array_equal(w[:6], 9)
    assert parse_topology("tree:2x3").vertex_incast_slope is None
    d = t.describe()
    assert d["incast_slope"] == [None, 30.5e-12] and d["incast_threshold"] == [4.0, 9.0]


def test_registry_doc_lists_grammar_and_presets(capsys):
    doc = topology_families()["tree"]
    for word in ("COUNTxCHILD", "dc(", "bw=", "lat=", "eps=", "wt=", "uplinks=", "SS24", "SS32",
                 "SYM384", "SYM512", "ASY384", "CDC384"):
        assert word in doc
    code, out, _ = run(capsys, ["list"])
    assert code == 0 and "CDC384" in out


# --------------------------------------------------------------------- routes

ROUTE_SPECS = ["tree:2x3+2x2", "tree:2x(2x2+1),uplinks=2:1:3", "tree:dc(2x2)+dc(3)",
               "tree:dc(2x2)+dc(3)+dc(1x2),uplinks=2:1:2", "tree:5"]


@pytest.mark.parametrize("spec", ROUTE_SPECS)
@pytest.mark.parametrize("ecmp", ["split", "hash"])
def test_routes_follow_the_bfs_path(spec, ecmp):
    t = parse_topology(spec)
    adj, pairs = neighbours(t), parallel(t)
    src, dst = all_pairs(t.num_endpoints)
    r = t.route(src, dst, ecmp, seed=3)
    assert r.num_flows == len(src)
    assert t.route_entries(src, dst, ecmp) == r.num_entries
    assert np.diff(r.flow_ptr).max() <= t.max_route_entries(ecmp)
    for f in range(r.num_flows):
        link, frac = r.flow_links(f)
        if src[f] == dst[f]:
            assert len(link) == 0 and r.hops[f] == 0
            continue
        path = bfs_path(adj, int(src[f]), int(dst[f]))
        hops = list(pairwise(path))
        assert r.hops[f] == len(hops)
        ends = list(zip(t.link_src[link].tolist(), t.link_dst[link].tolist(), strict=True))
        # entries in path order, each hop over its parallel links, mass 1 per hop
        order = [e for i, e in enumerate(ends) if i == 0 or ends[i - 1] != e]
        assert order == hops
        assert len(set(link.tolist())) == len(link)
        for hop in hops:
            sel = np.array([e == hop for e in ends])
            assert frac[sel].sum() == pytest.approx(1.0, rel=1e-12)
            want = pairs[hop] if ecmp == "split" else 1
            assert sel.sum() == want
            np.testing.assert_allclose(frac[sel], 1.0 / want)


def test_routes_match_a_parent_walk_on_an_asymmetric_tree():
    # the walk uses parents written out from the structure, not t.parent:
    # tree:2x3+1x(2x2)+2 — root R, switches A, B (3 hosts each), C holding
    # C1, C2 (2 hosts each), and hosts 10, 11 on the root
    t = parse_topology("tree:2x3+1x(2x2)+2")
    n = 12
    R, A, B_, C, C1, C2 = n, n + 1, n + 2, n + 3, n + 4, n + 5
    parent = {0: A, 1: A, 2: A, 3: B_, 4: B_, 5: B_, 6: C1, 7: C1, 8: C2, 9: C2, 10: R, 11: R,
              A: R, B_: R, C: R, C1: C, C2: C, R: None}
    assert t.parent.tolist() == [-1 if parent[v] is None else parent[v] for v in range(18)]

    def chain(v):
        out = [v]
        while parent[out[-1]] is not None:
            out.append(parent[out[-1]])
        return out

    src, dst = all_pairs(n)
    for ecmp in ("split", "hash"):
        r = t.route(src, dst, ecmp)
        for f in range(r.num_flows):
            s, d = int(src[f]), int(dst[f])
            up, down = chain(s), chain(d)
            lca = next(v for v in up if v in down)
            path = up[:up.index(lca) + 1] + down[:down.index(lca)][::-1]
            link, _ = r.flow_links(f)
            got = [int(t.link_src[link[0]])] + t.link_dst[link].tolist() if len(link) else [s]
            assert got == path


def test_hash_picks_one_parallel_link_and_depends_on_seed():
    t = parse_topology("tree:4x4,uplinks=4:4")
    src, dst = all_pairs(t.num_endpoints)
    cross = src // 4 != dst // 4
    src, dst = src[cross], dst[cross]
    r1 = t.route(src, dst, "hash", seed=1)
    np.testing.assert_array_equal(r1.link, t.route(src, dst, "hash", seed=1).link)
    r2 = t.route(src, dst, "hash", seed=2)
    assert (r1.link != r2.link).any()
    assert (r1.frac == 1).all() and (np.diff(r1.flow_ptr) == 4).all()
    # the first hop leaves the source host over one of its 4 links
    first_up = r1.link.reshape(-1, 4)[:, 0]
    assert (t.link_src[first_up] == src).all()
    # the 192 flows spread over the 4 copies (host v's links are 4v..4v+3)
    assert (np.bincount(first_up % 4, minlength=4) > 0.15 * len(src)).all()


def test_dor_is_refused_with_the_modes():
    t = parse_topology("tree:4")
    with pytest.raises(ConfigError, match=r"ecmp: 'dor' does not apply to tree:4; allowed: split, hash"):
        t.route(np.array([0]), np.array([1]), "dor")
    with pytest.raises(ConfigError, match=r"ecmp: 'dor'"):
        t.max_route_entries("dor")
    with pytest.raises(ConfigError, match=r"ecmp: 'dor'"):
        flowemu.simulate("tree:4", "ring", "1KiB", ecmp="dor")
    with pytest.raises(ConfigError, match=r"ecmp: 'dmodk' does not apply to tree:4"):
        t.route(np.array([0]), np.array([1]), "dmodk")
    with pytest.raises(ConfigError, match=r"ecmp: unknown mode 'nosuch'"):
        t.route(np.array([0]), np.array([1]), "nosuch")


# --------------------------------------------------------------- closed forms

@pytest.mark.parametrize("ports", [1, 2])
def test_ring_on_ss24_closed_form(ports):
    t = parse_topology("tree:SS24")
    p = 24
    beta_float = GENTREE_TABLE5["Middle SW"]["beta"]
    lat = GENTREE_TABLE5["Middle SW"]["alpha"]
    bw = 4 / beta_float                      # bytes/s: β is seconds per 4-byte float
    alpha = 6.58e-3
    n = np.array([64.0, 2.0**20, 4e8])
    prof = profile(build("ring", p, ports=ports), t, Network.from_si(alpha=alpha))
    expected = 2 * (p - 1) * (alpha + 2 * HOP + 2 * lat + n / p / bw)
    np.testing.assert_allclose(prof.times(n), expected, rtol=1e-9)


def test_ss24_ring_against_table7():
    # GenTree Table 7, Ring Allreduce on SS24 at 1e7, 3.2e7, 1e8 floats; the
    # host terms of Table 5's Server row per byte (γ 6e-10/4 s, δ 1.87e-10/4 s)
    paper = np.array([1.082, 1.376, 2.288])
    sizes = [40_000_000, 128_000_000, 400_000_000]     # 4-byte floats
    df = flowemu.simulate("tree:SS24", "ring:ports=1", sizes, alpha="6.58ms",
                          gamma="150ps", delta="46.75ps")
    got = df["time_s"].to_numpy()
    # the per-float growth (β per float on the server links) matches to 1 %,
    np.testing.assert_allclose(np.diff(got), np.diff(paper), rtol=1e-2)
    # the times to 5 % (the paper's simulator adds a constant ~40 ms)
    np.testing.assert_allclose(got, paper, rtol=5e-2)


def test_ring_on_sym384_bound_by_host_links():
    # ring neighbours under different middle switches take 4 links; the root
    # links (50 Gb/s) carry one flow each, the host links (5 Gb/s) bound
    n = 2.0**24
    df = flowemu.simulate("tree:SYM384", "ring:ports=1", [int(n)])
    p, bw = 384, 4 / 6.40e-9
    step = 4 * HOP + 4 * 6.58e-3 + n / p / bw
    assert df["time_s"].iloc[0] == pytest.approx(2 * (p - 1) * step, rel=1e-9)


def test_single_switch_equals_one_level_tree_in_default_units():
    n = 2.0**20
    p = 8
    df = flowemu.simulate("tree:8", "ring:ports=1", [int(n)])
    assert df["time_s"].iloc[0] == pytest.approx(2 * (p - 1) * (2 * LINK + 2 * HOP + n / p / B),
                                                 rel=1e-9)


def _cross_traffic(k, m, src_hosts, dst_hosts):
    return pd.DataFrame({"step": 0, "src": src_hosts[:k], "dst": dst_hosts[:k], "bytes": m})


@pytest.mark.parametrize("k", [1, 2, 5])
def test_slow_cross_site_link_dominates(k):
    # two sites of 2 switches x 3 hosts; the cross link is 1 Gb/s with 30 ms
    spec = "tree:dc(2x3)+dc(2x3),bw=1Gb/s::,lat=30ms::"
    m = 1e6
    rate = 1e9 / 8
    # k hosts of site 0 send to k hosts of site 1: 5 links each, 4 of them default
    src = np.array([0, 3, 1, 4, 2])
    dst = np.array([6, 9, 7, 10, 8])
    row = flowemu.time_traffic(spec, _cross_traffic(k, m, src, dst)).iloc[0]
    lat = 5 * HOP + 4 * LINK + 30e-3
    assert row["time_s"] == pytest.approx(lat + k * m / rate, rel=1e-9)


def test_cdc384_cross_link_shared_by_k_flows():
    t = parse_topology("tree:CDC384")
    # DC0: 8 x 32 hosts (0..255), DC1: 8 x 16 hosts (256..383)
    assert t.site[255] == 0 and t.site[256] == 1
    m = 1e7
    rate = 4 / GENTREE_TABLE5["Cross DC"]["beta"]
    lat = 5 * HOP + 4 * 6.58e-3 + 3.00e-2
    for k in (1, 8):
        src = np.arange(k) * 32                   # one host per DC0 middle switch
        dst = 256 + np.arange(k) * 16             # one per DC1 middle switch
        row = flowemu.time_traffic("tree:CDC384", _cross_traffic(k, m, src, dst)).iloc[0]
        # host links run at 5 Gb/s too: one flow runs at the cross rate, k share it
        assert row["time_s"] == pytest.approx(lat + k * m / rate, rel=1e-9)


# ------------------------------------------------------------- max-min oracle

@pytest.mark.parametrize("spec", [
    "tree:2x3+2x2,uplinks=2:1,bw=2x:1x",
    "tree:dc(2x2)+dc(3),bw=1Gb/s:25Gb/s:,lat=1ms::",
    "tree:2x(2x2+1),uplinks=1:2:1,bw=:0.5x:",
])
@pytest.mark.parametrize("ecmp", ["split", "hash"])
def test_step_time_equals_the_oracle(spec, ecmp):
    t = parse_topology(spec)
    net = Network()
    rng = np.random.default_rng(11)
    n = t.num_endpoints
    for _ in range(3):
        f = int(rng.integers(3, 25))
        src = rng.integers(0, n, f)
        dst = (src + rng.integers(1, n, f)) % n
        size = rng.choice([1e5, 3e5, 1e6], f)
        traffic = pd.DataFrame({"step": 0, "src": src, "dst": dst, "bytes": size})
        seed = 5 if ecmp == "hash" else 0
        got = flowemu.time_traffic(t, traffic, ecmp=ecmp, seed=seed).iloc[0]["time_s"]
        r = t.route(src, dst, ecmp, seed=seed)
        flows = csr_to_lists(r.flow_ptr, r.link, r.frac)
        _, finish, status = completion(flows, t.link_capacity(net).tolist(), size.tolist())
        assert status == 0
        link_lat = t.link_latency(net)
        # path latency: the links of the BFS path (parallel links: equal latency)
        adj = neighbours(t)
        lat = []
        for s, d in zip(src.tolist(), dst.tolist(), strict=True):
            path = bfs_path(adj, s, d)
            ids = [int(np.flatnonzero((t.link_src == a) & (t.link_dst == b))[0])
                   for a, b in pairwise(path)]
            lat.append((len(path) - 1) * HOP + link_lat[ids].sum())
        assert got == pytest.approx(max(a + b for a, b in zip(lat, finish, strict=True)),
                                    rel=1e-9)


# ------------------------------------------------------------------- presets

@pytest.mark.parametrize("name,hosts,structure", [
    ("SS24", 24, "24"), ("SS32", 32, "32"), ("SYM384", 384, "16x24"),
    ("SYM512", 512, "16x32"), ("ASY384", 384, "8x32+8x16"),
    ("CDC384", 384, "dc(8x32)+dc(8x16)"),
])
def test_presets_sizes_and_table5(name, hosts, structure):
    t = parse_topology(f"tree:{name}")
    assert t.spec == f"tree:{name}" and t.preset == name and t.num_endpoints == hosts
    assert t.structure == structure
    assert parse_topology(f"tree:{name.lower()}").spec == t.spec
    # the written-out spec builds the same network
    same = parse_topology(t.expanded_spec)
    for attr in ("link_src", "link_dst", "link_bandwidth_abs", "link_latency_abs"):
        np.testing.assert_array_equal(getattr(same, attr), getattr(t, attr))
    assert pickle.loads(pickle.dumps(t)) == t
    # Table 5 as printed (α s, β s/float, ε s/float/flow, w_t)
    rows = {"Cross DC": (3.00e-2, 6.40e-9, 6.00e-11, 9),
            "Root SW": (6.58e-3, 6.40e-10, 6.00e-12, 9),
            "Middle SW": (6.58e-3, 6.40e-9, 1.22e-10, 9)}
    tiers = {"SS24": ["Middle SW"], "SS32": ["Middle SW"],
             "CDC384": ["Cross DC", "Root SW", "Middle SW"]}.get(name, ["Root SW", "Middle SW"])
    g = t.genmodel
    assert g["level_tiers"] == tiers
    for tier, (alpha, beta, eps, wt) in rows.items():
        assert g["table5"][tier] == {"alpha": alpha, "beta": beta, "eps": eps, "wt": wt}
    assert g["table5"]["Server"] == {"alpha": 6.58e-3, "gamma": 6.00e-10, "delta": 1.87e-10}
    assert g["host"] == {"alpha": 6.58e-3, "gamma": 1.5e-10, "delta": 1.87e-10 / 4}
    assert t.describe()["genmodel"] == g
    # each level's links carry its tier's numbers: 4/β bytes/s, α s, ε/4, w_t
    for level, tier in enumerate(tiers):
        alpha, beta, eps, wt = rows[tier]
        sel = t.link_level == level
        assert sel.any()
        np.testing.assert_array_equal(t.link_bandwidth_abs[sel], 4 / beta)
        np.testing.assert_array_equal(t.link_latency_abs[sel], alpha)
        assert t.incast_slope[level] == eps / 4 and t.incast_threshold[level] == wt
    if name == "CDC384":
        cross = t.link_level == 0
        assert cross.sum() == 2 and set(t.link_src[cross]) == set(t.roots.tolist())
        assert t.link_bandwidth_abs[cross][0] == 6.25e8            # 5 Gb/s
    if len(tiers) >= 2:
        assert t.link_bandwidth_abs[t.link_level == len(tiers) - 2][0] == 6.25e9   # 50 Gb/s


def test_preset_helper_and_case():
    assert preset_tree("sym512").spec == "tree:SYM512"
    with pytest.raises(ConfigError, match=r"unknown preset 'X'; presets: SS24, SS32"):
        preset_tree("X")


# --------------------------------------------------- every algorithm runs here

@pytest.mark.parametrize("spec", ["tree:SS24", "tree:2x3+2x2+1x(2x2)"])
@pytest.mark.parametrize("alg", ["ring", "recdoub", "swing", "bucket"])
def test_every_algorithm_runs(spec, alg):
    df = flowemu.simulate(spec, alg, "1KiB,1MiB")
    assert len(df) == 2 and (df["time_s"] > 0).all() and df["time_s"].is_monotonic_increasing
    # no algorithm beats the latency of one exchange over the shortest path
    assert (df["time_s"] >= 2 * HOP).all()


# ------------------------------------------------------------------ bad input

BAD = [
    ("tree:", "no levels given"),
    ("tree:0", "fan-out 0 is not allowed"),
    ("tree:4x0", "fan-out 0 is not allowed"),
    ("tree:1", "has 1 host; at least 2 hosts"),
    ("tree:4x", "a count is missing at the end"),
    ("tree:4++4", "expected a count but found '+'"),
    ("tree:²", "expected a count but found '²'"),   # (a digit to str.isdigit, not to int)
    ("tree:4x2.5", "unexpected '.'"),
    ("tree:4x(2+2", "expected ')' but found the end"),
    ("tree:" + "1x" * 40 + "2", "deeper than 32 levels"),
    ("tree:99999999999999999999999", "is too large"),
    ("tree:4096x4096x2", "at most 16777216 (2**24)"),
    ("tree:4096x4096,uplinks=8:8", "at most 67108864 (2**26)"),
    ("tree:dc(4)", "at least two sites"),
    ("tree:dc(4)+4", "joins sites dc(...)+dc(...) only"),
    ("tree:FOO", "unknown preset 'FOO'; presets: SS24, SS32, SYM384, SYM512, ASY384, CDC384"),
    ("tree:SYM384,bw=1Gb/s:1Gb/s", "preset SYM384 takes no options; write it out"),
    ("tree:16x24,speed=2", "unknown option 'speed'; options: uplinks="),
    ("tree:16x24,bw", "not key=value"),
    ("tree:16x24,bw=5Gb/s:5Gb/s:5Gb/s", "gives 3 value(s) but the tree has 2 level(s)"),
    ("tree:16x24,bw=50", "'50' has no unit"),
    ("tree:16x24,bw=5:5Gb/s", "bw"),
    ("tree:16x24,bw=fast:", "bw"),
    ("tree:16x24,bw=0x:", "bw: '0x' is not allowed"),
    ("tree:16x24,lat=1ms:2", "lat"),
    ("tree:16x24,uplinks=0:1", "uplinks is 0; expected an integer >= 1"),
    ("tree:16x24,wt=-1:2", "wt is '-1'"),
    # too large for a double is not inf (incast silently off)
    ("tree:16x24,eps=1ns,wt=1e400", "wt is '1e400'; expected a flow count >= 0 or inf"),
    ("tree:16x24,eps=1:", "eps"),
    ("tree:4,bw=1Gb/s,bw=2Gb/s", "'bw' is given twice"),
]


@pytest.mark.parametrize("spec,needle", BAD)
def test_bad_specs_api_and_cli(spec, needle, capsys):
    assert_bad_topology(capsys, spec, needle)


def test_bad_units_name_the_forms():
    with pytest.raises(ConfigError, match=r"bw.*'5'.*Gb/s"):
        parse_topology("tree:16x24,bw=5:5Gb/s")
    with pytest.raises(ConfigError, match=r"lat.*'2'.*ms"):
        parse_topology("tree:16x24,lat=1ms:2")


def test_bad_constructor_args():
    with pytest.raises(ConfigError, match=r"fan-out 0 is not allowed"):
        Tree((((0, None),),))
    with pytest.raises(ConfigError, match=r"sites: \(\) is not allowed"):
        Tree(())
    with pytest.raises(ConfigError, match=r"bandwidth: 2 value\(s\) given but the tree has 1"):
        Tree((((4, None),),), bandwidth=(1e9, 1e9))
    with pytest.raises(ConfigError, match=r"uplinks: 0 is not allowed"):
        Tree((((4, None),),), uplinks=(0,))
    with pytest.raises(ConfigError, match=r"latency: -1.0 is not allowed"):
        Tree((((4, None),),), latency=(-1.0,))
    with pytest.raises(ConfigError, match=r"preset: 'X' is not allowed"):
        Tree((((4, None),),), preset="X")
    # a preset's name promises its network: another structure or value is refused
    with pytest.raises(ConfigError, match=r"preset: SS24 does not describe this tree"):
        Tree((((23, None),),), bandwidth=(6.25e8,), latency=(6.58e-3,),
             incast_slope=(3.05e-11,), incast_threshold=(9.0,), preset="SS24")
    with pytest.raises(ConfigError, match=r"preset: SS24 does not describe this tree"):
        Tree((((24, None),),), preset="SS24")
    ss24 = Tree((((24, None),),), bandwidth=(6.25e8,), latency=(6.58e-3,),
                incast_slope=(1.22e-10 / 4,), incast_threshold=(9.0,), preset="SS24")
    assert ss24 == preset_tree("SS24")
    t = Tree((((np.int64(2), ((3, None),)),),), capacity_scale=(0.5, None))
    assert t.spec == "tree:2x3,bw=0.5x:"
    # an absolute value wins over a scale, and the spec rebuilds the same tree
    both = Tree((((2, ((3, None),)),),), bandwidth=(1e9, None), capacity_scale=(0.5, 2.0),
                latency=(None, 1e-3), latency_scale=(3.0, 4.0))
    assert both.spec == "tree:2x3,bw=8Gb/s:2x,lat=3x:1ms"
    assert parse_topology(both.spec) == both
    assert math.isclose(t.link_capacity(Network())[t.link_level == 0][0], B / 2)


def test_sweep_with_presets_and_options(tmp_path):
    from flowemu.study.sweep import sweep
    from flowemu.study.sweep.dataset import load
    cfg = tmp_path / "tree.toml"
    cfg.write_text('description = "trees"\nsizes = ["1MiB"]\n[groups.t]\n'
                   'topology = ["tree:SS24", "tree:4x6,bw=:2x"]\n'
                   'algorithm = ["ring:ports=1"]\n')
    summary = sweep(cfg, tmp_path / "out", jobs=1, progress=False)
    assert not summary.errors
    df = load(tmp_path / "out").set_index("topology")["time_s"]
    n = 2.0**20
    p, bw = 24, 4 / 6.40e-9
    assert df["tree:SS24"] == pytest.approx(2 * (p - 1) * (2 * HOP + 2 * 6.58e-3 + n / p / bw),
                                            rel=1e-9)
    # host links at twice the network bandwidth, root links at 1x: the ring
    # flow between switches (4 links) crosses a root link and is the slowest
    step = 4 * HOP + 4 * LINK + n / p / B
    assert df["tree:4x6,bw=:2x"] == pytest.approx(2 * (p - 1) * step, rel=1e-9)


def test_cli_unknown_preset_subprocess_exit_2():
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, "-m", "flowemu", "run", "-t", "tree:SYM385",
                           "-a", "ring", "-s", "1KiB"], capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "unknown preset 'SYM385'; presets: SS24, SS32, SYM384, SYM512, ASY384, CDC384" \
        in proc.stderr
