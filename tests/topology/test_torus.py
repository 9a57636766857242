"""Torus / mesh topology: numbering, links, routing invariants, spec parsing.

Routing is checked against invariants computed here independently of the
code under test: flow conservation from ``link_src``/``link_dst``, minimality
against a closed-form distance, per-hop-layer fraction sums, topological
order, and (for ``split``) exact equality with a slow per-node ECMP oracle.
"""

from __future__ import annotations

import pickle
from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flowemu.core.errors import ConfigError, RoutingError
from flowemu.topology import (
    Routes,
    Topology,
    Torus,
    parse_topology,
    register_topology,
    topology_families,
)

SHAPES = [(d,) for d in range(2, 10)] + [
    (2, 4), (4, 4), (3, 5), (6, 6), (2, 4, 8), (2, 3, 4, 2), (4, 4, 4, 4),
]
MODES = ["split", "dor", "hash"]


# --------------------------------------------------------------------- helpers

def ref_distance(dims, wrap, a, b):
    """Closed-form minimal hop count, independent of the code under test."""
    ca = np.stack(np.unravel_index(np.asarray(a), dims), axis=-1)
    cb = np.stack(np.unravel_index(np.asarray(b), dims), axis=-1)
    o = np.abs(cb - ca)
    d = np.asarray(dims)
    return (np.minimum(o, d - o) if wrap else o).sum(axis=-1)


def random_flows(topo, rng, count):
    n = topo.num_nodes
    src = rng.integers(0, n, count)
    dst = rng.integers(0, n, count)
    # make sure some flows are self-flows and some are ties / far apart
    src[:3] = [0, n - 1, 0]
    dst[:3] = [0, n - 1, n - 1]
    return src, dst


def entry_flow(routes):
    return np.repeat(np.arange(routes.num_flows), np.diff(routes.flow_ptr))


def oracle_split(topo, s, t):
    """Per-node ECMP split by brute force: {link: frac}."""
    dims, wrap = topo.dims, topo.wrap
    links_of = defaultdict(list)
    for l in np.flatnonzero(topo.link_exists):
        links_of[int(topo.link_src[l])].append(int(l))
    dist_t = ref_distance(dims, wrap, np.arange(topo.num_nodes), np.full(topo.num_nodes, t))
    mass = defaultdict(float)
    mass[s] = 1.0
    out = {}
    frontier = {s}
    while frontier:
        nxt = set()
        for v in sorted(frontier):
            if v == t:
                continue
            hops = [l for l in links_of[v] if dist_t[topo.link_dst[l]] == dist_t[v] - 1]
            for l in hops:
                u = int(topo.link_dst[l])
                out[l] = out.get(l, 0.0) + mass[v] / len(hops)
                mass[u] += mass[v] / len(hops)
                nxt.add(u)
        frontier = nxt
    return out


