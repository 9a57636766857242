"""graph topology: files read and refused, shortest-path routes against an
independent enumeration, a torus and a leaf-spine written as files give the
families' own routes and times, the max-min oracle, every algorithm."""

import json
import pickle
from collections import defaultdict, deque
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import flowemu
from flowemu.core.errors import ConfigError
from flowemu.core.network import Network
from flowemu.topology import Graph, parse_topology, topology_families
from tests.helpers.cli import one_error_line, run
from tests.helpers.maxmin_oracle import completion

B = 50e9
LINK, HOP = 100e-9, 300e-9
DATA = Path(__file__).parents[1] / "data"


def write(path, nodes, links):
    path.write_text(json.dumps({"nodes": nodes, "links": links}))
    return str(path)


def from_topology(path, topo):
    """A topology written as a graph file: its vertices (endpoints flagged)
    and its existing directed links in id order (a mesh's missing boundary
    links, which start and end at one node, left out)."""
    nodes = [{"id": v, "endpoint": v < topo.num_endpoints} for v in range(topo.num_nodes)]
    cap = topo.link_capacity(Network())
    keep = np.flatnonzero(topo.link_src != topo.link_dst)
    links = [{"src": int(topo.link_src[i]), "dst": int(topo.link_dst[i]),
              "bidirectional": False,
              **({"bandwidth": f"{cap[i] * 8 / 1e9:g}Gb/s"} if cap[i] != B else {})}
             for i in keep]
    return write(path, nodes, links)


def kept_ids(topo):
    """Topology link id of each link of :func:`from_topology`'s file."""
    return np.flatnonzero(topo.link_src != topo.link_dst)


def all_pairs(n):
    s, d = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    return s.ravel(), d.ravel()


def flow_dict(r, f):
    link, frac = r.flow_links(f)
    return dict(zip(link.tolist(), frac.tolist(), strict=True))


# ------------------------------------------------- independent shortest paths

def enumerate_paths(t, s, d):
    """All shortest paths s -> d (lists of link ids), by BFS from s and a walk
    along BFS levels that must end at d."""
    out = defaultdict(list)
    for lk, (u, v) in enumerate(zip(t.link_src.tolist(), t.link_dst.tolist(), strict=True)):
        out[u].append((lk, v))
    dist = {s: 0}
    q = deque([s])
    while q:
        u = q.popleft()
        for _, v in out[u]:
            if v not in dist:
                dist[v] = dist[u] + 1
                q.append(v)
    paths = []

    def walk(u, path):
        if u == d:
            paths.append(list(path))
            return
        for lk, v in out[u]:
            if dist.get(v) == dist[u] + 1 and dist[v] <= dist[d]:
                walk(v, path + [lk])

    walk(s, [])
    return paths


def weighted(t, s, d, split):
    """[(weight, path)]: per-hop even split (the weight of a path is the
    product of 1/(shortest next hops) at each vertex) or equal per path."""
    paths = enumerate_paths(t, s, d)
    if split == "paths":
        return [(1.0 / len(paths), p) for p in paths]
    nexts = defaultdict(set)
    for p in paths:
        for lk in p:
            nexts[int(t.link_src[lk])].add(lk)
    return [(float(np.prod([1.0 / len(nexts[int(t.link_src[lk])]) for lk in p])), p)
            for p in paths]


def fracs(paths):
    acc = defaultdict(float)
    for w, p in paths:
        for lk in p:
            acc[lk] += w
    return dict(acc)


def random_graph(tmp_path, seed, n_nodes=10, n_end=6, extra=8):
    rng = np.random.default_rng(seed)
    nodes = [{"id": f"v{i}", "endpoint": bool(i < n_end)} for i in rng.permutation(n_nodes)]
    names = [nd["id"] for nd in nodes]
    links = []
    # a random spanning tree keeps it connected; extra links make ties
    order = rng.permutation(n_nodes)
    pairs = [(order[i], order[rng.integers(0, i)]) for i in range(1, n_nodes)]
    pairs += [tuple(rng.choice(n_nodes, 2, replace=False)) for _ in range(extra)]
    for u, v in pairs:
        lk = {"src": names[u], "dst": names[v]}
        if rng.random() < 0.5:
            lk["bandwidth"] = f"{rng.choice([100, 200, 400, 800])}Gb/s"
        if rng.random() < 0.5:
            lk["latency"] = f"{rng.choice([50, 100, 700])}ns"
        links.append(lk)
    return write(tmp_path / f"rand{seed}.json", nodes, links)


# ------------------------------------------------------------------ structure

