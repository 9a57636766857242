"""fattree topology: structure, routes against an enumeration of shortest
paths, the max-min oracle, closed-form rates, bad specs."""

import math
import pickle
from collections import deque

import numpy as np
import pandas as pd
import pytest

import flowemu
from flowemu.core.errors import ConfigError
from flowemu.core.network import Network
from flowemu.engine.profiles import make_context
from flowemu.engine.steps import solve_step
from flowemu.kernels.maxmin import completion_method, solve_completion
from flowemu.topology import FatTree, parse_topology, topology_families
from tests.helpers.cli import assert_bad_topology, one_error_line, run
from tests.helpers.maxmin_oracle import completion, csr_to_lists

B = 50e9          # 400 Gb/s in bytes/s
LAT = 400e-9      # link 100 ns + hop 300 ns


# ------------------------------------------------------------------ helpers

def expected_links(k, levels):
    """Undirected switch/host adjacency of the fat tree as the papers describe
    it, with the vertex numbering of the module docstring, as a set of
    (u, v) pairs in both directions (written with plain loops)."""
    h = k // 2
    pairs = set()
    if levels == 3:
        n = k * h * h
        edge = lambda q, e: n + q * h + e
        agg = lambda q, j: n + k * h + q * h + j
        core = lambda c: n + 2 * k * h + c
        for q in range(k):
            for e in range(h):
                for p in range(h):
                    pairs.add((q * h * h + e * h + p, edge(q, e)))
                for j in range(h):
                    pairs.add((edge(q, e), agg(q, j)))
            for j in range(h):
                for m in range(h):
                    pairs.add((agg(q, j), core(j * h + m)))
    else:
        n = k * h
        for leaf in range(k):
            for p in range(h):
                pairs.add((leaf * h + p, n + leaf))
            for s in range(h):
                pairs.add((n + leaf, n + k + s))
    return pairs | {(v, u) for u, v in pairs}


def shortest_paths(t, s, d):
    """Every shortest path from host s to host d as a list of link ids, by a
    BFS from d over reversed links and a walk down the distances."""
    out_links = [[] for _ in range(t.num_nodes)]
    in_links = [[] for _ in range(t.num_nodes)]
    for link, (u, v) in enumerate(zip(t.link_src.tolist(), t.link_dst.tolist())):
        out_links[u].append(link)
        in_links[v].append(link)
    dist = {d: 0}
    queue = deque([d])
    while queue:
        v = queue.popleft()
        for link in in_links[v]:
            u = int(t.link_src[link])
            if u not in dist:
                dist[u] = dist[v] + 1
                queue.append(u)
    paths = []

    def walk(v, path):
        if v == d:
            paths.append(list(path))
            return
        for link in out_links[v]:
            w = int(t.link_dst[link])
            # hosts are endpoints, never transit vertices
            if dist.get(w, math.inf) == dist[v] - 1 and (w == d or w >= t.num_endpoints):
                path.append(link)
                walk(w, path)
                path.pop()

    walk(s, [])
    return paths


def _all_pairs(n):
    src, dst = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    return src.ravel(), dst.ravel()


def solve_like_engine(t, routes, dst, flow_bytes, ecmp):
    """Rates and finish times as the engine computes them (reduced problem)."""
    ctx = make_context(t, Network(), ecmp=ecmp)
    return solve_step(ctx, routes, dst, flow_bytes, "test")


# ------------------------------------------------------------------ structure