def check_routes(topo, src, dst, routes, mode):
    """Every invariant a routing must satisfy."""
    src = np.asarray(src)
    dst = np.asarray(dst)
    num_flows = len(src)
    n = topo.num_nodes
    assert isinstance(routes, Routes)
    assert routes.flow_ptr.dtype == np.int64 and routes.flow_ptr.shape == (num_flows + 1,)
    assert routes.link.dtype == np.int32 and routes.frac.dtype == np.float64
    assert routes.hops.dtype == np.int32
    assert routes.flow_ptr[0] == 0 and np.all(np.diff(routes.flow_ptr) >= 0)
    assert routes.flow_ptr[-1] == len(routes.link) == len(routes.frac)

    dist = ref_distance(topo.dims, topo.wrap, src, dst)
    np.testing.assert_array_equal(routes.hops, dist)
    np.testing.assert_array_equal(topo.distance(src, dst), dist)

    f = entry_flow(routes)
    lk = routes.link.astype(np.int64)
    assert np.all((lk >= 0) & (lk < topo.num_links))
    assert topo.link_exists[lk].all(), "routed over a nonexistent (mesh boundary) link"
    assert np.all(routes.frac > 0) and np.all(routes.frac <= 1 + 1e-12)
    # a link at most once per flow
    assert len(np.unique(f * topo.num_links + lk)) == len(lk)

    u = topo.link_src[lk].astype(np.int64)
    v = topo.link_dst[lk].astype(np.int64)
    # conservation: net outflow +1 at src, -1 at dst, 0 elsewhere
    net = (np.bincount(f * n + u, weights=routes.frac, minlength=num_flows * n)
           - np.bincount(f * n + v, weights=routes.frac, minlength=num_flows * n))
    expect = np.zeros(num_flows * n)
    moving = src != dst
    expect[(np.arange(num_flows) * n + src)[moving]] += 1.0
    expect[(np.arange(num_flows) * n + dst)[moving]] -= 1.0
    np.testing.assert_allclose(net, expect, atol=1e-12)

    # minimality: every entry advances one hop away from src and towards dst
    layer = ref_distance(topo.dims, topo.wrap, src[f], u)
    np.testing.assert_array_equal(ref_distance(topo.dims, topo.wrap, src[f], v), layer + 1)
    np.testing.assert_array_equal(ref_distance(topo.dims, topo.wrap, v, dst[f]),
                                  ref_distance(topo.dims, topo.wrap, u, dst[f]) - 1)
    np.testing.assert_array_equal(ref_distance(topo.dims, topo.wrap, u, dst[f]),
                                  dist[f] - layer)
    # each hop layer carries the whole flow
    layer_sum = np.bincount(f * (dist.max() + 1) + layer, weights=routes.frac,
                            minlength=num_flows * (dist.max() + 1)).reshape(num_flows, -1)
    want = (np.arange(dist.max() + 1)[None, :] < dist[:, None]).astype(float)
    np.testing.assert_allclose(layer_sum, want, atol=1e-12)

    for i in range(num_flows):
        a, b = routes.flow_ptr[i], routes.flow_ptr[i + 1]
        if src[i] == dst[i]:
            assert a == b
            continue
        if mode == "split":
            # topological order: all entries into a node precede those out of it
            last_in = {}
            for e in range(a, b):
                last_in[int(v[e])] = e
            for e in range(a, b):
                assert last_in.get(int(u[e]), -1) < e
        else:
            assert np.all(routes.frac[a:b] == 1.0)
            assert b - a == dist[i]
            assert u[a] == src[i] and v[b - 1] == dst[i]
            np.testing.assert_array_equal(u[a + 1:b], v[a:b - 1])


# ----------------------------------------------------------- numbering, links

@pytest.mark.parametrize("dims", SHAPES)
def test_node_numbering_is_ravel_multi_index(dims):
    topo = Torus(dims)
    nodes = np.arange(topo.num_nodes)
    coords = topo.coords(nodes)
    assert coords.shape == (topo.num_nodes, len(dims))
    np.testing.assert_array_equal(coords, np.stack(np.unravel_index(nodes, dims), axis=-1))
    np.testing.assert_array_equal(np.ravel_multi_index(tuple(coords.T), dims), nodes)
    np.testing.assert_array_equal(topo.node_of(coords), nodes)
    assert topo.coords(np.array([[0, topo.num_nodes - 1]])).shape == (1, 2, len(dims))