def test_toml_example_file():
    spec = f"graph:{DATA / 'graph_two_sites.toml'}"
    t = parse_topology(spec)
    assert (t.num_endpoints, t.num_nodes, t.num_links) == (4, 6, 10)
    assert t.node_names == ("a0", "a1", "b0", "b1", "swa", "swb")
    slow = (t.link_src >= 4) & (t.link_dst >= 4)
    assert slow.sum() == 2
    np.testing.assert_array_equal(t.link_bandwidth_abs[slow], 100e9 / 8)
    np.testing.assert_array_equal(t.link_latency_abs[slow], 1e-3)
    assert np.isnan(t.link_bandwidth_abs[~slow]).all()
    assert t.spec == spec and parse_topology(t.spec).spec == spec
    t2 = pickle.loads(pickle.dumps(t))
    np.testing.assert_array_equal(t2.link_dst, t.link_dst)
    assert t.describe()["endpoints"] == 4 and t.grid is None
    assert "FILE" in topology_families()["graph"]


def test_endpoints_first_in_file_order_and_link_order(tmp_path):
    spec = write(tmp_path / "g.json",
                 [{"id": "s"}, {"id": 7, "endpoint": True}, {"id": "x", "endpoint": True}],
                 [{"src": 7, "dst": "s", "count": 2},
                  {"src": "s", "dst": "x", "bidirectional": False},
                  {"src": "x", "dst": "s", "bidirectional": False}])
    t = Graph(spec)
    assert t.node_names == (7, "x", "s")
    # entry 0: two copies, each forward then back; entries 1 and 2: one way only
    assert list(zip(t.link_src.tolist(), t.link_dst.tolist())) == \
        [(0, 2), (2, 0), (0, 2), (2, 0), (2, 1), (1, 2)]


def test_slow_cross_site_link_dominates():
    spec = f"graph:{DATA / 'graph_two_sites.toml'}"
    m = 2.0**24
    # a0 -> b0 and a1 -> b1 share the 100 Gb/s link: 6.25e9 B/s each
    traffic = pd.DataFrame({"step": 0, "src": [0, 1], "dst": [2, 3], "bytes": m})
    t = flowemu.time_traffic(spec, traffic).iloc[0]["time_s"]
    assert t == pytest.approx(3 * HOP + 2 * LINK + 1e-3 + m / (100e9 / 8 / 2), rel=1e-9)


# --------------------------------------------------------------------- routes

@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("split", ["hop", "paths"])
def test_routes_match_enumeration(tmp_path, seed, split):
    t = parse_topology(f"graph:{random_graph(tmp_path, seed)}" +
                       (",split=paths" if split == "paths" else ""))
    src, dst = all_pairs(t.num_endpoints)
    r = t.route(src, dst, "split")
    h = t.route(src, dst, "hash", seed=seed)
    assert t.route_entries(src, dst, "split") == r.num_entries
    for f in range(len(src)):
        s, d = int(src[f]), int(dst[f])
        if s == d:
            assert r.hops[f] == 0 and not flow_dict(r, f)
            continue
        paths = weighted(t, s, d, split)
        assert r.hops[f] == h.hops[f] == len(paths[0][1])
        got, want = flow_dict(r, f), fracs(paths)
        assert set(got) == set(want)
        for lk, v in got.items():
            assert v == pytest.approx(want[lk], rel=1e-12)
        one = flow_dict(h, f)
        assert set(one.values()) == {1.0}
        assert any(sorted(p) == sorted(one) for _, p in paths)


def test_paths_split_differs_from_hop_split(tmp_path):
    # 3x3 mesh corner to the node (1, 2): 3 shortest paths; per hop the first
    # step is 1/2 each way, per path 1/3 down and 2/3 right
    topo = parse_topology("mesh:3x3")
    spec = from_topology(tmp_path / "m.json", topo)
    first = {}
    for split in ("hop", "paths"):
        t = Graph(spec, split)
        r = t.route(np.array([0]), np.array([5]))
        d = flow_dict(r, 0)
        first[split] = sorted(v for lk, v in d.items() if t.link_src[lk] == 0)
    assert first["hop"] == pytest.approx([0.5, 0.5])
    assert first["paths"] == pytest.approx([1 / 3, 2 / 3])


# ------------------------------------------------- the families written as files

@pytest.mark.parametrize("spec", ["torus:4x4", "torus:3x5", "torus:2x3", "mesh:3x4",
                                  "torus:4x2x3"])
