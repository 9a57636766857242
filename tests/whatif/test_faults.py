"""Failed and degraded links (flowemu.whatif.faults): closed forms, an
independent enumeration of the shortest surviving paths, selectors and their
errors, disconnection, the fail policy, and every algorithm on faulty tori and
fat trees."""

from __future__ import annotations

import math
import pickle
from collections import deque

import numpy as np
import pytest

from flowemu.algorithms import get_algorithm
from flowemu.algorithms._blocks import make_traffic
from flowemu.algorithms.base import Reduction, Schedule, Step
from flowemu.api.simulation import simulate
from flowemu.core.errors import ConfigError
from flowemu.core.network import Network
from flowemu.engine.profiles import direct_times, profile
from flowemu.topology import parse_topology
from flowemu.whatif.faults import FaultyTopology, apply_faults, check_fail_policy, select_links
from tests.helpers.maxmin_oracle import completion, csr_to_lists

NET = Network()
N_BYTES = 2.0**20


def _options(alg: str) -> dict:
    return {"variant": "bandwidth"} if alg in ("recdoub", "swing") else {}


def _one_step(src, dst, share, p) -> Schedule:
    traffic = make_traffic(np.asarray(src), np.asarray(dst), np.asarray(share, dtype=float))
    return Schedule("traffic", "t", p, (Step(traffic, Reduction.none(), "s0"),))


# ------------------------------------------------------------ the oracle

def _alive(topo: FaultyTopology) -> np.ndarray:
    base = topo.base
    return (base.link_src != base.link_dst) & (base.link_capacity_scale > 0) & ~topo.failed


def _shortest_paths(topo: FaultyTopology, s: int, d: int) -> list[list[int]]:
    """Every shortest path s -> d over the surviving links, as link lists:
    a plain BFS from d over reversed links, then a depth-first walk down the
    distance labels."""
    alive = np.flatnonzero(_alive(topo))
    src, dst = topo.link_src, topo.link_dst
    out: dict[int, list[int]] = {}
    into: dict[int, list[int]] = {}
    for lk in alive.tolist():
        out.setdefault(int(src[lk]), []).append(lk)
        into.setdefault(int(dst[lk]), []).append(lk)
    dist = {d: 0}
    queue = deque([d])
    while queue:
        v = queue.popleft()
        for lk in into.get(v, []):
            u = int(src[lk])
            if u not in dist:
                dist[u] = dist[v] + 1
                queue.append(u)
    if s not in dist:
        return []
    paths = []

    def walk(u, acc):
        if u == d:
            paths.append(list(acc))
            return
        for lk in out.get(u, []):
            v = int(dst[lk])
            if dist.get(v) == dist[u] - 1:
                walk(v, acc + [lk])

    walk(s, [])
    return paths


def _per_vertex_split(topo: FaultyTopology, s: int, d: int) -> tuple[dict, int]:
    """Link -> fraction when every vertex splits what reaches it evenly over
    its shortest next hops: a path's weight is the product of 1/(next hops)
    at its vertices. Also the distance."""
    paths = _shortest_paths(topo, s, d)
    nexthops: dict[int, set] = {}
    for path in paths:
        for lk in path:
            nexthops.setdefault(int(topo.link_src[lk]), set()).add(lk)
    fracs: dict[int, float] = {}
    for path in paths:
        w = 1.0
        for lk in path:
            w /= len(nexthops[int(topo.link_src[lk])])
        for lk in path:
            fracs[lk] = fracs.get(lk, 0.0) + w
    return fracs, (len(paths[0]) if paths else -1)


CASES = [
    ("torus:4x4", "random:3:0"),
    ("torus:4x4", "1,*-2,*"),
    ("torus:6", "link:0"),
    ("torus:2x4", "0,0-1,0"),
    ("mesh:3x3", "1,1-1,2;0,0-1,0"),
    ("fattree:k=4", "core:0;agg:1-edge:0"),
    ("fattree:k=4", "random:4:5"),
    ("fattree:k=4,levels=2", "spine:0-leaf:3"),
    ("tree:2x(2x2),uplinks=1:2:1", "link:10"),
    ("leafspine:4x2x2,uplinks=2", "leaf:0-spine:1;link:16"),
    ("hyperx:3x3", "0,0-0,1"),
    ("dragonfly:a=2,p=1,h=1", "group:0-group:1"),
]