@pytest.mark.parametrize("wrap", [True, False])
@pytest.mark.parametrize("dims", [(2,), (5,), (2, 4), (3, 5), (2, 4, 8)])
def test_link_endpoints(dims, wrap):
    topo = Torus(dims, wrap=wrap)
    D = len(dims)
    L = topo.num_nodes * 2 * D
    assert topo.num_links == L
    for arr, dt in ((topo.link_src, np.int32), (topo.link_dst, np.int32),
                    (topo.link_capacity_scale, np.float64), (topo.link_exists, np.bool_)):
        assert arr.shape == (L,) and arr.dtype == dt
    lid = np.arange(L)
    node, rest = lid // (2 * D), lid % (2 * D)
    dim, minus = rest // 2, rest % 2
    np.testing.assert_array_equal(topo.link_src, node)
    np.testing.assert_array_equal(topo.link_id(node, dim, np.where(minus == 1, -1, 1)), lid)
    c = np.stack(np.unravel_index(node, dims), axis=-1)
    step = np.where(minus == 1, -1, 1)
    target = c.copy()
    target[lid, dim] += step
    size = np.asarray(dims)[dim]
    crosses = (target[lid, dim] < 0) | (target[lid, dim] >= size)
    target[lid, dim] %= size
    want_dst = np.ravel_multi_index(tuple(target.T), dims)
    if wrap:
        assert topo.link_exists.all()
        np.testing.assert_array_equal(topo.link_dst, want_dst)
        np.testing.assert_array_equal(topo.link_capacity_scale, 1.0)
    else:
        np.testing.assert_array_equal(topo.link_exists, ~crosses)
        np.testing.assert_array_equal(topo.link_dst, np.where(crosses, node, want_dst))
        np.testing.assert_array_equal(topo.link_capacity_scale, np.where(crosses, 0.0, 1.0))
    # every existing link joins neighbours at distance 1
    ex = topo.link_exists
    np.testing.assert_array_equal(
        ref_distance(dims, wrap, topo.link_src[ex], topo.link_dst[ex]), 1)
    # each node's ingress capacity is 2D on a torus
    if wrap:
        np.testing.assert_array_equal(topo.ingress_capacity_scale(), 2.0 * D)


def test_dim_of_size_two_has_two_distinct_links():
    topo = Torus((2,))
    assert topo.link_dst[0] == topo.link_dst[1] == 1
    r = topo.route(np.array([0]), np.array([1]))
    assert sorted(r.link.tolist()) == [0, 1]
    np.testing.assert_allclose(r.frac, [0.5, 0.5])
    assert r.hops.tolist() == [1]


def test_attributes_and_describe():
    t = Torus((8, 8))
    assert isinstance(t, Topology)
    assert t.spec == "torus:8x8" and t.num_nodes == t.num_endpoints == 64
    assert t.describe() == {"family": "torus", "dims": [8, 8], "wrap": True, "nodes": 64,
                            "links": 256}
    m = Torus((4, 4), wrap=False)
    assert m.spec == "mesh:4x4"
    assert m.describe() == {"family": "mesh", "dims": [4, 4], "wrap": False, "nodes": 16,
                            "links": 48}
    assert Torus([4, np.int64(4)], wrap=False) == m
    assert Torus((16,)).spec == "torus:16"
    assert not t.link_src.flags.writeable
    t2 = pickle.loads(pickle.dumps(t))
    assert t2 == t and t2.spec == t.spec
    np.testing.assert_array_equal(t2.link_dst, t.link_dst)