def test_torus_as_file_same_routes(tmp_path, spec):
    topo = parse_topology(spec)
    t = Graph(from_topology(tmp_path / "t.json", topo))
    ids = kept_ids(topo)
    src, dst = all_pairs(topo.num_nodes)
    a, b = topo.route(src, dst, "split"), t.route(src, dst, "split")
    np.testing.assert_array_equal(a.hops, b.hops)
    for f in range(len(src)):
        da = flow_dict(a, f)
        db = {int(ids[lk]): v for lk, v in flow_dict(b, f).items()}
        assert set(da) == set(db)
        for lk, v in da.items():
            assert db[lk] == pytest.approx(v, rel=1e-12)


@pytest.mark.parametrize("spec", ["torus:4x4", "torus:3x4x2", "mesh:4x3"])
def test_torus_as_file_same_times(tmp_path, spec):
    topo = parse_topology(spec)
    path = from_topology(tmp_path / "t.json", topo)
    n = topo.num_nodes
    rng = np.random.default_rng(1)
    # a random permutation, then an all-to-all, then a shift by 5
    perm = rng.permutation(n)
    a2a_s, a2a_d = all_pairs(n)
    off = a2a_s != a2a_d
    steps = [(np.arange(n), perm), (a2a_s[off], a2a_d[off]), (np.arange(n), (np.arange(n) + 5) % n)]
    parts = [pd.DataFrame({"step": k, "src": s, "dst": d, "bytes": 2.0**20})
             for k, (s, d) in enumerate(steps)]
    traffic = pd.concat(parts)
    traffic = traffic[traffic.src != traffic.dst]
    ref = flowemu.time_traffic(spec, traffic).iloc[0]["time_s"]
    got = flowemu.time_traffic(f"graph:{path}", traffic).iloc[0]["time_s"]
    assert got == pytest.approx(ref, rel=1e-9)


@pytest.mark.parametrize("ls", ["leafspine:3x4x2", "leafspine:2x4x2,uplinks=2,uplink=2",
                                "leafspine:4x4x1"])
@pytest.mark.parametrize("alg", ["ring", "recdoub", "swing", "bucket"])
def test_leafspine_as_file_same_times(tmp_path, ls, alg):
    spec = from_topology(tmp_path / "ls.json", parse_topology(ls))
    ref = flowemu.simulate(ls, alg, ["1KiB", "4MiB"])["time_s"].to_numpy()
    got = flowemu.simulate(f"graph:{spec}", alg, ["1KiB", "4MiB"])["time_s"].to_numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-9)


# ----------------------------------------------------------------- the oracle

@pytest.mark.parametrize("seed", [4, 5])
@pytest.mark.parametrize("mode", ["hop", "paths", "hash"])
def test_maxmin_oracle(tmp_path, seed, mode):
    path = random_graph(tmp_path, seed)
    spec = f"graph:{path}" + (",split=paths" if mode == "paths" else "")
    t = parse_topology(spec)
    rng = np.random.default_rng(seed)
    n = t.num_endpoints
    src = rng.integers(0, n, 4 * n)
    dst = (src + rng.integers(1, n, 4 * n)) % n
    nbytes = rng.uniform(1, 4, len(src)) * 2**20
    net = Network()
    lat = t.link_latency(net)
    # capacities from the file's text, independently of link_capacity
    data = json.loads(Path(path).read_text())
    assert all(("bandwidth" in lk) == (not np.isnan(t.link_bandwidth_abs[2 * i]))
               for i, lk in enumerate(data["links"]))
    cap = np.where(np.isnan(t.link_bandwidth_abs), B, t.link_bandwidth_abs)
    if mode == "hash":
        r = t.route(src, dst, "hash", seed=9)
        paths = [[(1.0, r.flow_links(f)[0].tolist())] for f in range(len(src))]
        for f, ps in enumerate(paths):
            assert any(sorted(p) == sorted(ps[0][1]) for _, p in
                       weighted(t, int(src[f]), int(dst[f]), "paths"))
    else:
        paths = [weighted(t, int(s), int(d), mode) for s, d in zip(src, dst, strict=True)]
    flows = [sorted(fracs(ps).items()) for ps in paths]
    _, finish, status = completion(flows, cap.tolist(), nbytes.tolist())
    assert status == 0
    flow_lat = [max(len(p) * HOP + lat[p].sum() for _, p in ps) for ps in paths]
    want = max(a + b for a, b in zip(flow_lat, finish, strict=True))
    traffic = pd.DataFrame({"step": 0, "src": src, "dst": dst, "bytes": nbytes})
    got = flowemu.time_traffic(spec, traffic, ecmp="hash" if mode == "hash" else "split",
                               seed=9 if mode == "hash" else 0).iloc[0]["time_s"]
    assert got == pytest.approx(want, rel=1e-9)