def _pairs(topo):
    n = topo.num_endpoints
    s, d = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    keep = s != d
    return s[keep].ravel(), d[keep].ravel()


@pytest.mark.parametrize("spec,fail", CASES)
def test_split_routes_equal_enumerated_shortest_surviving_paths(spec, fail):
    topo = apply_faults(parse_topology(spec), fail=fail)
    assert topo.failed.any()
    src, dst = _pairs(topo)
    routes = topo.route(src, dst, "split")
    for f in range(len(src)):
        want, hops = _per_vertex_split(topo, int(src[f]), int(dst[f]))
        links, fr = routes.flow_links(f)
        got = dict(zip(links.tolist(), fr.tolist(), strict=True))
        assert len(got) == len(links)                      # each link once
        assert set(got) == set(want), (f, src[f], dst[f])
        assert all(math.isclose(got[k], want[k], rel_tol=1e-12) for k in want)
        assert routes.hops[f] == hops
        assert not topo.failed[links].any()


@pytest.mark.parametrize("spec,fail", CASES)
def test_single_path_modes_take_one_shortest_surviving_path(spec, fail):
    topo = apply_faults(parse_topology(spec), fail=fail)
    src, dst = _pairs(topo)
    for ecmp in topo.ecmp_modes:
        if ecmp in ("split", "valiant"):
            continue
        routes = topo.route(src, dst, ecmp, seed=3)
        for f in range(len(src)):
            links, fr = routes.flow_links(f)
            paths = _shortest_paths(topo, int(src[f]), int(dst[f]))
            assert np.all(fr == 1.0)
            # the entries form one of the shortest paths (in any order)
            assert sorted(links.tolist()) in [sorted(p) for p in paths], (ecmp, f)
            assert routes.hops[f] == len(paths[0])


@pytest.mark.parametrize("spec,fail", CASES)
def test_unaffected_flows_keep_their_base_routes_bit_for_bit(spec, fail):
    base = parse_topology(spec)
    topo = apply_faults(base, fail=fail)
    src, dst = _pairs(topo)
    for ecmp in base.ecmp_modes:
        a = base.route(src, dst, ecmp, seed=7)
        b = topo.route(src, dst, ecmp, seed=7)
        untouched = 0
        for f in range(len(src)):
            la, fa = a.flow_links(f)
            if topo.failed[la].any():
                assert not topo.failed[b.flow_links(f)[0]].any()
                continue
            untouched += 1
            lb, fb = b.flow_links(f)
            assert np.array_equal(la, lb) and np.array_equal(fa, fb)
            assert a.hops[f] == b.hops[f]
        assert untouched > 0
        # the counts the memory check uses are exact / upper bounds
        assert topo.route_entries(src, dst, ecmp) == b.num_entries
        worst = topo.max_route_entries(ecmp)
        assert worst is None or np.diff(b.flow_ptr).max() <= worst


def test_graph_split_paths_reroutes_with_equal_path_shares(tmp_path):
    # a 2x2 grid of routers with one host each, as a graph file: ring 0-1-3-2-0
    path = tmp_path / "square.json"
    path.write_text('{"nodes": [{"id": "a", "endpoint": true}, {"id": "b", "endpoint": true},'
                    ' {"id": "c", "endpoint": true}, {"id": "d", "endpoint": true}],'
                    ' "links": [{"src": "a", "dst": "b"}, {"src": "b", "dst": "d"},'
                    ' {"src": "d", "dst": "c"}, {"src": "c", "dst": "a"}]}')
    topo = apply_faults(parse_topology(f"graph:{path},split=paths"), fail="id:a-id:b")
    routes = topo.route(np.array([0]), np.array([1]))
    # a -> c -> d -> b, 3 hops, the only surviving path
    assert routes.hops.tolist() == [3]
    assert np.all(routes.frac == 1.0)
    with pytest.raises(ConfigError, match=r"^fail: 'id:zz': no node has id 'zz' in graph:"):
        apply_faults(topo.base, fail="id:zz")
    names = topo.node_names
    dashed = tmp_path / "dashed.json"
    dashed.write_text(path.read_text().replace('"a"', '"h-a"'))
    g = parse_topology(f"graph:{dashed}")
    one = select_links(g, "id:h-a")
    assert len(one) == 4 and select_links(g, "id:h-a-id:b").tolist() == [0, 1]
    walk = [(names[topo.link_src[lk]], names[topo.link_dst[lk]]) for lk in routes.link]
    assert walk == [("a", "c"), ("c", "d"), ("d", "b")]