@pytest.mark.parametrize("kwargs, match", [
    ({"dims": ()}, "dims"),
    ({"dims": (1, 4)}, "dimension 0 is 1"),
    ({"dims": (4, 0)}, "dimension 1 is 0"),
    ({"dims": (4, -3)}, "dimension 1 is -3"),
    ({"dims": (4, 2.0)}, "dimension 1 is 2.0"),
    ({"dims": (True, 4)}, "dimension 0 is True"),
    ({"dims": "8x8"}, "dims"),
    ({"dims": (4096, 4097)}, "at most 16777216"),
    ({"dims": (4, 4), "wrap": "yes"}, "wrap"),
])
def test_torus_validation(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        Torus(**kwargs)


# --------------------------------------------------------------------- routing

@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("wrap", [True, False])
@pytest.mark.parametrize("dims", SHAPES)
def test_routing_invariants(dims, wrap, mode):
    topo = Torus(dims, wrap=wrap)
    rng = np.random.default_rng(hash((dims, wrap)) % 2**32)
    src, dst = random_flows(topo, rng, 60)
    routes = topo.route(src, dst, ecmp=mode, seed=7)
    check_routes(topo, src, dst, routes, mode)


@pytest.mark.parametrize("wrap", [True, False])
@pytest.mark.parametrize("dims", [(2,), (4,), (7,), (8,), (2, 4), (3, 5), (4, 4), (6, 6),
                                  (2, 4, 8), (2, 3, 4, 2)])
def test_split_equals_per_node_ecmp_oracle(dims, wrap):
    topo = Torus(dims, wrap=wrap)
    rng = np.random.default_rng(3)
    src, dst = random_flows(topo, rng, 25)
    routes = topo.route(src, dst)
    for i in range(len(src)):
        links, frac = routes.flow_links(i)
        got = dict(zip(links.tolist(), frac.tolist()))
        want = oracle_split(topo, int(src[i]), int(dst[i]))
        assert got.keys() == want.keys()
        for l in want:
            assert got[l] == pytest.approx(want[l], abs=1e-12)


def test_all_pairs_small_torus_and_mesh():
    for topo in (Torus((4, 6)), Torus((3, 4), wrap=False), Torus((2, 2, 2))):
        n = topo.num_nodes
        src, dst = np.divmod(np.arange(n * n), n)
        for mode in MODES:
            check_routes(topo, src, dst, topo.route(src, dst, ecmp=mode, seed=1), mode)


def test_ring_tie_splits_half_each_way():
    topo = parse_topology("torus:8")
    r = topo.route(np.array([0]), np.array([4]))
    got = {(int(topo.link_src[l]), int(topo.link_dst[l])): fr for l, fr in zip(r.link, r.frac)}
    want = {(0, 1): .5, (1, 2): .5, (2, 3): .5, (3, 4): .5,
            (0, 7): .5, (7, 6): .5, (6, 5): .5, (5, 4): .5}
    assert got == want
    assert r.hops.tolist() == [4]


def test_2d_tie_splits_at_every_node():
    # 0 -> (2, 1) on 4x4: dim 0 is a tie; at the source 3 next hops get 1/3
    topo = Torus((4, 4))
    r = topo.route(np.array([0]), np.array([topo.node_of(np.array([2, 1]))]))
    first = {int(l): fr for l, fr in zip(r.link, r.frac) if topo.link_src[l] == 0}
    assert first == pytest.approx({topo.link_id(0, 0, 1): 1 / 3, topo.link_id(0, 0, -1): 1 / 3,
                                   topo.link_id(0, 1, 1): 1 / 3})


def test_dor_goes_dim_order_and_ties_plus():
    topo = Torus((8,))
    r = topo.route(np.array([0, 2]), np.array([4, 6]), ecmp="dor")
    assert r.link.tolist() == [0, 2, 4, 6, 4, 6, 8, 10]
    assert r.frac.tolist() == [1.0] * 8
    t2 = Torus((4, 6))
    # (0,0) -> (2,3): both dims tie; dim 0 first, then dim 1, all + steps
    r = t2.route(np.array([0]), t2.node_of(np.array([[2, 3]])), ecmp="dor")
    path = [0] + t2.link_dst[r.link].tolist()
    assert [tuple(c) for c in t2.coords(np.array(path)).tolist()] == [
        (0, 0), (1, 0), (2, 0), (2, 1), (2, 2), (2, 3)]
    # a non-tie dimension goes the short way
    r = t2.route(np.array([0]), t2.node_of(np.array([[3, 5]])), ecmp="dor")
    assert r.link.tolist() == [t2.link_id(0, 0, -1), t2.link_id(18, 1, -1)]


def test_hash_deterministic_and_seed_dependent():
    topo = Torus((8, 8))
    rng = np.random.default_rng(0)
    src, dst = random_flows(topo, rng, 300)
    a = topo.route(src, dst, ecmp="hash", seed=11)
    b = topo.route(src, dst, ecmp="hash", seed=11)
    c = topo.route(src, dst, ecmp="hash", seed=12)
    np.testing.assert_array_equal(a.link, b.link)
    np.testing.assert_array_equal(a.flow_ptr, c.flow_ptr)
    assert not np.array_equal(a.link, c.link)
    # the path of one flow does not depend on the other flows routed with it
    one = topo.route(src[5:6], dst[5:6], ecmp="hash", seed=11)
    np.testing.assert_array_equal(one.link, a.flow_links(5)[0])
    # large and negative seeds are fine
    for seed in (-1, 2**70):
        check_routes(topo, src, dst, topo.route(src, dst, ecmp="hash", seed=seed), "hash")


def test_hash_reaches_both_sides_of_a_tie():
    topo = Torus((8,))
    first = {int(topo.route(np.array([0]), np.array([4]), ecmp="hash", seed=s).link[0])
             for s in range(64)}
    assert first == {0, 1}


def test_mesh_never_wraps():
    topo = parse_topology("mesh:4x4")
    n = topo.num_nodes
    src, dst = np.divmod(np.arange(n * n), n)
    for mode in MODES:
        r = topo.route(src, dst, ecmp=mode, seed=3)
        assert topo.link_exists[r.link].all()
        np.testing.assert_array_equal(r.hops, ref_distance((4, 4), False, src, dst))
    r = topo.route(np.array([0]), np.array([3]))
    assert r.link.tolist() == [2, 6, 10] and r.frac.tolist() == [1.0] * 3


def test_self_flows_and_empty_input():
    topo = Torus((4, 4))
    for mode in MODES:
        r = topo.route(np.array([5, 3, 5]), np.array([5, 7, 5]), ecmp=mode)
        assert r.flow_ptr.tolist() == [0, 0, 1, 1]
        assert r.hops.tolist() == [0, 1, 0]
        e = topo.route(np.array([], dtype=np.int64), np.array([], dtype=np.int64), ecmp=mode)
        assert e.num_flows == 0 and e.num_entries == 0 and e.flow_ptr.tolist() == [0]
    # lists and other integer dtypes are accepted
    r = topo.route([0, 1], np.array([2, 3], dtype=np.int16))
    assert r.hops.tolist() == [2, 2]


@pytest.mark.parametrize("args, kwargs, exc, match", [
    (([0, 1], [1]), {}, ConfigError, "equal lengths"),
    (([0, 16], [1, 2]), {}, RoutingError, r"flow 1 \(16 -> 2\)"),
    (([0, 1], [-1, 2]), {}, RoutingError, r"flow 0 \(0 -> -1\)"),
    (([0.0], [1.0]), {}, ConfigError, "integer"),
    (([[0]], [[1]]), {}, ConfigError, "1-D"),
    (([True], [False]), {}, ConfigError, "integer"),
    (([0], [1]), {"ecmp": "random"}, ConfigError, "ecmp"),
    (([0], [1]), {"ecmp": "hash", "seed": 1.5}, ConfigError, "seed"),
])
def test_bad_route_inputs(args, kwargs, exc, match):
    topo = Torus((4, 4))
    with pytest.raises(exc, match=match):
        topo.route(np.array(args[0]), np.array(args[1]), **kwargs)


def test_helpers_validate():
    topo = Torus((4, 4))
    with pytest.raises(ConfigError):
        topo.coords(np.array([16]))
    with pytest.raises(ConfigError):
        topo.node_of(np.array([0, 4]))
    with pytest.raises(ConfigError):
        topo.node_of(np.array([0, 1, 2]))
    with pytest.raises(ConfigError):
        topo.link_id(0, 2, 1)
    with pytest.raises(ConfigError):
        topo.link_id(0, 0, 0)
    np.testing.assert_array_equal(topo.link_id(np.array([0, 5]), 1, np.array([1, -1])),
                                  [2, 5 * 4 + 3])


@settings(max_examples=60, deadline=None)
@given(dims=st.lists(st.integers(2, 7), min_size=1, max_size=3),
       wrap=st.booleans(), mode=st.sampled_from(MODES), seed=st.integers(0, 2**32),
       data=st.data())
def test_routing_property(dims, wrap, mode, seed, data):
    topo = Torus(tuple(dims), wrap=wrap)
    n = topo.num_nodes
    pairs = data.draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)),
                               min_size=1, max_size=20))
    src, dst = (np.array(x) for x in zip(*pairs))
    check_routes(topo, src, dst, topo.route(src, dst, ecmp=mode, seed=seed), mode)


