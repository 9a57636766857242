"""Incast charged per tier, where flows converge (issue 14, GenModel §3.2).

A flow converges at the highest switch on its path: on a tree its sender's
and receiver's lowest common ancestor, between sites the cross-site tier. A
receiver gets one ingress resource per convergence level of the flows into
it, with that level's (w_t, ε) and w = the active flows of that level into
it. Checked here against closed forms (eq. 8/10 with the link shares worked
out by hand), against tests/helpers/maxmin_oracle.py with an ingress construction
built independently in this file (convergence levels by BFS on the link
graph), and against the single-class path for families without tiers.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flowemu
from flowemu.algorithms import get_algorithm
from flowemu.core.network import Network
from flowemu.engine.profiles import profile
from flowemu.kernels.maxmin import STATUS_OK, solve_completion
from flowemu.topology import parse_topology
from tests.helpers.cli import one_error_line, run
from tests.helpers.maxmin_oracle import completion, csr_to_lists

RTOL = 1e-9
B = 1e9          # network bandwidth in the closed forms, bytes/s (β = 1 ns/byte)
BETA = 1 / B

#: a network with every latency 0 (fluid times only) and incast off
QUIET = Network.from_si(bandwidth=B, link_latency=0, hop_latency=0)


def close(a, b, rtol=RTOL):
    return np.allclose(np.asarray(a, float), np.asarray(b, float), rtol=rtol, atol=0)


# ------------------------------------------------------------ an independent LCA

def convergence_levels(topo) -> dict:
    """Level where each flow s -> d (hosts, s != d) converges, found on the
    link graph alone: the site roots are the first switches (the family's
    documented vertex order), depths are BFS distances from them without the
    root-root links, each path is found by BFS, and its highest vertex gives
    the level (a path through two roots is cross-site: level 0)."""
    n, hosts = topo.num_nodes, topo.num_endpoints
    sites = len(topo.sites)
    roots = set(range(hosts, hosts + sites))
    adj = [[] for _ in range(n)]
    for a, b in zip(topo.link_src.tolist(), topo.link_dst.tolist(), strict=True):
        if b not in adj[a]:
            adj[a].append(b)

    def bfs(starts, skip_root_links):
        prev = {v: None for v in starts}
        dist = {v: 0 for v in starts}
        queue = list(starts)
        for v in queue:
            for w in adj[v]:
                if skip_root_links and v in roots and w in roots:
                    continue
                if w not in dist:
                    dist[w], prev[w] = dist[v] + 1, v
                    queue.append(w)
        return dist, prev

    depth, _ = bfs(sorted(roots), True)
    out = {}
    for s in range(hosts):
        _, prev = bfs([s], False)
        for d in range(hosts):
            if d == s:
                continue
            path = [d]
            while path[-1] != s:
                path.append(prev[path[-1]])
            if len(roots.intersection(path)) > 1:
                out[s, d] = 0
            else:
                out[s, d] = min(depth[v] for v in path) + (1 if sites > 1 else 0)
    return out


# ------------------------------------------------------------ the topology protocol

@pytest.mark.parametrize("spec", ["torus:4x4", "leafspine:4x2x2", "hyperx:3x3", "mesh:3x3"])
def test_families_without_tiers_have_one_class_with_the_network_terms(spec):
    topo = parse_topology(spec)
    on = Network.from_si(incast_threshold=3, incast_slope=2e-12)
    w_t, eps = topo.incast_classes(on)
    assert w_t.tolist() == [3.0] and eps.tolist() == [2e-12]
    w_t, eps = topo.incast_classes(Network())                 # incast off
    assert w_t.tolist() == [math.inf] and eps.tolist() == [0.0]
    src = np.arange(topo.num_endpoints)
    assert topo.flow_incast_class(src, src[::-1]).tolist() == [0] * len(src)


def test_tree_classes_are_its_levels_with_the_network_as_fallback():
    topo = parse_topology("tree:2x4,eps=1ns:,wt=:3")
    w_t, eps = topo.incast_classes(Network.from_si(incast_threshold=5, incast_slope=2e-9))
    assert w_t.tolist() == [5.0, 3.0] and eps.tolist() == [1e-9, 2e-9]
    # a network with incast off falls back to its (off) terms
    w_t, eps = topo.incast_classes(Network())
    assert w_t.tolist() == [math.inf, 3.0] and eps.tolist() == [1e-9, 0.0]


def test_sym384_classes_are_table5_per_byte():
    topo = parse_topology("tree:SYM384")
    w_t, eps = topo.incast_classes(Network())
    # Table 5: Root SW ε = 6.00e-12, Middle SW 1.22e-10 s per float, w_t = 9;
    # 4 bytes a float
    assert w_t.tolist() == [9.0, 9.0]
    assert close(eps, [6.00e-12 / 4, 1.22e-10 / 4], 1e-15)


@pytest.mark.parametrize("spec", ["tree:2x4", "tree:2x(2x2+2)", "tree:3+2x2",
                                  "tree:dc(2x2)+dc(3)", "tree:dc(2)+dc(1x2)+dc(3)"])
def test_flow_class_is_the_level_where_the_flow_converges(spec):
    topo = parse_topology(spec)
    levels = convergence_levels(topo)
    src = np.array([s for s, _ in levels])
    dst = np.array([d for _, d in levels])
    got = topo.flow_incast_class(src, dst)
    assert got.tolist() == list(levels.values())
    assert topo.flow_incast_class(np.arange(3), np.arange(3)).tolist() == [0, 0, 0]


def test_flow_class_checks_its_ids():
    topo = parse_topology("tree:2x4")
    with pytest.raises(flowemu.core.errors.RoutingError):
        topo.flow_incast_class(np.array([0]), np.array([8]))


# ------------------------------------------------------------ closed forms on tree:2x4
#
# tree:2x4: a root, middle switches M0 (hosts 0-3) and M1 (hosts 4-7), every
# link B. Level 0 (root -> middle): ε0 = 1 ns, w_t0 = 1; level 1 (middle ->
# hosts): ε1 = 0.5 ns, w_t1 = 0. The network's own incast is off.

TREE = "tree:2x4,eps=1ns:500ps,wt=1:0"
E0, W0, E1, W1 = 1e-9, 1, 0.5e-9, 0


def frame(flows, size):
    import pandas as pd
    return pd.DataFrame({"step": 0, "src": [s for s, _ in flows], "dst": [d for _, d in flows],
                         "bytes": float(size)})


def traffic_time(spec, flows, size, network=QUIET):
    return float(flowemu.time_traffic(spec, frame(flows, size), network=network).time_s[0])


def test_flows_across_the_root_pay_the_root_level_terms():
    # 4 flows 4..7 -> 0 converge at the root: w = 4 > w_t0. The root -> M0 and
    # M0 -> 0 links give each B/4; the ingress resource 1/(β + 3 ε0) = B/4
    # shared by 4 gives B/16: eq. 8, T = w·S·(β + (w − w_t0)·ε0).
    S = 1e6
    t = traffic_time(TREE, [(s, 0) for s in range(4, 8)], S)
    assert close(t, 4 * S * (BETA + (4 - W0) * E0))
    assert close(t, 16 * S / B)


def test_flows_inside_a_middle_switch_pay_the_middle_level_terms():
    # 3 flows 1..3 -> 0 converge at M0: T = 3·S·(β + (3 − w_t1)·ε1)
    S = 1e6
    t = traffic_time(TREE, [(s, 0) for s in (1, 2, 3)], S)
    assert close(t, 3 * S * (BETA + (3 - W1) * E1))
    # the same flows on a tree whose levels swap their terms pay the other one
    swapped = "tree:2x4,eps=500ps:1ns,wt=0:1"
    assert close(traffic_time(swapped, [(s, 0) for s in (1, 2, 3)], S),
                 3 * S * (BETA + (3 - 1) * 1e-9))


def solve_tree(spec, flows, size, network=QUIET):
    topo = parse_topology(spec)
    src = np.array([s for s, _ in flows])
    dst = np.array([d for _, d in flows])
    routes = topo.route(src, dst)
    w_t, eps = topo.incast_classes(network)
    sol = solve_completion(routes, topo.link_capacity(network), np.full(len(flows), size),
                           flow_dst=dst, ingress_capacity=topo.ingress_capacity(network),
                           incast_threshold=w_t, incast_slope=eps,
                           flow_class=topo.flow_incast_class(src, dst))
    assert sol.status == STATUS_OK
    return sol


def test_mixed_flows_into_one_receiver_use_one_resource_per_level():
    # 4 root flows (4..7 -> 0) and 3 middle flows (1..3 -> 0) at once. Root
    # resource: 1/(β + 3ε0) = B/4 for 4 flows -> B/16 each (the lowest level);
    # the M0 -> 0 link then has B − 4·B/16 = 0.75 B for 3 flows (0.25 B), the
    # middle resource 1/(β + 3ε1) = 0.4 B for 3 (2B/15 each): they run at
    # 2B/15 and finish at 7.5 S/B; the root flows keep B/16 (their resource
    # still has w = 4) and finish at 16 S/B. One shared resource (w = 7)
    # would slow every flow instead.
    S = 1e6
    flows = [(s, 0) for s in range(4, 8)] + [(s, 0) for s in (1, 2, 3)]
    sol = solve_tree(TREE, flows, S)
    assert close(sol.rate0, [B / 16] * 4 + [2 * B / 15] * 3)
    assert close(sol.finish, [16 * S / B] * 4 + [7.5 * S / B] * 3)
    # with the middle level's incast off, its flows take the link's 0.25 B
    # and finish at 4 S/B; the root flows are untouched
    sol = solve_tree("tree:2x4,eps=1ns:0s,wt=1:0", flows, S)
    assert close(sol.finish, [16 * S / B] * 4 + [4 * S / B] * 3)


def test_level_terms_apply_with_the_network_incast_off_and_override_it():
    # a one-level tree is one class: 3 flows -> 0 pay the level's terms
    S = 1e6
    flows = [(1, 0), (2, 0), (3, 0)]
    assert close(traffic_time("tree:4,eps=1ns,wt=1", flows, S), 3 * S * (BETA + 2 * 1e-9))
    # the network's terms where the level gives none, the level's elsewhere
    net = Network.from_si(bandwidth=B, link_latency=0, hop_latency=0, incast_threshold=0,
                  incast_slope=2e-9)
    assert close(traffic_time("tree:4,wt=1", flows, S, net), 3 * S * (BETA + 2 * 2e-9))
    assert close(traffic_time("tree:4,eps=1ns", flows, S, net), 3 * S * (BETA + 3 * 1e-9))
    assert close(traffic_time("tree:4", flows, S, net), 3 * S * (BETA + 3 * 2e-9))
    # a level with w_t = inf turns the network's incast off there
    assert close(traffic_time("tree:4,wt=inf", flows, S, net), 3 * S * BETA)


# ------------------------------------------------------------ CPS (co-located PS)

def cps_time(spec, mapping, n, network=QUIET):
    topo = parse_topology(spec)
    sched = get_algorithm("cps").build(len(mapping), topo, False)
    return float(profile(sched, topo, network, mapping=mapping, threads=1).times([n])[0])


def cps_closed_form(N, n, w_t, eps, beta=BETA):
    """Two steps (reduce-scatter, all-gather), each: every receiver takes
    N − 1 flows of n/N, limited by its ingress resource (eq. 8/10)."""
    return 2 * (N - 1) * (n / N) * (beta + max(N - 1 - w_t, 0) * eps)


def test_cps_inside_one_middle_switch_pays_the_middle_terms():
    n = 8e6
    assert close(cps_time(TREE, [0, 1, 2, 3], n), cps_closed_form(4, n, W1, E1))


def test_cps_across_the_root_pays_the_root_terms():
    # tree:4x2: one rank per middle switch, every flow converges at the root
    spec = "tree:4x2,eps=1ns:500ps,wt=1:0"
    n = 8e6
    assert close(cps_time(spec, [0, 2, 4, 6], n), cps_closed_form(4, n, W0, E0))


def test_cps_on_every_host_splits_each_receivers_fan_in_by_level():
    # 8 ranks on tree:2x4 with 4x root links (16 flows each cross M -> root:
    # B/4 each, not binding). Every receiver: 4 root flows (w = 4 > 1: B/4
    # shared, B/16 each) and 3 middle flows (w = 3 > 0: 1/(β + 3ε1) = 0.4 B,
    # 2B/15 each); its links carry 4·B/16 + 3·2B/15 < B. A step lasts until
    # the root flows finish: (n/8)/(B/16) = 2n/B.
    spec = "tree:2x4,bw=4x:1x,eps=1ns:500ps,wt=1:0"
    n = 8e6
    step = max(4 * (n / 8) * (BETA + (4 - W0) * E0), 3 * (n / 8) * (BETA + (3 - W1) * E1))
    assert close(step, 2 * n / B)
    assert close(cps_time(spec, list(range(8)), n), 2 * step)


def test_sym384_cps_hand_arithmetic():
    # tree:SYM384 (Table 5, per byte: β_mid = 6.4e-9/4 on the host links,
    # 6.4e-10/4 on the root links; ε_root = 6e-12/4, ε_mid = 1.22e-10/4; w_t
    # = 9; 6.58 ms per link). α, hop latency, γ and δ are 0 here.
    beta_mid, eps_root, eps_mid, lat = 6.4e-9 / 4, 6e-12 / 4, 1.22e-10 / 4, 6.58e-3
    net = Network(alpha=0, hop_latency=0)
    n = 1e8 * 4
    # 24 ranks on one middle switch: 2 links a flow; fan-in 23 > 9 at the
    # middle level
    t = cps_time("tree:SYM384", list(range(24)), n, net)
    assert close(t, 2 * (2 * lat + 23 / 24 * n * (beta_mid + (23 - 9) * eps_mid)))
    # 16 ranks, one per middle switch: 4 links a flow; fan-in 15 > 9 at the
    # root level (the 50 Gb/s root links carry 15 flows: not binding)
    t = cps_time("tree:SYM384", list(range(0, 384, 24)), n, net)
    assert close(t, 2 * (4 * lat + 15 / 16 * n * (beta_mid + (15 - 9) * eps_root)))


def test_sym384_full_cps_is_bound_by_the_root_links():
    # all 384 ranks: each middle switch's 50 Gb/s uplink carries 24 x 360
    # flows (B_mid/864 each), below both ingress shares (root: 1/(β_mid +
    # 351 ε_root)/360, middle: 1/(β_mid + 14 ε_mid)/23) and the host link's
    # share; so every root flow runs at B_mid/864 until the end: a step is
    # 4 links + (n/384)·864·β_mid = 2.25 n β_mid
    beta_mid, lat = 6.4e-9 / 4, 6.58e-3
    n = 1e7 * 4
    t = cps_time("tree:SYM384", list(range(384)), n, Network(alpha=0, hop_latency=0))
    assert close(t, 2 * (4 * lat + 864 / 384 * n * beta_mid))


# ------------------------------------------------------------ against the oracle

def oracle_finish(topo, src, dst, sizes, network):
    """Finish times from the pure-Python oracle, with one ingress resource per
    (receiver, level) pair built here, numbered in order of first use."""
    routes = topo.route(src, dst)
    paths = csr_to_lists(routes.flow_ptr, routes.link, routes.frac)
    capacity = [float(c) for c in topo.link_capacity(network)]
    n_links = len(capacity)
    levels = convergence_levels(topo)
    w_t, eps = topo.incast_classes(network)
    base = topo.ingress_capacity(network)
    pair_id: dict = {}
    terms_wt, terms_eps = [], []
    for f, (s, d) in enumerate(zip(src.tolist(), dst.tolist(), strict=True)):
        if not paths[f]:
            continue
        k = levels[s, d]
        if (d, k) not in pair_id:
            pair_id[d, k] = n_links + len(pair_id)
            capacity.append(float(base[d]))
            terms_wt.append(float(w_t[k]))
            terms_eps.append(float(eps[k]))
        paths[f] = paths[f] + [(pair_id[d, k], 1.0)]
    _, finish, status = completion(paths, capacity, [float(b) for b in sizes], n_plain=n_links,
                                   w_t=terms_wt, eps=terms_eps)
    assert status == 0
    return finish


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=st.sampled_from(["tree:2x4,eps=1ns:500ps,wt=1:0",
                             "tree:2x(2x2+2),uplinks=2,eps=2ns::300ps,wt=0:2:1",
                             "tree:dc(2x2)+dc(3),bw=3x:2x:1x,eps=4ns:1ns:,wt=1:1:",
                             "tree:3+2x2,eps=:1ns,wt=2:1"]),
       seed=st.integers(0, 2**32 - 1), n_flows=st.integers(1, 24),
       network_incast=st.booleans())
def test_random_traffic_matches_the_oracle(spec, seed, n_flows, network_incast):
    topo = parse_topology(spec)
    rng = np.random.default_rng(seed)
    hosts = topo.num_endpoints
    src = rng.integers(0, hosts, n_flows)
    dst = rng.integers(0, hosts, n_flows)
    src[dst == src] = (src[dst == src] + 1) % hosts
    # distinct (src, dst) pairs, as schedules have
    pairs = np.unique(np.stack([src, dst], 1), axis=0)
    src, dst = pairs[:, 0].copy(), pairs[:, 1].copy()
    sizes = rng.uniform(0.5, 2.0, len(src)) * 1e6
    net = (Network.from_si(bandwidth=B, incast_threshold=1, incast_slope=1.5e-9) if network_incast
           else Network.from_si(bandwidth=B))
    routes = topo.route(src, dst)
    w_t, eps = topo.incast_classes(net)
    for method in ("incremental", "screened"):
        sol = solve_completion(routes, topo.link_capacity(net), sizes, flow_dst=dst,
                               ingress_capacity=topo.ingress_capacity(net), incast_threshold=w_t,
                               incast_slope=eps, flow_class=topo.flow_incast_class(src, dst),
                               method=method)
        assert sol.status == STATUS_OK
        assert close(sol.finish, oracle_finish(topo, src, dst, sizes, net))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_classes=st.integers(1, 4),
       n_flows=st.integers(1, 16))
def test_solver_classes_match_the_oracle_on_random_paths(seed, n_classes, n_flows):
    # random paths over 4 links into 3 receivers, random classes and terms
    rng = np.random.default_rng(seed)
    paths = []
    for _ in range(n_flows):
        links = rng.choice(4, rng.integers(0, 3), replace=False)
        paths.append([(int(r), float(rng.choice([1.0, 0.5]))) for r in links])
    flow_ptr = np.cumsum([0] + [len(p) for p in paths]).astype(np.int64)
    res = np.array([r for p in paths for r, _ in p], dtype=np.int32)
    frac = np.array([a for p in paths for _, a in p], dtype=np.float64)
    routes = flowemu.topology.Routes(flow_ptr, res, frac,
                                     np.array([len(p) for p in paths], np.int32))
    cap = rng.uniform(1.0, 3.0, 4)
    ingress = rng.uniform(0.5, 2.0, 3)
    dst = rng.integers(0, 3, n_flows)
    cls = rng.integers(0, n_classes, n_flows)
    w_t = rng.choice([0.0, 1.0, 2.0, math.inf], n_classes)
    eps = rng.choice([0.0, 0.1, 0.7], n_classes)
    sizes = rng.uniform(0.1, 1.0, n_flows)
    sol = solve_completion(routes, cap, sizes, flow_dst=dst, ingress_capacity=ingress,
                           incast_threshold=w_t, incast_slope=eps, flow_class=cls)
    assert sol.status == STATUS_OK
    on = bool(np.any((eps > 0) & np.isfinite(w_t)))
    capacity = list(map(float, cap))
    ids: dict = {}
    twt, teps = [], []
    opaths = []
    for f, p in enumerate(paths):
        if on and p:
            key = (int(dst[f]), int(cls[f]))
            if key not in ids:
                ids[key] = 4 + len(ids)
                capacity.append(float(ingress[key[0]]))
                twt.append(float(w_t[key[1]]))
                teps.append(float(eps[key[1]]))
            p = p + [(ids[key], 1.0)]
        opaths.append(p)
    _, finish, status = completion(opaths, capacity, list(map(float, sizes)), n_plain=4,
                                   w_t=twt, eps=teps)
    assert status == 0
    assert close(sol.finish, finish)


# ------------------------------------------------------------ one class = today's path

def test_one_class_as_an_array_is_the_scalar_path_bit_for_bit():
    topo = parse_topology("torus:4x4")
    rng = np.random.default_rng(5)
    src = np.arange(16)
    dst = rng.permutation(16)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    routes = topo.route(src, dst)
    net = Network.from_si(incast_threshold=0, incast_slope=1e-11)
    cap = topo.link_capacity(net)
    ing = topo.ingress_capacity(net)
    sizes = rng.uniform(1.0, 2.0, len(src)) * 1e6
    a = solve_completion(routes, cap, sizes, flow_dst=dst, ingress_capacity=ing,
                         incast_threshold=0, incast_slope=1e-11)
    b = solve_completion(routes, cap, sizes, flow_dst=dst, ingress_capacity=ing,
                         incast_threshold=np.array([0.0]), incast_slope=np.array([1e-11]),
                         flow_class=np.zeros(len(src), np.int64))
    assert a.finish.tolist() == b.finish.tolist() and a.rate0.tolist() == b.rate0.tolist()


@pytest.mark.parametrize("spec,algorithm,opts", [
    ("torus:4x4", "ring", {}), ("torus:4x4", "recdoub", {"variant": "bandwidth"}),
    ("leafspine:4x2x2", "cps", {}), ("tree:8", "cps", {})])
def test_families_with_one_class_keep_the_network_wide_model(spec, algorithm, opts):
    # the engine's times equal a step-by-step solve with the network's
    # scalar terms (the model before per-tier incast)
    topo = parse_topology(spec)
    net = Network.from_si(incast_threshold=1, incast_slope=2e-11, link_latency=0, hop_latency=0)
    sched = get_algorithm(algorithm).build(topo.num_endpoints, topo, False, **opts)
    n = 1e6
    got = profile(sched, topo, net, threads=1).times([n])[0]
    want = 0.0
    for step in sched.steps:
        tr = step.traffic
        if tr.num_flows == 0:
            continue
        routes = topo.route(tr.src, tr.dst)
        sol = solve_completion(routes, topo.link_capacity(net), tr.share * n, flow_dst=tr.dst,
                               ingress_capacity=topo.ingress_capacity(net),
                               incast_threshold=1.0, incast_slope=2e-11)
        want += sol.finish.max()
    assert close(got, want, 1e-12)


# ------------------------------------------------------------ every algorithm, bad inputs

@pytest.mark.parametrize("algorithm", ["ring", "recdoub", "swing", "bucket", "cps"])
def test_every_algorithm_runs_and_incast_only_slows_it(algorithm):
    spec = "tree:2x4,eps=1ns:500ps,wt=1:0"
    with_incast = flowemu.simulate(spec, algorithm, "1MiB,16MiB", threads=1)
    without = flowemu.simulate("tree:2x4", algorithm, "1MiB,16MiB", threads=1)
    assert (with_incast.time_s.to_numpy() >= without.time_s.to_numpy() * (1 - 1e-12)).all()
    if algorithm == "cps":      # fan-in 7 > w_t: strictly slower
        assert (with_incast.time_s.to_numpy() > without.time_s.to_numpy() * 1.01).all()


@pytest.mark.parametrize("kwargs,needle", [
    ({"incast_threshold": [1.0, 2.0], "incast_slope": [0.1]}, "equal length"),
    ({"incast_threshold": [1.0, np.nan], "incast_slope": [0.1, 0.1]}, "class 1"),
    ({"incast_threshold": [1.0, 1.0], "incast_slope": [0.1, -0.1]}, "incast_slope"),
    ({"incast_threshold": [1.0, 1.0], "incast_slope": [0.1, 0.1],
      "flow_class": [0, 2]}, "flow_class[1] = 2"),
    ({"incast_threshold": [1.0, 1.0], "incast_slope": [0.1, 0.1],
      "flow_class": [0]}, "flow_class: expected 2"),
    ({"incast_threshold": [1.0, 1.0], "incast_slope": [0.1, 0.1],
      "flow_class": [0.0, 1.0]}, "integer"),
])
def test_bad_class_arguments_are_refused(kwargs, needle):
    routes = flowemu.topology.Routes(np.array([0, 1, 2], np.int64), np.array([0, 1], np.int32),
                                     np.ones(2), np.ones(2, np.int32))
    kw = {"flow_dst": np.array([0, 1]), "ingress_capacity": np.ones(2), **kwargs}
    with pytest.raises(ValueError) as exc:
        solve_completion(routes, np.ones(2), np.ones(2), **kw)
    assert needle in str(exc.value)


def test_cli_runs_a_tree_with_level_incast(capsys):
    import io

    import pandas as pd

    code, out, err = run(capsys, ["run", "-t", TREE, "-a", "cps", "-s", "8MB", "-f", "csv",
                                  "--bandwidth", "8Gb/s", "--link-latency", "0",
                                  "--hop-latency", "0"])
    assert code == 0, err
    # every host: the M -> root links (1x here) carry 16 flows at B/16, the
    # root flows' ingress share too, so a step still lasts (n/8)/(B/16)
    row = pd.read_csv(io.StringIO(out)).iloc[0]
    assert close(row.time_s, 2 * 2 * 8e6 / B)


@pytest.mark.parametrize("kwargs,needle", [
    ({"alpha": "1e308s"}, "alpha: 1e+308 s is not allowed"),
    ({"hop_latency": "2e9s"}, "hop_latency"),
    ({"gamma": "1e300s"}, "gamma: 1e+300 s per byte"),
    ({"bandwidth": "5e-324B/s"}, "bandwidth: a link of 5e-324 bytes/s"),
])
def test_times_that_would_overflow_are_refused(kwargs, needle):
    # alpha = 1e308 made the total of a ring's steps overflow to inf (a numpy
    # RuntimeWarning), bandwidth = 5e-324 a rate underflow to 0 (a SolverError)
    with pytest.raises(flowemu.core.errors.ConfigError) as exc:
        flowemu.simulate("torus:4", "ring", "1KiB", threads=1, **kwargs)
    assert needle in str(exc.value) and "\n" not in str(exc.value)


def test_tree_level_values_that_would_overflow_are_refused(capsys):
    # (the topology's own terms: the message names --topology, not a network
    # field the user never gave)
    code, _, err = run(capsys, ["run", "-t", "tree:2x4,eps=2e9s:", "-a", "cps", "-s", "1KiB"])
    assert code == 2 and one_error_line(err).startswith(
        "flowemu: error: --topology 'tree:2x4,eps=2000000000s:': an incast slope of "
        "2000000000.0 s per byte is not allowed")
    code, _, err = run(capsys, ["run", "-t", "tree:2x4,lat=1e12s:", "-a", "cps", "-s", "1KiB"])
    assert code == 2 and "--topology 'tree:2x4,lat=" in one_error_line(err) \
        and "a link latency of" in one_error_line(err)
    # a degrade's latency multiplier names the degrade, not the topology
    code, _, err = run(capsys, ["run", "-t", "torus:4x4", "-a", "ring", "-s", "1KiB",
                                "--degrade", "link:0=0.5:lat=1e30"])
    assert code == 2 and one_error_line(err).startswith("flowemu: error: --degrade: ") \
        and "leaves a link latency of 1e+23 s" in one_error_line(err)
    # a degrade beside a topology whose own terms are out of range: the topology
    code, _, err = run(capsys, ["run", "-t", "leafspine:4x4x2,uplink=1e-30", "-a", "ring",
                                "-s", "1KiB", "--degrade", "spine:0=1"])
    assert code == 2 and one_error_line(err).startswith(
        "flowemu: error: --topology 'leafspine:4x4x2,uplink=1e-30': a link of ")
    code, _, err = run(capsys, ["run", "-t", "leafspine:2x2x2,uplink=1e-25", "-a", "ring", "-s",
                                "1KiB"])
    assert code == 2 and one_error_line(err).startswith(
        "flowemu: error: --topology 'leafspine:2x2x2,uplink=1e-25': a link of 5e-15 bytes/s")


def test_sparse_receiver_classes_number_their_resources_like_dense_ones():
    # the same flows on tree:2x8x64 (classes x vertices small: ingress pairs
    # numbered by marking) and tree:64x8x64 (33k hosts, 3 classes, 20 flows:
    # numbered by np.unique) -- the hosts of the first two depth-1 subtrees
    # have the same ids and surroundings in both
    options = ",eps=3ns:2ns:1ns,wt=1:2:0"
    rng = np.random.default_rng(11)
    src = rng.integers(0, 1024, 20)
    dst = rng.integers(0, 1024, 20)
    dst[src == dst] = (dst[src == dst] + 1) % 1024
    dst[:6] = 7                                   # a receiver with flows of every level
    sizes = rng.uniform(0.5, 2.0, 20) * 1e6
    finishes = []
    for spec in ("tree:2x8x64" + options, "tree:64x8x64" + options):
        topo = parse_topology(spec)
        routes = topo.route(src, dst)
        w_t, eps = topo.incast_classes(QUIET)
        sol = solve_completion(routes, topo.link_capacity(QUIET), sizes, flow_dst=dst,
                               ingress_capacity=topo.ingress_capacity(QUIET),
                               incast_threshold=w_t, incast_slope=eps,
                               flow_class=topo.flow_incast_class(src, dst))
        assert sol.status == STATUS_OK
        finishes.append(sol.finish)
    assert 3 * topo.num_nodes > 2 * len(src) + (1 << 16)
    assert close(finishes[0], finishes[1], 1e-12)


def test_flow_dump_charges_each_flow_its_level():
    # flowemu.flows re-solves the step itself: CPS on every host of TREE,
    # receiver 0 (1x root links: the M1 -> root link's 16 flows get B/16 =
    # the root resource's share). Root flows B/16, middle flows 2B/15 (the
    # mixed-receiver arithmetic above with S = n/8 = 1 MB)
    df = flowemu.flows(TREE, "cps", size="8MB", steps="0", bandwidth="8Gb/s", link_latency=0,
                       hop_latency=0)
    into0 = df[df.dst == 0].sort_values("src")
    S = 1e6
    assert close(into0.finish_s, [7.5 * S / B] * 3 + [16 * S / B] * 4)
    assert close(into0.rate_Bps, [2 * B / 15] * 3 + [B / 16] * 4)