def test_split_latency_is_the_longest_path(tmp_path):
    # two 2-hop paths from e0 to e1, one with a 1 us link
    spec = write(tmp_path / "d.json",
                 [{"id": "e0", "endpoint": True}, {"id": "e1", "endpoint": True},
                  {"id": "x"}, {"id": "y"}],
                 [{"src": "e0", "dst": "x"}, {"src": "x", "dst": "e1", "latency": "1us"},
                  {"src": "e0", "dst": "y"}, {"src": "y", "dst": "e1"}])
    traffic = pd.DataFrame({"step": [0], "src": [0], "dst": [1], "bytes": [2.0**20]})
    got = flowemu.time_traffic(f"graph:{spec}", traffic).iloc[0]["time_s"]
    # two paths at B each: 2B together
    assert got == pytest.approx(2 * HOP + LINK + 1e-6 + 2.0**20 / (2 * B), rel=1e-9)


@pytest.mark.parametrize("alg", ["ring", "recdoub", "swing", "bucket"])
@pytest.mark.parametrize("ecmp", ["split", "hash"])
def test_every_algorithm_runs(alg, ecmp):
    spec = f"graph:{DATA / 'graph_two_sites.toml'}"
    df = flowemu.simulate(spec, alg, ["1KiB", "1MiB"], ecmp=ecmp)
    assert len(df) == 2 and (df["time_s"] > 1e-3).all()


def test_thousands_of_nodes(tmp_path):
    # a 64x64 torus as a file: all-to-one-offset traffic routes like the torus
    topo = parse_topology("torus:64x64")
    t = Graph(from_topology(tmp_path / "big.json", topo))
    src = np.arange(topo.num_nodes)
    dst = (src + 64 * 3 + 5) % topo.num_nodes
    a, b = topo.route(src, dst), t.route(src, dst)
    np.testing.assert_array_equal(a.flow_ptr, b.flow_ptr)
    np.testing.assert_array_equal(a.hops, b.hops)
    ka = np.lexsort((a.link, np.repeat(np.arange(len(src)), np.diff(a.flow_ptr))))
    kb = np.lexsort((b.link, np.repeat(np.arange(len(src)), np.diff(b.flow_ptr))))
    np.testing.assert_array_equal(a.link[ka], b.link[kb])
    np.testing.assert_allclose(a.frac[ka], b.frac[kb], rtol=1e-12)


# ------------------------------------------------------------------ bad input

def bad_files(tmp_path):
    ok_nodes = [{"id": "a", "endpoint": True}, {"id": "b", "endpoint": True}]
    cases = {
        "missing.json": (None, "no such file"),
        "net.txt": ("{}", "unknown format '.txt'"),
        "syntax.json": ('{"nodes": [\n  {"id": "a",,}\n]}', "malformed JSON at line 2"),
        "syntax.toml": ("nodes = [\n{ id = }\n]", "malformed TOML"),
        "list.json": ("[]", "expected an object with 'nodes' and 'links'"),
        "nolinks.json": (json.dumps({"nodes": ok_nodes}), "'links' must be a list (missing)"),
        "extra.json": (json.dumps({"nodes": ok_nodes, "links": [], "edges": []}),
                       "unknown key 'edges'"),
        "noid.json": (json.dumps({"nodes": [{"endpoint": True}], "links": []}),
                      "nodes[0]: missing 'id'"),
        "dup.json": (json.dumps({"nodes": ok_nodes + [{"id": "a"}], "links": []}),
                     "nodes[2]: id 'a' is already nodes[0]"),
        "flag.json": (json.dumps({"nodes": [{"id": "a", "endpoint": "yes"}], "links": []}),
                      "nodes[0]: endpoint 'yes' must be true or false"),
        "nodekey.json": (json.dumps({"nodes": [{"id": "a", "kind": "host"}], "links": []}),
                         "nodes[0]: unknown key 'kind'"),
        "oneend.json": (json.dumps({"nodes": [{"id": "a", "endpoint": True}], "links": []}),
                        "1 endpoint(s); at least 2"),
        "unknown.json": (json.dumps({"nodes": ok_nodes, "links": [{"src": "a", "dst": "c"}]}),
                         "links[0]: dst 'c' is not a node id of the file"),
        "loop.json": (json.dumps({"nodes": ok_nodes, "links": [{"src": "a", "dst": "a"}]}),
                      "links[0]: src and dst are both 'a'"),
        "units.json": (json.dumps({"nodes": ok_nodes, "links": [
            {"src": "a", "dst": "b"}, {"src": "a", "dst": "b", "bandwidth": "100Gb"}]}),
            "links[1]: bandwidth"),
        "bare.json": (json.dumps({"nodes": ok_nodes, "links": [
            {"src": "a", "dst": "b", "bandwidth": 5e10}]}),
            "links[0]: bandwidth 50000000000.0 must be a rate with its unit"),
        "lat.json": (json.dumps({"nodes": ok_nodes, "links": [
            {"src": "a", "dst": "b", "latency": "100"}]}), "links[0]: latency"),
        "count.json": (json.dumps({"nodes": ok_nodes, "links": [
            {"src": "a", "dst": "b", "count": 0}]}), "links[0]: count 0 must be an integer >= 1"),
        "bidi.json": (json.dumps({"nodes": ok_nodes, "links": [
            {"src": "a", "dst": "b", "bidirectional": 1}]}),
            "links[0]: bidirectional 1 must be true or false"),
    }
    for name, (text, _) in cases.items():
        if text is not None:
            (tmp_path / name).write_text(text)
    return {str(tmp_path / name): needle for name, (_, needle) in cases.items()}