# ------------------------------------------------------------ closed forms

@pytest.mark.parametrize("ports", [1, 2])
def test_ring_allreduce_on_a_ring_with_one_failed_cable(ports):
    """torus:8, cable 3-4 failed. ports=1: flow 3->4 detours 7 hops the
    other way over links no other flow uses, so each step costs α + 7 hops
    + (n/8)/B. ports=2 (both directions, n/16 a flow): 4->3 detours too,
    and every surviving link then carries one ring flow and one detour, so
    every flow gets B/2: α + 7 hops + 2·(n/16)/B. 2(p−1) = 14 steps."""
    base = parse_topology("torus:8")
    topo = apply_faults(base, fail="3-4")
    sched = get_algorithm("ring").build(8, topo, ports=ports)
    hop = NET.link_latency + NET.hop_latency
    healthy = profile(sched, base, NET).times([N_BYTES])[0]
    failed = profile(sched, topo, NET).times([N_BYTES])[0]
    share = N_BYTES / (8 * ports)
    assert math.isclose(healthy, 14 * (NET.alpha + hop + share / NET.bandwidth), rel_tol=1e-12)
    assert math.isclose(failed, 14 * (NET.alpha + 7 * hop + ports * share / NET.bandwidth),
                        rel_tol=1e-12)
    # the same against the max-min oracle on routes enumerated here
    src = np.concatenate([np.arange(8), np.arange(8)])[:8 * ports]
    dst = np.concatenate([(np.arange(8) + 1) % 8, (np.arange(8) - 1) % 8])[:8 * ports]
    flows = []
    for s, d in zip(src.tolist(), dst.tolist(), strict=True):
        fr, _ = _per_vertex_split(topo, s, d)
        flows.append(sorted(fr.items()))
    _, finish, _ = completion(flows, topo.link_capacity(NET).tolist(), [share] * len(flows))
    assert math.isclose(max(finish), ports * share / NET.bandwidth, rel_tol=1e-12)


def test_ring_on_the_failed_ring_agrees_with_the_direct_solve():
    topo = apply_faults("torus:8", fail="link:6")
    sched = get_algorithm("ring").build(8, topo, ports=2)
    sizes = [1e3, 1e6]
    assert np.allclose(profile(sched, topo, NET).times(sizes),
                       direct_times(sched, topo, NET, sizes), rtol=1e-12)


@pytest.mark.parametrize("spec,sel,src,dst", [
    ("torus:8", "0-1", 0, 1),
    ("torus:4x4", "0,0-0,1", 0, 1),
    ("leafspine:2x1x1", "spine:0", 0, 1),
    ("fattree:k=2", "core:0", 0, 1),
])
@pytest.mark.parametrize("factor", [0.5, 0.125, 1.0])
def test_degrade_on_the_only_path_scales_fluid_time_by_one_over_f(spec, sel, src, dst, factor):
    base = parse_topology(spec)
    topo = apply_faults(base, degrade=f"{sel}={factor}")
    sched = _one_step([src], [dst], [1.0], base.num_endpoints)
    for ecmp in base.ecmp_modes:
        a = profile(sched, base, NET, ecmp=ecmp).steps[0]
        b = profile(sched, topo, NET, ecmp=ecmp).steps[0]
        assert math.isclose(b.spb.max(), a.spb.max() / factor, rel_tol=1e-12)
        assert np.array_equal(a.latency, b.latency)