@pytest.mark.parametrize("spec,k,levels,taper", [
    ("fattree:k=4", 4, 3, (1.0, 1.0)),
    ("fattree:k=6,taper=2:3", 6, 3, (2.0, 3.0)),
    ("fattree:k=8,levels=2", 8, 2, (1.0,)),
    (" fattree: taper = 2.5 , k = 6 ", 6, 3, (2.5, 1.0)),
    ("fattree:k=6,levels=2,taper=4", 6, 2, (4.0,)),
    ("fattree:k=2", 2, 3, (1.0, 1.0)),
])
def test_shape_links_and_capacities(spec, k, levels, taper):
    t = parse_topology(spec)
    h = k // 2
    n = k**3 // 4 if levels == 3 else k * k // 2
    switches = 2 * k * h + h * h if levels == 3 else k + h
    assert (t.num_endpoints, t.num_nodes) == (n, n + switches)
    assert t.num_links == (6 if levels == 3 else 4) * n
    got = list(zip(t.link_src.tolist(), t.link_dst.tolist()))
    assert len(set(got)) == len(got)                      # no parallel links
    assert set(got) == expected_links(k, levels)
    # capacity of a link from the tiers of its ends: host links 1, the tier
    # above the edge 1/R1, the tier above the aggregation 1/(R1·R2)
    tier = np.zeros(t.num_nodes, dtype=int)
    tier[n:n + (k * h if levels == 3 else k)] = 1
    if levels == 3:
        tier[n + k * h:n + 2 * k * h] = 2
        tier[n + 2 * k * h:] = 3
    else:
        tier[n + k:] = 2
    top = np.maximum(tier[t.link_src], tier[t.link_dst])
    expect = np.select([top == 1, top == 2, top == 3],
                       [1.0, 1.0 / taper[0], 1.0 / np.prod(taper)])
    np.testing.assert_allclose(t.link_capacity_scale, expect, rtol=1e-15)
    assert t.taper == taper and t.oversubscription == pytest.approx(np.prod(taper))
    d = t.describe()
    assert (d["family"], d["k"], d["levels"], d["hosts"], d["links"]) == \
        ("fattree", k, levels, n, t.num_links)
    assert sum(d["switches"].values()) == switches
    # the canonical spec parses back to the same tree, and pickles by value
    assert parse_topology(t.spec).spec == t.spec
    t2 = pickle.loads(pickle.dumps(t))
    assert t2.spec == t.spec
    np.testing.assert_array_equal(t2.link_dst, t.link_dst)
    np.testing.assert_array_equal(t2.link_capacity_scale, t.link_capacity_scale)
    assert t.grid is None


@pytest.mark.parametrize("spec,canonical", [
    ("fattree:k=8", "fattree:k=8"),
    ("fattree:k=8,levels=3", "fattree:k=8"),
    ("fattree:k=8,taper=2:1", "fattree:k=8,taper=2"),
    ("fattree:k=8,taper=1:1", "fattree:k=8"),
    ("fattree:taper=1:4,k=8", "fattree:k=8,taper=1:4"),
    ("fattree:k=8,levels=2,taper=0.5", "fattree:k=8,levels=2,taper=0.5"),
])
def test_canonical_spec(spec, canonical):
    assert parse_topology(spec).spec == canonical


def test_registry_doc():
    doc = topology_families()["fattree"]
    assert "k=K" in doc and "levels=" in doc and "taper=" in doc


# --------------------------------------------------------------------- routes

@pytest.mark.parametrize("spec", ["fattree:k=4", "fattree:k=4,levels=2",
                                  "fattree:k=6,levels=2,taper=2"])
def test_split_routes_match_shortest_path_enumeration(spec):
    t = parse_topology(spec)
    src, dst = _all_pairs(t.num_endpoints)
    r = t.route(src, dst, "split")
    assert t.route_entries(src, dst, "split") == r.num_entries
    assert np.diff(r.flow_ptr).max() == t.max_route_entries("split")
    for f in range(r.num_flows):
        link, frac = r.flow_links(f)
        if src[f] == dst[f]:
            assert len(link) == 0 and r.hops[f] == 0
            continue
        paths = shortest_paths(t, int(src[f]), int(dst[f]))
        assert r.hops[f] == len(paths[0])
        # an even split over all minimal paths: each link carries the share
        # of the paths through it
        share = {}
        for path in paths:
            for x in path:
                share[x] = share.get(x, 0) + 1 / len(paths)
        assert len(set(link.tolist())) == len(link)
        assert dict(zip(link.tolist(), frac.tolist())) == pytest.approx(share, rel=1e-12)