# ---------------------------------------------------------- specs and registry

@pytest.mark.parametrize("spec, dims, wrap", [
    ("torus:64x64", (64, 64), True),
    ("torus:8x8x8x8", (8, 8, 8, 8), True),
    ("torus:16", (16,), True),
    ("mesh:4x4", (4, 4), False),
    ("  torus : 4 x 2 ", (4, 2), True),
])
def test_parse_topology(spec, dims, wrap):
    topo = parse_topology(spec)
    assert isinstance(topo, Torus)
    assert topo.dims == dims and topo.wrap == wrap
    assert parse_topology(topo.spec) == topo


@pytest.mark.parametrize("spec, match", [
    ("torus:1x4", (r"^topology 'torus:1x4': dimension 0 is 1; every dimension must be an "
                  r"integer >= 2 \(e\.g\. torus:8x8\)$")),
    ("torus:4x0", "dimension 1 is 0; every dimension must be an integer >= 2"),
    ("torus:-4x4", "dimension 0 is -4; every dimension must be an integer >= 2"),
    ("mesh:4x1", r"dimension 1 is 1; .*\(e\.g\. mesh:8x8\)"),
    ("torus", "torus': missing ':'.*torus:8x8"),
    ("8x8", "missing ':'.*families: .*leafspine, mesh, torus"),
    ("torus:", "no dimensions given"),
    ("torus:  ", "no dimensions given"),
    ("torus:8xx8", "dimension 1 is empty"),
    ("torus:8x", "dimension 1 is empty"),
    ("torus:8xa", "dimension 1 is 'a', not an integer"),
    ("torus:8.5x8", "dimension 0 is '8.5', not an integer"),
    ("torus:8:8", "dimension 0 is '8:8', not an integer"),
    ("torus:4096x4097", "16781312 nodes; at most 16777216"),
    ("nosuchnet:4", "unknown family 'nosuchnet'; known families: .*leafspine, mesh, torus"),
    ("Torus:8x8", "unknown family 'Torus' \\(family names are lowercase\\)"),
    ("", "empty"),
    ("   ", "empty"),
])
def test_bad_specs(spec, match):
    with pytest.raises(ConfigError, match=match) as info:
        parse_topology(spec)
    msg = str(info.value)
    assert "\n" not in msg
    assert msg.startswith(f"topology {spec!r}: ")


def test_bad_spec_type():
    with pytest.raises(ConfigError, match="expected a string"):
        parse_topology(88)


def test_registry():
    fams = topology_families()
    assert {"torus", "mesh"} <= set(fams)
    assert list(fams) == sorted(fams)
    assert all(isinstance(doc, str) and doc for doc in fams.values())
    with pytest.raises(ValueError, match="already registered"):
        register_topology("torus", lambda params: Torus((4,)), "dup")
    with pytest.raises(ValueError):
        register_topology("Ring", lambda params: Torus((4,)), "uppercase")


def test_misspelt_family_suggests_the_closest():
    with pytest.raises(ConfigError) as info:
        parse_topology("fatree:k=8")
    assert str(info.value).startswith("topology 'fatree:k=8': unknown family 'fatree' (did you "
                                      "mean 'fattree'?); known families: dragonfly, fattree, ")