def test_degraded_latency_takes_the_slowest_split_path():
    """torus:4x4, flow (0,0) -> (1,1): two 2-hop paths. Link (0,0)->(0,1)
    at latency ×3 makes the path through (0,1) 3ℓ + ℓ; the flow's latency
    is that of its slowest path, and its bandwidth is unchanged (M only)."""
    base = parse_topology("torus:4x4")
    topo = apply_faults(base, degrade="0,0-0,1=1:lat=3")
    assert topo.degrade == "0,0-0,1=1:lat=3"
    sched = _one_step([0], [5], [1.0], 16)
    prof = profile(sched, topo, NET).steps[0]
    ell, hop = NET.link_latency, NET.hop_latency
    assert math.isclose(float(prof.latency.max()), NET.alpha + 2 * hop + 4 * ell, rel_tol=1e-12)
    healthy = profile(sched, base, NET).steps[0]
    assert np.array_equal(prof.spb, healthy.spb)


def test_degrade_factors_multiply_and_failure_wins():
    base = parse_topology("torus:8")
    topo = apply_faults(base, fail="link:0", degrade="0-1=0.5;node:0=0.5:lat=2")
    lk = select_links(base, "0-1")
    other = select_links(base, "7-0")
    assert np.all(topo.bandwidth_factor[lk] == 0.0)       # failed
    assert np.all(topo.bandwidth_factor[other] == 0.5)
    assert np.all(topo.latency_factor[lk] == 2.0)
    cap = topo.link_capacity(NET)
    assert np.all(cap[other] == 0.5 * NET.bandwidth) and np.all(cap[lk] == 0.0)
    lat = topo.link_latency(NET)
    assert np.all(lat[other] == 2 * NET.link_latency)


# ------------------------------------------------------------ selectors

def _links_touching(topo, vertices):
    v = np.asarray(vertices)
    hit = np.isin(topo.link_src, v) | np.isin(topo.link_dst, v)
    return np.flatnonzero(hit & (topo.link_src != topo.link_dst) & (topo.link_capacity_scale > 0))


def test_link_selector_takes_the_reverse_direction():
    t = parse_topology("torus:8x8")
    # link id = node·2D + 2·dim + (0 for +, 1 for −); node 9 = (1, 1)
    fwd = int(t.link_id(9, 1, 1))                # (1,1) -> (1,2)
    rev = int(t.link_id(10, 1, -1))              # (1,2) -> (1,1)
    assert select_links(t, f"link:{fwd}").tolist() == sorted([fwd, rev])
    two = select_links(t, f"link:{fwd}-{fwd + 1}")
    assert set(two.tolist()) == {fwd, fwd + 1, rev, int(t.link_id(8, 1, 1))}


def test_vertex_selectors_take_every_link_of_the_vertex():
    t = parse_topology("torus:4x4")
    assert select_links(t, "node:5").tolist() == _links_touching(t, [5]).tolist()
    assert select_links(t, "1,1").tolist() == _links_touching(t, [5]).tolist()
    col = select_links(t, "3,*")
    assert col.tolist() == _links_touching(t, [12, 13, 14, 15]).tolist()
    f = parse_topology("fattree:k=4")                   # 16 hosts, 8 edge, 8 agg, 4 core
    assert select_links(f, "core:1").tolist() == _links_touching(f, [16 + 16 + 1]).tolist()
    assert select_links(f, "agg:2").tolist() == _links_touching(f, [16 + 8 + 2]).tolist()
    assert select_links(f, "aggregation:2").tolist() == select_links(f, "agg:2").tolist()
    assert select_links(f, "edge:0").tolist() == _links_touching(f, [16]).tolist()
    assert select_links(f, "host:3").tolist() == _links_touching(f, [3]).tolist()
    assert len(select_links(f, "core:*")) == 2 * 4 * 4          # 4 cores x 4 pods
    ls = parse_topology("leafspine:4x2x2")                       # hosts 0..7, leaves 8..11
    assert select_links(ls, "spine:1").tolist() == _links_touching(ls, [13]).tolist()
    tr = parse_topology("tree:2x3")                              # hosts 0..5, root 6, 7..8
    assert select_links(tr, "root:0").tolist() == _links_touching(tr, [6]).tolist()
    assert select_links(tr, "depth1:1").tolist() == _links_touching(tr, [8]).tolist()
    hm = parse_topology("hammingmesh:2x2,2x2")                   # 16 nodes, 4 + 4 switches
    assert select_links(hm, "colswitch:0").tolist() == _links_touching(hm, [16]).tolist()
    assert select_links(hm, "rowswitch:3").tolist() == _links_touching(hm, [16 + 4 + 3]).tolist()