def test_split_fractions_closed_form_k40():
    t = parse_topology("fattree:k=40")
    h = 20
    # same edge, same pod, across pods
    r = t.route(np.array([0, 0, 0]), np.array([1, h, h * h]), "split")
    np.testing.assert_array_equal(np.diff(r.flow_ptr), [2, 2 + 2 * h, 842])
    np.testing.assert_array_equal(r.hops, [2, 4, 6])
    _, frac = r.flow_links(2)
    np.testing.assert_allclose(np.sort(frac), np.sort(
        [1.0] * 2 + [1 / h] * 2 * h + [1 / h**2] * 2 * h**2), rtol=1e-15)


@pytest.mark.parametrize("spec", ["fattree:k=4", "fattree:k=6", "fattree:k=6,levels=2"])
@pytest.mark.parametrize("ecmp", ["hash", "dmodk"])
def test_single_path_is_a_shortest_path(spec, ecmp):
    t = parse_topology(spec)
    src, dst = _all_pairs(t.num_endpoints)
    r = t.route(src, dst, ecmp, seed=3 if ecmp == "hash" else 0)
    assert t.route_entries(src, dst, ecmp) == r.num_entries
    assert np.diff(r.flow_ptr).max() == t.max_route_entries(ecmp)
    for f in range(r.num_flows):
        link, frac = r.flow_links(f)
        if src[f] == dst[f]:
            assert len(link) == 0
            continue
        np.testing.assert_array_equal(frac, 1.0)
        paths = shortest_paths(t, int(src[f]), int(dst[f]))
        assert link.tolist() in paths and r.hops[f] == len(link)


def test_hash_deterministic_seeded_and_spread():
    t = parse_topology("fattree:k=8")
    h, n = 4, t.num_endpoints
    src, dst = _all_pairs(n)
    cross = src // (h * h) != dst // (h * h)
    src, dst = src[cross], dst[cross]
    r1 = t.route(src, dst, "hash", seed=1)
    r1b = t.route(src, dst, "hash", seed=1)
    r2 = t.route(src, dst, "hash", seed=2)
    np.testing.assert_array_equal(r1.link, r1b.link)
    assert (r2.link != r1.link).any()
    up_core = r1.link.reshape(-1, 6)[:, 2]            # agg -> core hop
    core = t.link_dst[up_core]
    # the 7,168 cross-pod flows of one seed use every core
    assert len(np.unique(core)) == h * h
    # the choice depends on the source too (a switch hashes the header)
    same_dst = dst == dst[0]
    assert len(np.unique(core[same_dst])) > 1