def test_bad_files(tmp_path, capsys):
    for path, needle in bad_files(tmp_path).items():
        spec = f"graph:{path}"
        with pytest.raises(ConfigError) as exc:
            parse_topology(spec)
        msg = str(exc.value)
        assert msg.startswith(f"topology {spec!r}: graph file {path!r}: "), msg
        assert needle in msg and "\n" not in msg, msg
        code, _, err = run(capsys, ["run", "-t", spec, "-a", "ring", "-s", "1KiB"])
        assert code == 2 and needle in one_error_line(err)


@pytest.mark.parametrize("spec,needle", [
    ("graph:", "no file given"),
    ("graph:  ,split=paths", "no file given"),
    ("graph:x.json,split=none", "split is 'none'; expected one of hop, paths"),
])
def test_bad_specs(spec, needle, capsys):
    with pytest.raises(ConfigError, match=needle):
        parse_topology(spec)
    code, _, err = run(capsys, ["run", "-t", spec, "-a", "ring", "-s", "1KiB"])
    assert code == 2 and needle in one_error_line(err)


def test_directory_and_unreadable(tmp_path):
    d = tmp_path / "dir.json"
    d.mkdir()
    with pytest.raises(ConfigError, match="is a directory"):
        Graph(str(d))
    bad = tmp_path / "bin.json"
    bad.write_bytes(b"\xff\xfe{")
    with pytest.raises(ConfigError, match="not UTF-8"):
        Graph(str(bad))


def test_disconnected_endpoints_are_refused_when_the_file_is_read(tmp_path, capsys):
    """A rank cut off from the others is a mistake in the file: refused when
    the graph is built (one line, exit 2), naming the pair, before any run."""
    spec = write(tmp_path / "two.json",
                 [{"id": "a", "endpoint": True}, {"id": "b", "endpoint": True},
                  {"id": "c", "endpoint": True}],
                 [{"src": "a", "dst": "b"}, {"src": "b", "dst": "c", "bidirectional": False}])
    with pytest.raises(ConfigError, match=r"endpoint 'c' cannot reach 'a' \(no path"):
        Graph(spec)
    lone = write(tmp_path / "lone.json",
                 [{"id": "a", "endpoint": True}, {"id": "b", "endpoint": True},
                  {"id": "c", "endpoint": True}, {"id": "s"}],
                 [{"src": "a", "dst": "s"}, {"src": "c", "dst": "s"}])
    with pytest.raises(ConfigError, match=r"endpoint 'a' cannot reach 'b'"):
        Graph(lone)
    code, _, err = run(capsys, ["run", "-t", f"graph:{spec}", "-a", "ring", "-s", "1KiB"])
    assert code == 2 and "'c' cannot reach 'a'" in one_error_line(err)


def test_misspelled_option_is_named(capsys):
    spec = f"graph:{DATA / 'graph_two_sites.toml'},splt=hop"
    code, _, err = run(capsys, ["run", "-t", spec, "-a", "ring", "-s", "1KiB"])
    assert code == 2 and "unknown option 'splt'; options: split=hop|paths" in one_error_line(err)


def test_modes_refused():
    t = parse_topology(f"graph:{DATA / 'graph_two_sites.toml'}")
    for mode in ("dor", "valiant"):
        with pytest.raises(ConfigError, match=rf"ecmp: '{mode}'.*allowed: split, hash"):
            t.route(np.array([0]), np.array([1]), mode)