def test_cable_selectors_between_two_vertex_sets():
    t = parse_topology("torus:8x8")
    ids = select_links(t, "3,*-4,*")
    want = sorted([int(t.link_id(3 * 8 + y, 0, 1)) for y in range(8)]
                  + [int(t.link_id(4 * 8 + y, 0, -1)) for y in range(8)])
    assert ids.tolist() == want
    ls = parse_topology("leafspine:4x2x2,uplinks=2")
    up = select_links(ls, "leaf:2-spine:1")
    assert len(up) == 4                                      # 2 parallel cables, both ways
    src, dst = ls.link_src[up], ls.link_dst[up]
    assert set(zip(src.tolist(), dst.tolist(), strict=True)) == {(8 + 2, 12 + 1), (12 + 1, 8 + 2)}
    df = parse_topology("dragonfly:a=2,p=1,h=1")              # 3 groups, one global link a pair
    glob = select_links(df, "group:0-group:2")
    assert len(glob) == 2
    assert set((df.link_src[glob] - df.num_endpoints) // 2) == {0, 2}


def test_random_selector_draws_fabric_cables_reproducibly():
    f = parse_topology("fattree:k=4")
    a = select_links(f, "random:5:11")
    assert len(a) == 10
    assert np.all(f.link_src[a] >= f.num_endpoints) and np.all(f.link_dst[a] >= f.num_endpoints)
    assert a.tolist() == select_links(f, "random:5:11").tolist()
    assert a.tolist() != select_links(f, "random:5:12").tolist()
    assert len(select_links(f, "random:0:1")) == 0
    assert len(select_links(f, "random:32:1")) == 64          # every switch-switch cable
    t = parse_topology("torus:4x4")                           # routers: every cable
    assert len(select_links(t, "random:32:0")) == 64
    one = parse_topology("tree:4")                            # no switch-switch cable
    assert len(select_links(one, "random:4:0")) == 8


def test_apply_faults_texts_spec_pickle_and_passthrough():
    base = parse_topology("fattree:k=4")
    assert apply_faults(base) is base
    assert apply_faults(base, fail="", degrade=()) is base
    topo = apply_faults(base, fail=[" core : 0 ", "random:2:3"], degrade="edge:1=0.50:lat=2.0")
    assert isinstance(topo, FaultyTopology)
    assert topo.spec == base.spec
    assert topo.fail == "core:0;random:2:3"
    assert topo.degrade == "edge:1=0.5:lat=2"
    again = pickle.loads(pickle.dumps(topo))
    assert again == topo and np.array_equal(again.failed, topo.failed)
    assert apply_faults(base, fail=np.array(["core:0", "random:2:3"])) == apply_faults(
        base, fail="core:0;random:2:3")
    assert np.array_equal(again.bandwidth_factor, topo.bandwidth_factor)
    more = apply_faults(topo, fail="core:1")
    assert more.fail == "core:0;random:2:3;core:1" and more.base is base
    desc = topo.describe()
    assert desc["fail"] == topo.fail and desc["failed_links"] == int(topo.failed.sum())
    assert desc["family"] == "fattree"
    # attributes of the base read through, shortcuts off
    assert topo.k == 4 and topo.grid is None
    src = np.arange(16)
    assert topo.solver_routes(src, src[::-1].copy(), "split", topo.link_capacity(NET)) is None
    r = topo.route(src, src[::-1].copy())
    cap = topo.link_capacity(NET)
    assert topo.solver_problem(r, cap, "split")[0] is r


# ------------------------------------------------------------ errors

BAD = [
    ("torus:8x8", "fail", "link:999", ("fail: 'link:999': link 999 is out of range; expected "
                                      "link ids in 0..255 of torus:8x8")),
    ("torus:8x8", "fail", "link:5-3", "fail: 'link:5-3': the range 5-3 is empty"),
    ("torus:8x8", "fail", "link:x", "fail: 'link:x': link 'x' is not an integer"),
    ("mesh:3x3", "fail", "link:3", "fail: 'link:3': link 3 of mesh:3x3 does not exist"),
    ("torus:8x8", "fail", "node:64", ("fail: 'node:64': vertex 64 is out of range; expected a "
                                     "vertex id in 0..63 of torus:8x8")),
    ("torus:8x8", "fail", "0,0-2,0", ("fail: '0,0-2,0' selects no link: no cable of torus:8x8 "
                                     "joins '0,0' and '2,0'")),
    ("torus:8x8", "fail", "1,2,3", ("fail: '1,2,3': '1,2,3' has 3 coordinate(s); torus:8x8 has "
                                   "2 dimensions")),
    ("torus:8x8", "fail", "9,0", "fail: '9,0': coordinate 9 is out of range; expected 0..7"),
    ("torus:8x8", "fail", "spine:0", ("fail: 'spine:0': 'spine:' is not a selector of "
                                     "torus:8x8; allowed: link:ID[-ID]; node:V; coordinates "
                                     "X0,X1 ('*' any) of the 8x8 grid; A-B")),
    ("leafspine:4x2x2", "fail", "spin:0", ("fail: 'spin:0': 'spin:' is not a selector of "
                                          "leafspine:4x2x2 (did you mean 'spine'?); allowed: "
                                          "link:ID[-ID]; node:V; LEVEL:I or LEVEL:* with LEVEL "
                                          "one of host, leaf, spine; A-B")),
    ("torus:8x8", "fail", "randm:2:0", ("fail: 'randm:2:0': 'randm:' is not a selector of "
                                       "torus:8x8 (did you mean 'random'?); allowed: "
                                       "link:ID[-ID]; node:V; coordinates X0,X1 ('*' any) of "
                                       "the 8x8 grid; A-B (the cables between two of these); "
                                       "random:K:SEED")),
    ("leafspine:4x2x2", "fail", "spine:2", ("fail: 'spine:2': spine index 2 is out of range; "
                                           "expected spine:I with I in 0..1")),
    ("fattree:k=4", "fail", "random:5", "fail: 'random:5': expected random:K:SEED"),
    ("fattree:k=4", "fail", "random:33:0", ("fail: 'random:33:0': count 33 is out of range; "
                                           "expected a count in 0..32 (the fabric cables")),
    ("fattree:k=4", "fail", "random:1:-1", "fail: 'random:1:-1': seed -1 is out of range"),
    ("fattree:k=4", "fail", "banana", ("fail: 'banana' is not a selector of fattree:k=4; "
                                      "allowed: link:ID[-ID]; node:V; LEVEL:I or "
                                      "LEVEL:* with LEVEL one of host, edge, agg")),
    ("torus:8x8", "fail", "id:a", "fail: 'id:a': id:NAME selects a node of a graph file"),
    ("torus:8x8", "fail", 5, "fail: 5 is not allowed; expected a selector string"),
    ("torus:8x8", "degrade", "node:1", ("degrade: 'node:1' has no factor; expected SELECTOR=F "
                                       "with F in (0, 1]")),
    ("torus:8x8", "degrade", "node:1=1.5", ("degrade: factor '1.5' in 'node:1=1.5' is not "
                                           "allowed; expected a number in (0, 1]")),
    ("torus:8x8", "degrade", "node:1=0", "degrade: factor '0' in 'node:1=0' is not allowed"),
    ("torus:8x8", "degrade", "node:1=abc", "degrade: factor 'abc' in 'node:1=abc'"),
    ("torus:8x8", "degrade", "node:1=0.5:lat=0.5", ("degrade: latency multiplier '0.5' in "
                                                   "'node:1=0.5:lat=0.5' is not allowed; "
                                                   "expected a finite number >= 1")),
    ("torus:8x8", "degrade", "node:1=0.5:bw=2", ("degrade: 'node:1=0.5:bw=2': 'bw=2' is not "
                                                "allowed; expected lat=M")),
    ("torus:8x8", "degrade", "node:99=0.5", "degrade: 'node:99': vertex 99 is out of range"),
]


@pytest.mark.parametrize("spec,option,value,message", BAD)
def test_bad_selectors_name_the_option_value_and_what_is_allowed(spec, option, value, message):
    with pytest.raises(ConfigError) as err:
        apply_faults(parse_topology(spec), **{option: value})
    text = str(err.value)
    assert text.startswith(message), text
    assert "\n" not in text


def test_disconnection_names_the_rank_the_endpoint_and_the_selector():
    topo = apply_faults("torus:4x4", fail="link:0;node:5")
    with pytest.raises(ConfigError, match=r"^fail: 'node:5' cuts off node 5 from node 0 "):
        topo.route(np.array([0]), np.array([5]))
    with pytest.raises(ConfigError, match=r"^fail: 'node:5' cuts off node 5 from node 0 "):
        topo.route(np.array([5]), np.array([0]))
    sched = get_algorithm("swing").build(16, topo, variant="bandwidth")
    with pytest.raises(ConfigError, match=r"^fail: 'node:5' cuts off node 5 \(rank 5\) from "
                                          r"node 0 \(rank 0\)"):
        check_fail_policy(sched, topo)
    # no rank on node 5: the run is fine
    mapping = np.array([v for v in range(16) if v != 5])
    small = get_algorithm("ring").build(15, topo, ports=1)
    check_fail_policy(small, topo, mapping, policy="reroute")
    t = profile(small, topo, NET, mapping=mapping).times([N_BYTES])[0]
    assert t >= profile(small, topo.base, NET, mapping=mapping).times([N_BYTES])[0]
    tree = apply_faults("fattree:k=4", fail="edge:0-agg:*")
    with pytest.raises(ConfigError, match=r"cuts off host [01] \(rank [01]\) from host"):
        check_fail_policy(get_algorithm("ring").build(16, tree), tree)


def test_fail_policy_refuses_a_hamiltonian_ring_a_failure_breaks():
    assert get_algorithm("ring").topology_bound and get_algorithm("bucket").topology_bound
    assert not any(get_algorithm(a).topology_bound for a in ("swing", "recdoub"))
    topo = apply_faults("torus:8", fail="3-4")
    ring = get_algorithm("ring").build(8, topo, ports=1)
    with pytest.raises(ConfigError) as err:
        check_fail_policy(ring, topo)
    assert str(err.value).startswith("fail: algorithm ring relies on link 3-4 ")
    assert str(err.value).endswith("pass fail_policy='reroute' (--fail-policy reroute) to route around it")
    check_fail_policy(ring, topo, policy="reroute")
    check_fail_policy(get_algorithm("swing").build(8, topo, variant="bandwidth"), topo)
    bucket = get_algorithm("bucket").build(8, topo)
    with pytest.raises(ConfigError, match="^fail: algorithm bucket relies on link "):
        check_fail_policy(bucket, topo)
    # a failure the ring does not ride (torus:4x4 snake, a cable it never uses)
    t44 = parse_topology("torus:4x4")
    sched = get_algorithm("ring").build(16, t44, ports=1)
    used = set()
    for s, d in zip(sched.steps[0].traffic.src.tolist(), sched.steps[0].traffic.dst.tolist(),
                    strict=True):
        used |= set(select_links(t44, f"node:{s}").tolist()) & \
            set(select_links(t44, f"node:{d}").tolist())
    spare = next(lk for lk in range(t44.num_links) if lk not in used)
    check_fail_policy(sched, apply_faults(t44, fail=f"link:{spare}"))
    with pytest.raises(ConfigError, match="^fail_policy: 'loose' is not allowed; expected "
                                          "strict or reroute"):
        check_fail_policy(ring, topo, policy="loose")


# ------------------------------------------------------------ the engine

@pytest.mark.parametrize("spec,fail", [("torus:8x8", "random:4:0"),
                                       ("fattree:k=4", "random:2:0;core:3")])
@pytest.mark.parametrize("alg", ["ring", "recdoub", "swing", "bucket"])
def test_every_algorithm_runs_on_failures_and_is_not_faster(spec, fail, alg):
    base = parse_topology(spec)
    topo = apply_faults(base, fail=fail, degrade="random:1:9=0.5")
    sched = get_algorithm(alg).build(base.num_endpoints, topo, **_options(alg))
    check_fail_policy(sched, topo, policy="reroute")
    for ecmp in base.ecmp_modes:
        healthy = profile(sched, base, NET, ecmp=ecmp).times([1e3, N_BYTES])
        faulty = profile(sched, topo, NET, ecmp=ecmp).times([1e3, N_BYTES])
        assert np.all(faulty >= healthy * (1 - 1e-12)), (ecmp, healthy, faulty)
        if spec.startswith("torus"):              # the ring's neighbour links fail too
            assert faulty[1] > healthy[1]


def test_fat_tree_profile_without_shortcuts_equals_the_direct_solve():
    topo = apply_faults("fattree:k=4", fail="core:0;agg:3-edge:2", degrade="core:1=0.5")
    sched = get_algorithm("recdoub").build(16, topo, variant="bandwidth")
    sizes = [1e3, 1e6]
    assert np.allclose(profile(sched, topo, NET).times(sizes),
                       direct_times(sched, topo, NET, sizes), rtol=1e-12)


def test_max_min_oracle_on_a_rerouted_permutation():
    """torus:4x4 with two failed cables, the shift permutation v -> v+5:
    the engine's step time equals the oracle's on routes enumerated here."""
    topo = apply_faults("torus:4x4", fail="0,0-0,1;2,*-3,*")
    src = np.arange(16)
    dst = (src + 5) % 16
    sched = _one_step(src, dst, np.ones(16), 16)
    flows = [sorted(_per_vertex_split(topo, int(s), int(d))[0].items())
             for s, d in zip(src, dst, strict=True)]
    _, finish, _ = completion(flows, topo.link_capacity(NET).tolist(), [1.0] * 16)
    routes = topo.route(src, dst)
    mine = [sorted(f) for f in csr_to_lists(routes.flow_ptr, routes.link, routes.frac)]
    assert [[lk for lk, _ in f] for f in mine] == [[lk for lk, _ in f] for f in flows]
    step = profile(sched, topo, NET).steps[0]
    lat = NET.alpha + routes.hops * (NET.link_latency + NET.hop_latency)
    want = max(lat[f] + finish[f] for f in range(16))
    assert math.isclose(float(step.time(np.array([1.0]))[0]), want, rel_tol=1e-12)


def test_simulate_takes_a_faulty_topology():
    import flowemu

    topo = apply_faults("torus:8x8", fail="random:4:0", degrade="0,*-1,*=0.5")
    faulty = flowemu.simulate(topo, "swing", sizes="1MiB")
    healthy = flowemu.simulate(topo.base, "swing", sizes="1MiB")
    assert faulty.topology.iloc[0] == "torus:8x8"
    assert faulty.time_s.iloc[0] > healthy.time_s.iloc[0]


def test_rerouted_split_fractions_never_pass_one():
    """Rerouted split shares are sums of even splits (six sixths on a k=12
    fat tree), which round to 1.0000000000000002; a share is at most 1, and
    the run must not stop on it (it used to raise in the solver's check)."""
    topo = apply_faults("fattree:k=12,taper=2", "random:2:7")
    n = topo.num_endpoints
    src = np.arange(n)
    routes = topo.route(src, (src + n // 2) % n, "split")
    assert routes.frac.max() <= 1.0
    res = simulate("fattree:k=12,taper=2", "ring", "1MiB", fail="random:2:7")
    assert len(res) == 1 and np.isfinite(res["time_s"]).all() and res["time_s"].iloc[0] > 0