def test_dmodk_rule():
    t = parse_topology("fattree:k=8")
    h, n = 4, t.num_endpoints
    src, dst = _all_pairs(n)
    cross = src // (h * h) != dst // (h * h)
    src, dst = src[cross], dst[cross]
    path = t.route(src, dst, "dmodk").link.reshape(-1, 6)
    # the agg reached from the edge: index within its pod is d mod (k/2)
    agg_vertex = t.link_dst[path[:, 1]]
    first_agg = n + 8 * h
    np.testing.assert_array_equal((agg_vertex - first_agg) % h, dst % h)
    # the core: m = floor(d / (k/2)) mod (k/2) within agg group j
    core = t.link_dst[path[:, 2]] - (first_agg + 8 * h)
    np.testing.assert_array_equal(core, (dst % h) * h + (dst // h) % h)
    # every core -> agg and agg -> edge link carries the flows of one
    # destination only
    for hop in (3, 4):
        per_link = pd.Series(dst).groupby(path[:, hop]).nunique()
        assert (per_link == 1).all()
    # the route does not depend on the source beyond its edge switch
    a = t.route(np.array([0, 1]), np.array([100, 100]), "dmodk").link.reshape(2, 6)
    np.testing.assert_array_equal(a[0, 1:], a[1, 1:])


def test_modes_refused_with_allowed_list():
    t = parse_topology("fattree:k=4")
    with pytest.raises(ConfigError, match=r"ecmp: 'dor' does not apply to fattree:k=4; "
                                          r"allowed: split, hash, dmodk"):
        t.route(np.array([0]), np.array([3]), "dor")
    with pytest.raises(ConfigError, match="ecmp: 'dor'"):
        t.max_route_entries("dor")
    with pytest.raises(ConfigError, match="ecmp: 'ecmp' is not allowed"):
        flowemu.simulate("fattree:k=4", "ring", "1KiB", ecmp="ecmp")
    with pytest.raises(ConfigError, match=r"ecmp: 'dmodk' does not apply to leafspine:2x2x2; "
                                          r"allowed: split, hash"):
        parse_topology("leafspine:2x2x2").route(np.array([0]), np.array([3]), "dmodk")
    with pytest.raises(ConfigError, match=r"ecmp: 'dmodk' does not apply to torus:4x4; "
                                          r"allowed: split, dor, hash"):
        parse_topology("torus:4x4").route(np.array([0]), np.array([3]), "dmodk")
    for spec in ("torus:4x4", "mesh:4", "leafspine:2x2x2"):
        with pytest.raises(ConfigError, match="ecmp: 'dmodk'"):
            flowemu.simulate(spec, "ring", "1KiB", ecmp="dmodk")
        with pytest.raises(ConfigError, match="ecmp: 'dmodk'"):
            parse_topology(spec).max_route_entries("dmodk")


@pytest.mark.parametrize("spec,ecmp", [("fattree:k=4", "dor"), ("torus:4x4", "dmodk"),
                                       ("leafspine:2x2x2", "dmodk")])
def test_cli_refuses_mode_in_one_line(capsys, spec, ecmp):
    code, _, err = run(capsys, ["run", "-t", spec, "-a", "ring", "-s", "1KiB", "--ecmp", ecmp])
    assert code == 2
    assert f"ecmp: {ecmp!r}" in one_error_line(err)


def test_bad_flow_ids():
    t = parse_topology("fattree:k=4")
    with pytest.raises(flowemu.core.errors.RoutingError, match="host ids must lie in 0..15"):
        t.route(np.array([0]), np.array([16]))


# ------------------------------------------------- the oracle on small trees

@pytest.mark.parametrize("spec", ["fattree:k=4", "fattree:k=4,taper=2:3",
                                  "fattree:k=6,taper=1:2", "fattree:k=6,levels=2,taper=3",
                                  "fattree:k=4,levels=2"])
@pytest.mark.parametrize("ecmp", ["split", "hash", "dmodk"])
def test_engine_solve_matches_oracle(spec, ecmp):
    """The engine's solve (split: the reduced problem, the tree's re-solve
    mode) against the pure-Python oracle on the full routes."""
    t = parse_topology(spec)
    rng = np.random.default_rng(hash((spec, ecmp)) % 2**32)
    n = t.num_endpoints
    cap = t.link_capacity(Network())
    for _ in range(3):
        f = int(rng.integers(1, 2 * n + 1))
        src, dst = rng.integers(0, n, f), rng.integers(0, n, f)
        flow_bytes = rng.uniform(1e3, 1e6, f)
        routes = t.route(src, dst, ecmp, seed=5)
        sol = solve_like_engine(t, routes, dst, flow_bytes, ecmp)
        o_rate0, o_finish, o_status = completion(
            csr_to_lists(routes.flow_ptr, routes.link, routes.frac), list(cap), list(flow_bytes))
        assert sol.status == o_status == 0
        np.testing.assert_allclose(sol.rate0, o_rate0, rtol=1e-9)
        np.testing.assert_allclose(sol.finish, o_finish, rtol=1e-9)


@pytest.mark.parametrize("spec", ["fattree:k=6,taper=2:3", "fattree:k=4,levels=2"])
@pytest.mark.parametrize("method", ["auto", "incremental", "screened"])
def test_reduced_problem_exact_with_uneven_link_capacities(spec, method):
    """The merged uplink groups take |G|·(smallest capacity of the group):
    exact even when the links of a group differ (a degraded link)."""
    t = parse_topology(spec)
    rng = np.random.default_rng(7)
    n = t.num_endpoints
    cap = t.link_capacity(Network()) * rng.uniform(0.3, 1.7, t.num_links)
    src, dst = rng.integers(0, n, 3 * n), rng.integers(0, n, 3 * n)
    flow_bytes = rng.uniform(1.0, 2.0, 3 * n)
    full = t.route(src, dst, "split")
    reduced, rcap = t.solver_problem(full, cap, "split")
    assert reduced.num_entries < full.num_entries
    assert np.diff(reduced.flow_ptr).max() <= 6
    np.testing.assert_array_equal(reduced.hops, full.hops)
    sol = solve_completion(reduced, rcap, flow_bytes, method=method)
    o_rate0, o_finish, _ = completion(csr_to_lists(full.flow_ptr, full.link, full.frac),
                                      list(cap), list(flow_bytes))
    np.testing.assert_allclose(sol.rate0, o_rate0, rtol=1e-9)
    np.testing.assert_allclose(sol.finish, o_finish, rtol=1e-9)


def test_solver_is_chosen_from_the_problem_not_the_family():
    """A fat tree's reduced split problem has at most 6 entries a flow: the
    incremental solver, tapered or not; the family has no say."""
    for spec in ("fattree:k=8", "fattree:k=8,taper=2"):
        topo = parse_topology(spec)
        assert not hasattr(topo, "solver_resolve")
        src = np.arange(topo.num_endpoints)
        routes, _ = topo.solver_routes(src, src[::-1].copy(), "split",
                                       np.asarray(topo.link_capacity_scale, float))
        assert completion_method(routes.flow_ptr) == "incremental"


def test_single_path_problem_is_not_reduced():
    t = parse_topology("fattree:k=4")
    r = t.route(np.arange(8), np.arange(8, 16), "hash")
    cap = t.link_capacity(Network())
    r2, cap2 = t.solver_problem(r, cap, "hash")
    assert r2 is r and cap2 is cap
    # other families keep their problem
    torus = parse_topology("torus:4x4")
    tr = torus.route(np.array([0]), np.array([5]))
    assert torus.solver_problem(tr, np.ones(torus.num_links), "split")[0] is tr


# --------------------------------------------------------------- closed forms

@pytest.mark.parametrize("spec", ["fattree:k=8", "fattree:k=6", "fattree:k=8,levels=2"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_non_blocking_any_permutation_full_rate(spec, seed):
    """Split routes: an edge's uplinks carry at most its k/2 hosts' flows at
    1/(k/2) each (likewise the agg-core links of a pod), so every flow of a
    permutation runs at the host link rate B."""
    t = parse_topology(spec)
    n = t.num_endpoints
    rng = np.random.default_rng(seed)
    src = np.arange(n)
    dst = rng.permutation(n)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    routes = t.route(src, dst, "split")
    m = 2.0**20
    sol = solve_like_engine(t, routes, dst, np.full(len(src), m), "split")
    np.testing.assert_allclose(sol.rate0, B, rtol=1e-12)
    traffic = pd.DataFrame({"step": 0, "src": src, "dst": dst, "bytes": m})
    row = flowemu.time_traffic(spec, traffic).iloc[0]
    assert row["time_s"] == pytest.approx(routes.hops.max() * LAT + m / B, rel=1e-12)


@pytest.mark.parametrize("spec", ["fattree:k=8", "fattree:k=6,levels=2"])
@pytest.mark.parametrize("shift", [1, 3, 7, 16, 21])
def test_dmodk_shift_permutation_non_blocking(spec, shift):
    """Zahavi: d-mod-k routes every shift permutation d = s + c without
    contention, so every flow gets B."""
    t = parse_topology(spec)
    n = t.num_endpoints
    src = np.arange(n)
    dst = (src + shift) % n
    routes = t.route(src, dst, "dmodk")
    sol = solve_like_engine(t, routes, dst, np.ones(n), "dmodk")
    np.testing.assert_allclose(sol.rate0, B, rtol=1e-12)


@pytest.mark.parametrize("spec,per_host", [
    ("fattree:k=8,taper=2", B / 2),            # edge tier 2:1
    ("fattree:k=8,taper=4:1", B / 4),
    ("fattree:k=8,taper=1:4", B / 4),          # only the core links taper
    ("fattree:k=8,taper=2:3", B / 6),          # tapers multiply
    ("fattree:k=6,taper=0.5", B),              # fat uplinks: host links bind
    ("fattree:k=8,levels=2,taper=3", B / 3),
])
@pytest.mark.parametrize("ecmp", ["split", "dmodk"])
def test_cross_pod_load_limited_by_taper(spec, per_host, ecmp):
    """Every host sends to the host half the tree away (another pod, or
    leaf): each edge's k/2 flows share its uplinks of k/2 · B/R1, each pod's
    (k/2)² flows its core links of (k/2)² · B/(R1·R2). d-mod-k routes this
    shift without contention, so it gets the same."""
    t = parse_topology(spec)
    n = t.num_endpoints
    src = np.arange(n)
    dst = (src + n // 2) % n
    routes = t.route(src, dst, ecmp)
    hops = 6 if t.levels == 3 else 4
    np.testing.assert_array_equal(routes.hops, hops)
    m = 2.0**20
    sol = solve_like_engine(t, routes, dst, np.full(n, m), ecmp)
    np.testing.assert_allclose(sol.rate0, per_host, rtol=1e-12)
    traffic = pd.DataFrame({"step": 0, "src": src, "dst": dst, "bytes": m})
    row = flowemu.time_traffic(spec, traffic, ecmp=ecmp).iloc[0]
    assert row["time_s"] == pytest.approx(hops * LAT + m / per_host, rel=1e-12)


def test_within_pod_traffic_ignores_core_taper():
    """Flows between edge switches of one pod turn at the aggregation tier:
    taper=1:4 leaves them at B, taper=4 cuts them to B/4."""
    for spec, rate in (("fattree:k=8,taper=1:4", B), ("fattree:k=8,taper=4", B / 4)):
        t = parse_topology(spec)
        n, h = t.num_endpoints, 4
        src = np.arange(n)
        pod0 = src - src % (h * h)
        dst = pod0 + (src % (h * h) + h) % (h * h)      # next edge, same pod
        routes = t.route(src, dst, "split")
        np.testing.assert_array_equal(routes.hops, 4)
        sol = solve_like_engine(t, routes, dst, np.ones(n), "split")
        np.testing.assert_allclose(sol.rate0, rate, rtol=1e-12)


def test_all_to_all_non_blocking_host_link_bound():
    """All-to-all on a non-blocking tree: each host link carries N-1 flows,
    and no uplink more than its share, so every flow gets B/(N-1)."""
    t = parse_topology("fattree:k=4")
    n = t.num_endpoints
    src, dst = _all_pairs(n)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    sol = solve_like_engine(t, t.route(src, dst, "split"), dst, np.ones(len(src)), "split")
    np.testing.assert_allclose(sol.rate0, B / (n - 1), rtol=1e-12)


@pytest.mark.parametrize("spec", ["fattree:k=4", "fattree:k=4,levels=2",
                                  "fattree:k=4,taper=2"])
@pytest.mark.parametrize("ecmp", ["split", "hash", "dmodk"])
def test_every_algorithm_runs(spec, ecmp):
    for alg in ("ring", "recdoub", "swing", "bucket"):
        df = flowemu.simulate(spec, alg, "1MiB", ecmp=ecmp)
        assert len(df) >= 1 and (df["time_s"] > 0).all()
        assert (df["topology"] == parse_topology(spec).spec).all()


@pytest.mark.parametrize("k,taper", [(4, 1), (6, 2), (8, 3)])
def test_two_levels_equal_the_leafspine_fabric(k, taper):
    """levels=2 is leafspine:Kx(K/2)x(K/2) with uplinks of 1/taper: the same
    times for every algorithm (split routes; the leaf-spine family solves
    its full routes, the fat tree its merged uplink groups)."""
    ft = f"fattree:k={k},levels=2,taper={taper}"
    ls = f"leafspine:{k}x{k // 2}x{k // 2},uplink={1 / taper!r}"
    assert parse_topology(ls).num_links == parse_topology(ft).num_links
    for alg in ("ring", "recdoub", "swing", "bucket"):
        a = flowemu.simulate(ft, alg, "1KiB,64MiB")["time_s"].to_numpy()
        b = flowemu.simulate(ls, alg, "1KiB,64MiB")["time_s"].to_numpy()
        np.testing.assert_allclose(a, b, rtol=1e-9)


@pytest.mark.parametrize("spec", ["fattree:k=2", "fattree:k=2,levels=2"])
def test_smallest_tree_two_hosts(spec):
    t = parse_topology(spec)
    assert t.num_endpoints == 2
    hops = 6 if t.levels == 3 else 4
    r = t.route(np.array([0, 1]), np.array([1, 0]), "split")
    np.testing.assert_array_equal(r.hops, hops)
    m = 2.0**20
    df = flowemu.simulate(spec, "ring:ports=1", [m])
    # two ranks: 2 steps of n/2 each way at B
    assert df["time_s"].iloc[0] == pytest.approx(2 * (hops * LAT + m / 2 / B), rel=1e-9)


def test_ring_on_non_blocking_tree_closed_form():
    """A unidirectional ring on ranks 0..N-1: every step is the shift by one,
    a permutation, so each step takes (hops of the farthest neighbour)·LAT +
    (n/N)/B (bandwidth-optimal ring, 2(N-1) steps)."""
    spec = "fattree:k=4"
    n, m = 16, 2.0**24
    df = flowemu.simulate(spec, "ring:ports=1", [m])
    expected = 2 * (n - 1) * (6 * LAT + m / n / B)
    assert df["time_s"].iloc[0] == pytest.approx(expected, rel=1e-9)


def test_flows_out_names_fattree_links(tmp_path, capsys):
    out = tmp_path / "flows.csv"
    code, _, err = run(capsys, ["run", "-t", "fattree:k=4", "-a", "ring:ports=1", "-s", "1KiB",
                                "--flows-out", str(out)])
    assert code == 0, err
    df = pd.read_csv(out)
    # ranks 3 -> 4 are in pods 0 and 1: 6 hops over every core (split)
    row = df[(df.src == 3) & (df.dst == 4)].iloc[0]
    assert row["hops"] == 6
    hops = set(row["path"].split())
    assert "3>17" in hops and "18>4" in hops          # host links (edges 16+1, 16+2)
    cores = {f"{32 + c}>{24 + 2 + c // 2}" for c in range(4)}   # core -> agg of pod 1
    assert cores <= hops


# ------------------------------------------------------------------ bad input

@pytest.mark.parametrize("spec,needle", [
    ("fattree:", "k is missing"),
    ("fattree:levels=2", "k is missing"),
    ("fattree:8", "'8' is not key=value"),
    ("fattree:k=7", "k is 7; expected an even integer >= 2"),
    # (k=0 and k=-4 did not say "even", as k=7 does)
    ("fattree:k=0", "k is 0; expected an even integer >= 2 (switch ports"),
    ("fattree:k=-4", "k is -4; expected an even integer >= 2 (switch ports"),
    ("fattree:k=eight", "k is 'eight', not an integer"),
    ("fattree:k=4.0", "k is '4.0', not an integer"),
    ("fattree:k=4,levels=4", "levels is 4; expected 2 or 3"),
    ("fattree:k=4,levels=1", "levels is 1; expected 2 or 3"),
    ("fattree:k=4,levels=x", "levels is 'x', not an integer"),
    ("fattree:k=4,taper=0", "taper is '0'; expected R1[:R2]"),
    ("fattree:k=4,taper=-2", "taper is '-2'"),
    ("fattree:k=4,taper=2:", "taper is '2:'"),
    ("fattree:k=4,taper=a:1", "taper is 'a:1'"),
    ("fattree:k=4,taper=inf", "taper is 'inf'"),
    ("fattree:k=4,taper=nan", "taper is 'nan'"),
    ("fattree:k=4,taper=2:1:1", "taper has 3 ratios; levels=3 has 2 switch tier(s)"),
    ("fattree:k=4,levels=2,taper=2:1",
     "taper has 2 ratios; levels=2 has 1 switch tier(s) with uplinks (leaf)"),
    ("fattree:k=4,pods=2", "unknown option 'pods'; options: k="),
    ("fattree:k=4,k=6", "'k' is given twice"),
    ("fattree:k=408", "at most 16777216"),
    ("fattree:k=10000000", "at most 16777216"),
    ("fattree:k=400", "at most 67108864"),
])
def test_bad_specs(spec, needle, capsys):
    assert_bad_topology(capsys, spec, needle)


def test_bad_constructor_args():
    with pytest.raises(ConfigError, match=r"k: 5 is not allowed; expected an even integer"):
        FatTree(5)
    with pytest.raises(ConfigError, match=r"k: True is not allowed"):
        FatTree(True)
    with pytest.raises(ConfigError, match=r"levels: 1 is not allowed; expected 2 or 3"):
        FatTree(4, 1)
    with pytest.raises(ConfigError, match=r"taper: ratio 0 is not allowed"):
        FatTree(4, 3, (0,))
    with pytest.raises(ConfigError, match=r"taper: 2 ratios given; levels=2 has 1"):
        FatTree(4, 2, (2, 1))
    with pytest.raises(ConfigError, match=r"taper: '2' is not allowed"):
        FatTree(4, 3, "2")
    # a big k is refused before any array is built
    with pytest.raises(ConfigError, match="hosts; at most"):
        FatTree(2**40)


@pytest.mark.parametrize("spec", ["fattree:k=4", "fattree:k=8", "fattree:k=8,taper=2:4",
                                  "fattree:k=6,levels=2"])
@pytest.mark.parametrize("algorithm", ["cps", "ring", "recdoub:variant=bandwidth", "gentree"])
def test_split_routed_straight_into_the_reduced_problem(spec, algorithm, monkeypatch):
    """A profile routes split flows straight into the reduced problem
    (FatTree.solver_routes): the same times as routing in full and reducing
    afterwards (solver_problem), and its memory estimate counts the reduced
    entries."""
    from flowemu.topology.fattree import FatTree

    sizes = "1KiB,1MiB,64MiB"
    fast = flowemu.simulate(spec, algorithm, sizes)["time_s"].to_numpy()
    monkeypatch.setattr(FatTree, "solver_routes", lambda self, *a: None)
    monkeypatch.setattr(FatTree, "solver_route_entries", lambda self, *a: None)
    full = flowemu.simulate(spec, algorithm, sizes)["time_s"].to_numpy()
    np.testing.assert_allclose(fast, full, rtol=1e-12)


def test_reduced_routes_have_the_full_routes_hops():
    topo = parse_topology("fattree:k=8")
    rng = np.random.default_rng(3)
    src = rng.integers(0, topo.num_endpoints, 500)
    dst = rng.integers(0, topo.num_endpoints, 500)
    full = topo.route(src, dst, "split")
    routes, cap = topo.solver_routes(src, dst, "split", topo.link_capacity(Network()))
    np.testing.assert_array_equal(routes.hops, full.hops)
    red, red_cap = topo.solver_problem(full, topo.link_capacity(Network()), "split")
    np.testing.assert_array_equal(routes.flow_ptr, red.flow_ptr)
    np.testing.assert_array_equal(routes.link, red.link)
    np.testing.assert_array_equal(cap, red_cap)
    assert topo.solver_route_entries(src, dst, "split") == int(red.flow_ptr[-1])
    assert topo.solver_routes(src, dst, "hash", cap) is None
