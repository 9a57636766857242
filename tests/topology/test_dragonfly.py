"""dragonfly topology: structure, minimal and Valiant routes against an
independent enumeration of paths, closed-form times, the max-min oracle,
every algorithm, bad specs."""

import math
import pickle
from collections import defaultdict, deque

import numpy as np
import pandas as pd
import pytest

import flowemu
from flowemu.core.errors import ConfigError
from flowemu.core.network import Network
from flowemu.topology import Dragonfly, parse_topology, topology_families
from tests.helpers.cli import assert_bad_topology, one_error_line, run
from tests.helpers.maxmin_oracle import completion

B = 50e9          # 400 Gb/s in bytes/s
LINK, HOP = 100e-9, 300e-9

SMALL = ["dragonfly:a=2,p=1,h=1", "dragonfly:a=3,p=2,h=1", "dragonfly:a=2,p=2,h=2,g=3",
         "dragonfly:a=3,p=1,h=2,g=4", "dragonfly:a=3,p=1,h=2,g=5", "dragonfly:a=2,p=1,h=2"]


# ------------------------------------------------------ independent path model

def group_of(t, v):
    """Group of a vertex from the id layout of the docs (hosts by router)."""
    n = t.num_endpoints
    return (v // t.p) // t.a if v < n else (v - n) // t.a


def is_global(t, lk):
    n = t.num_endpoints
    s, d = int(t.link_src[lk]), int(t.link_dst[lk])
    return s >= n and d >= n and group_of(t, s) != group_of(t, d)


def out_links(t):
    out = defaultdict(list)
    for lk, (s, d) in enumerate(zip(t.link_src.tolist(), t.link_dst.tolist(), strict=True)):
        out[s].append((lk, d))
    return out


def shortest_paths(t, out, start, is_target, max_global=1):
    """Every shortest path (list of link ids) from ``start`` to a vertex with
    ``is_target`` crossing at most ``max_global`` global links: a BFS over
    (vertex, globals used), then all paths along BFS levels."""
    dist = {(start, 0): 0}
    q = deque([(start, 0)])
    best = None
    while q:
        v, k = q.popleft()
        if best is not None and dist[v, k] >= best:
            continue
        for lk, w in out[v]:
            k2 = k + is_global(t, lk)
            if k2 > max_global or (w, k2) in dist:
                continue
            dist[w, k2] = dist[v, k] + 1
            if is_target(w):
                best = dist[w, k2] if best is None else min(best, dist[w, k2])
            else:
                q.append((w, k2))
    paths = []

    def walk(v, k, path):
        if len(path) == best:
            if is_target(v):
                paths.append(list(path))
            return
        for lk, w in out[v]:
            k2 = k + is_global(t, lk)
            if k2 <= max_global and dist.get((w, k2)) == len(path) + 1:
                walk(w, k2, path + [lk])

    walk(start, 0, [])
    return paths


def minimal_paths(t, out, s, d):
    """[(weight, links)]: even over all one-global shortest paths."""
    if s == d:
        return []
    ps = shortest_paths(t, out, s, lambda v: v == d)
    return [(1.0 / len(ps), p) for p in ps]


def valiant_paths(t, out, s, d):
    gs, gd = group_of(t, s), group_of(t, d)
    if gs == gd or t.g == 2:
        return minimal_paths(t, out, s, d)
    res = []
    n = t.num_endpoints
    for mid in range(t.g):
        if mid in (gs, gd):
            continue
        leg1 = shortest_paths(t, out, s, lambda v, mid=mid: v >= n and group_of(t, v) == mid)
        for p1 in leg1:
            land = int(t.link_dst[p1[-1]])
            leg2 = shortest_paths(t, out, land, lambda v: v == d)
            for p2 in leg2:
                res.append((1.0 / (t.g - 2) / len(leg1) / len(leg2), p1 + p2))
    return res


def as_fracs(paths):
    acc = defaultdict(float)
    for w, p in paths:
        for lk in p:
            acc[lk] += w
    return dict(acc)


def all_pairs(n):
    s, d = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    return s.ravel(), d.ravel()


# ------------------------------------------------------------------ structure

@pytest.mark.parametrize("spec", SMALL + ["dragonfly:a=4,p=2,h=2,g=7,global=2,local=0.5"])
def test_structure(spec):
    t = parse_topology(spec)
    a, p, h, g = t.a, t.p, t.h, t.g
    assert g == (a * h + 1 if ",g=" not in spec else int(spec.split("g=")[1].split(",")[0]))
    m = a * h // (g - 1)
    n = g * a * p
    assert (t.num_endpoints, t.num_nodes, t.parallel) == (n, n + g * a, m)
    src, dst = t.link_src, t.link_dst
    host = (src < n) | (dst < n)
    # each host: one link up to router n + i // p and one back
    np.testing.assert_array_equal(np.sort(src[src < n]), np.arange(n))
    np.testing.assert_array_equal(dst[src < n], n + src[src < n] // p)
    glob = np.array([is_global(t, lk) for lk in range(t.num_links)], dtype=bool)
    local = ~host & ~glob
    # local: all ordered pairs of distinct routers within each group
    pairs = set(zip(src[local].tolist(), dst[local].tolist()))
    assert len(pairs) == local.sum() == g * a * (a - 1)
    assert all(group_of(t, u) == group_of(t, v) and u != v for u, v in pairs)
    # global: m links each way between every pair of groups, <= h per router
    per_pair = pd.Series([(group_of(t, u), group_of(t, v)) for u, v in
                          zip(src[glob].tolist(), dst[glob].tolist())]).value_counts()
    assert len(per_pair) == g * (g - 1) and (per_pair == m).all()
    assert np.bincount(src[glob] - n, minlength=g * a).max() <= h
    # symmetric: every global link has its reverse
    fwd = pd.Series(list(zip(src[glob].tolist(), dst[glob].tolist()))).value_counts()
    rev = pd.Series(list(zip(dst[glob].tolist(), src[glob].tolist()))).value_counts()
    assert fwd.sort_index().equals(rev.sort_index())
    np.testing.assert_array_equal(t.link_capacity_scale[host], 1.0)
    np.testing.assert_array_equal(t.link_capacity_scale[local], t.local_bw)
    np.testing.assert_array_equal(t.link_capacity_scale[glob], t.global_bw)
    assert parse_topology(t.spec).spec == t.spec
    t2 = pickle.loads(pickle.dumps(t))
    assert t2.spec == t.spec
    np.testing.assert_array_equal(t2.link_dst, t.link_dst)
    assert t.describe()["parallel"] == m and t.grid is None


def test_absolute_arrangement_maximal():
    # g = a·h + 1: router x of group G links to peer groups x·h .. x·h+h-1
    # (indices among G's peers, G itself skipped)
    t = parse_topology("dragonfly:a=3,p=1,h=2")
    n = t.num_endpoints
    for lk in range(t.num_links):
        if is_global(t, lk):
            u, v = int(t.link_src[lk]) - n, int(t.link_dst[lk]) - n
            G, x, T = u // 3, u % 3, v // 3
            j = T if T < G else T - 1
            assert j // 2 == x


def test_registry_doc():
    doc = topology_families()["dragonfly"]
    assert "a=A,p=P,h=H" in doc and "valiant" in doc


# --------------------------------------------------------------------- routes

@pytest.mark.parametrize("spec", SMALL)
@pytest.mark.parametrize("ecmp", ["split", "hash", "valiant"])
def test_routes_match_enumeration(spec, ecmp):
    t = parse_topology(spec)
    out = out_links(t)
    src, dst = all_pairs(t.num_endpoints)
    r = t.route(src, dst, ecmp, seed=3)
    assert t.route_entries(src, dst, ecmp) == r.num_entries
    assert np.diff(r.flow_ptr).max() <= t.max_route_entries(ecmp)
    for f in range(r.num_flows):
        s, d = int(src[f]), int(dst[f])
        links, fracs = r.flow_links(f)
        assert len(set(links.tolist())) == len(links)
        got = dict(zip(links.tolist(), fracs.tolist(), strict=True))
        paths = (valiant_paths if ecmp == "valiant" else minimal_paths)(t, out, s, d)
        if s == d:
            assert r.hops[f] == 0 and not got
            continue
        assert r.hops[f] == max(len(p) for _, p in paths)
        if ecmp == "valiant":
            assert r.hops[f] <= 7
        else:
            assert r.hops[f] <= 5   # <= 3 router hops + 2 host links
        if ecmp == "hash":
            assert any(sorted(p) == sorted(got) for _, p in paths)
            assert all(v == 1.0 for v in got.values())
        else:
            want = as_fracs(paths)
            assert set(got) == set(want)
            for lk, value in got.items():
                assert value == pytest.approx(want[lk], rel=1e-12)


def test_parallel_global_links_split_evenly():
    # a=2,h=2,g=3: m = 2 links between each pair of groups, on both routers
    t = parse_topology("dragonfly:a=2,p=1,h=2,g=3")
    assert t.parallel == 2
    r = t.route(np.array([0]), np.array([2]), "split")
    link, frac = r.flow_links(0)
    g = np.array([is_global(t, lk) for lk in link])
    assert g.sum() >= 1 and frac[g].sum() == pytest.approx(1.0)


def test_hash_is_seeded_and_deterministic():
    t = parse_topology("dragonfly:a=2,p=1,h=2,g=3")   # m = 2 copies
    src, dst = all_pairs(t.num_endpoints)
    r1 = t.route(src, dst, "hash", seed=1)
    np.testing.assert_array_equal(r1.link, t.route(src, dst, "hash", seed=1).link)
    assert any((t.route(src, dst, "hash", seed=s).link != r1.link).any() for s in range(2, 6))


def test_valiant_doubles_global_usage_uniform_load():
    t = parse_topology("dragonfly:a=4,p=2,h=2")
    n, ap = t.num_endpoints, t.a * t.p
    src, dst = all_pairs(n)
    glob = np.array([is_global(t, lk) for lk in range(t.num_links)])
    use = {}
    for mode in ("split", "valiant"):
        r = t.route(src, dst, mode)
        use[mode] = r.frac[glob[r.link]].sum()
    # every one of the n·(n − a·p) flows between groups crosses one global
    # link minimally, two with Valiant
    assert use["split"] == pytest.approx(n * (n - ap), rel=1e-12)
    assert use["valiant"] == pytest.approx(2 * n * (n - ap), rel=1e-12)
    # and on the maximal network the load is uniform: every global link
    # carries (n − a·p)·n / (#global links) minimally
    r = t.route(src, dst, "split")
    load = np.bincount(r.link, weights=r.frac, minlength=t.num_links)[glob]
    np.testing.assert_allclose(load, n * (n - ap) / glob.sum())


def test_modes_refused():
    t = parse_topology("dragonfly:a=2,p=1,h=1")
    with pytest.raises(ConfigError, match=r"ecmp: 'dor'.*allowed: split, hash, valiant"):
        t.route(np.array([0]), np.array([3]), "dor")
    with pytest.raises(ConfigError, match=r"ecmp: 'dor'"):
        flowemu.simulate("dragonfly:a=2,p=1,h=1", "ring", "1KiB", ecmp="dor")
    # the families without Valiant refuse it
    for spec in ("torus:4x4", "mesh:4", "leafspine:2x2x2"):
        with pytest.raises(ConfigError, match=r"ecmp: 'valiant'.*allowed"):
            parse_topology(spec).route(np.array([0]), np.array([1]), "valiant")


# --------------------------------------------------------------- closed forms

def one_step(spec, src, dst, m, ecmp="split", **net):
    traffic = pd.DataFrame({"step": 0, "src": src, "dst": dst, "bytes": m})
    return flowemu.time_traffic(spec, traffic, ecmp=ecmp, **net).iloc[0]["time_s"]


@pytest.mark.parametrize("gbw,rate", [(1, B / 4), (2, B / 2), (8, B / 2)])
def test_group_to_group_limited_by_global_link(gbw, rate):
    # a=2,p=2,h=1: 3 groups of 4 hosts, one global link per group pair; the
    # 4 hosts of group 0 send to group 1 at once and share it (each flow
    # also crosses up to two local links, each shared by 2 flows: B/2)
    spec = f"dragonfly:a=2,p=2,h=1,global={gbw}"
    m = 2.0**20
    src = np.arange(4)
    t = one_step(spec, src, src + 4, m)
    # longest path: router 1 -> router 0 -> global -> router ... -> router 1
    assert rate == min(gbw * B / 4, B / 2)
    assert t == pytest.approx(5 * (LINK + HOP) + m / rate, rel=1e-9)


def test_latency_per_class_and_valiant_longest_path():
    spec = "dragonfly:a=2,p=1,h=1,global_latency=10,local_latency=2"
    t = parse_topology(spec)
    m = 2.0**16
    # host 0 (router 0 of group 0) -> host 5 (router 1 of group 2): local,
    # global, local
    path = minimal_paths(t, out_links(t), 0, 5)
    assert len(path) == 1 and len(path[0][1]) == 5
    want = 5 * HOP + (2 * 1 + 2 * 2 + 10) * LINK + m / B
    assert one_step(spec, [0], [5], m) == pytest.approx(want, rel=1e-9)
    # Valiant: the slowest of the detours decides
    vp = valiant_paths(t, out_links(t), 0, 5)
    lat = t.link_latency(Network())
    slow = max(len(p) * HOP + lat[p].sum() for _, p in vp)
    r = t.route(np.array([0]), np.array([5]), "valiant")
    assert t.path_latency(r, lat)[0] == pytest.approx(max(lat[p].sum() for _, p in vp))
    assert r.hops[0] == max(len(p) for _, p in vp)
    assert one_step(spec, [0], [5], m, "valiant") == pytest.approx(slow + m / B, rel=1e-9)


# ----------------------------------------------------------------- the oracle

@pytest.mark.parametrize("spec", ["dragonfly:a=2,p=2,h=1", "dragonfly:a=2,p=1,h=2,g=3,global=0.5",
                                  "dragonfly:a=3,p=1,h=2,g=4"])
@pytest.mark.parametrize("ecmp", ["split", "hash", "valiant"])
def test_maxmin_oracle(spec, ecmp):
    t = parse_topology(spec)
    out = out_links(t)
    rng = np.random.default_rng(5)
    n = t.num_endpoints
    src = rng.integers(0, n, 3 * n)
    dst = (src + rng.integers(1, n, 3 * n)) % n
    nbytes = rng.uniform(1, 4, len(src)) * 2**20
    net = Network()
    lat = t.link_latency(net)
    cap = t.link_capacity(net)
    if ecmp == "hash":
        r = t.route(src, dst, ecmp)   # the hashed path itself, checked above
        flows = [list(zip(*map(np.ndarray.tolist, r.flow_links(f)), strict=True))
                 for f in range(len(src))]
        paths = [[(1.0, r.flow_links(f)[0].tolist())] for f in range(len(src))]
    else:
        paths = [(valiant_paths if ecmp == "valiant" else minimal_paths)(t, out, int(s), int(d))
                 for s, d in zip(src, dst, strict=True)]
        flows = [sorted(as_fracs(p).items()) for p in paths]
    _, finish, status = completion(flows, cap.tolist(), nbytes.tolist())
    assert status == 0
    flow_lat = [max((len(p) * HOP + lat[p].sum() for _, p in ps), default=0.0)
                for ps in paths]
    want = max(fl + fi for fl, fi in zip(flow_lat, finish, strict=True))
    got = one_step(spec, src, dst, nbytes, ecmp)
    assert got == pytest.approx(want, rel=1e-9)


# ----------------------------------------------------------------- algorithms

@pytest.mark.parametrize("alg", ["ring", "recdoub", "swing", "bucket"])
@pytest.mark.parametrize("ecmp", ["split", "hash", "valiant"])
def test_every_algorithm_runs(alg, ecmp):
    # 2 groups x 4 routers x 2 hosts = 16 hosts
    df = flowemu.simulate("dragonfly:a=4,p=2,h=1,g=2", alg, ["1KiB", "1MiB"], ecmp=ecmp)
    assert len(df) == 2 and (df["time_s"] > 0).all()
    assert df["time_s"].iloc[1] > df["time_s"].iloc[0]


def test_ring_one_router_closed_form():
    # all 4 hosts on one router: a ring of host links, 2 hops each step
    p, n = 4, 2.0**20
    df = flowemu.simulate("dragonfly:a=1,p=4,h=1,g=2", "ring:ports=1", n, ranks=4)
    assert df["time_s"].iloc[0] == pytest.approx(2 * (p - 1) * (2 * (LINK + HOP) + n / p / B),
                                                 rel=1e-9)


# ------------------------------------------------------------------ bad input

@pytest.mark.parametrize("spec,needle", [
    ("dragonfly:", "missing a, p, h"),
    ("dragonfly:a=4,p=2", "missing h"),
    ("dragonfly:a=0,p=2,h=2", "a (routers per group) is 0; expected an integer >= 1"),
    ("dragonfly:a=x,p=2,h=2", "a (routers per group) is 'x', not an integer"),
    ("dragonfly:a=4,p=2,h=2,g=1", "g (groups) is 1; expected an integer >= 2"),
    ("dragonfly:a=4,p=2,h=2,g=10", "g: 10 is not allowed; expected an integer in 2..9"),
    ("dragonfly:a=4,p=2,h=2,global=0", "global is '0'; expected a number > 0"),
    ("dragonfly:a=4,p=2,h=2,local_latency=-1", "local_latency is '-1'; expected a number >= 0"),
    ("dragonfly:a=4,p=2,h=2,k=3", "unknown option 'k'; options: a=INT"),
    ("dragonfly:a=4,p=2,h=2,routing=valiant", "the routing is chosen with ecmp, not in the spec"),
    ("dragonfly:a=4,p=2,h=2,a=3", "'a' is given twice"),
    ("dragonfly:a=4,p=2,h=2,g", "not key=value"),
    ("dragonfly:a=1024,p=1024,h=1024", "at most 16777216"),
    ("dragonfly:a=8192,p=1,h=1,g=2", "at most 67108864"),
])
def test_bad_specs(spec, needle, capsys):
    assert_bad_topology(capsys, spec, needle)


def test_bad_constructor_args():
    with pytest.raises(ConfigError, match=r"h: 0 is not allowed"):
        Dragonfly(2, 1, 0)
    with pytest.raises(ConfigError, match=r"a: True is not allowed"):
        Dragonfly(True, 1, 1)
    with pytest.raises(ConfigError, match=r"global_bw: nan is not allowed"):
        Dragonfly(2, 1, 1, global_bw=math.nan)


def test_cli_valiant_and_dor(capsys):
    code, out, _ = run(capsys, ["run", "-t", "dragonfly:a=2,p=2,h=1", "-a", "ring", "-s", "1KiB",
                                "--ecmp", "valiant"])
    assert code == 0 and out
    code, _, err = run(capsys, ["run", "-t", "dragonfly:a=2,p=2,h=1", "-a", "ring", "-s",
                                "1KiB", "--ecmp", "dor"])
    assert code == 2 and "ecmp: 'dor'" in one_error_line(err)


def test_router_links_may_have_no_latency():
    """local_latency=0 and global_latency=0 were refused (HammingMesh's
    board_latency=0 is taken). With them only the two host links of a path
    have latency: each of ring:ports=2's 2(p-1) steps then pays 2 link
    latencies, whatever the routers between (hop latency 0)."""
    spec = "dragonfly:a=4,p=2,h=2,local_latency=0,global_latency=0"
    assert Dragonfly(4, 2, 2, local_lat=0.0, global_lat=0.0).spec == parse_topology(spec).spec
    times = [flowemu.simulate(spec, "ring:ports=2", "1KiB", link_latency=lat,
                              hop_latency="0")["time_s"].iloc[0] for lat in ("100ns", "0")]
    p = parse_topology(spec).num_endpoints
    assert times[0] - times[1] == pytest.approx(2 * (p - 1) * 2 * 100e-9, rel=1e-9)
