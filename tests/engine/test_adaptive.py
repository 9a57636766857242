"""ecmp="adaptive": min-max link load over each flow's minimal paths.

Checked against an independent solver of the same linear programme (scipy's
HiGHS on an edge formulation written here) on small instances, every result a
valid unit flow on its flow's split DAG; equal to split bit for bit where the
split is optimal; a closed form where it is not; accepted by every family
with split and refused by the others."""

import json
import re

import numpy as np
import pandas as pd
import pytest
import scipy.optimize as scipy_optimize  # tests only: the [dev] extra
import scipy.sparse as scipy_sparse

import flowemu
from flowemu.algorithms import get_algorithm
from flowemu.core.errors import ConfigError, SolverError
from flowemu.core.network import Network
from flowemu.engine.adaptive import DEFAULT_TOL, AdaptedRoutes, adaptive_routes, adaptive_solve
from flowemu.engine.profiles import direct_times, profile
from flowemu.topology import MODE_DOCS, Routes, Torus, parse_topology, topology_families
from tests.helpers.cli import one_error_line, run


# ------------------------------------------------------------- the LP oracle
def lp_optimum(routes, link_src, link_dst, src, dst, nbytes, cap):
    """min t s.t. each flow a unit flow on its split entries (conservation
    at every vertex it touches), sum_f b_f x_fl <= t c_l; scipy HiGHS, in
    units where bytes and capacities are of order 1 (its tolerances are
    absolute)."""
    unit_bytes = float(np.max(nbytes))
    unit_cap = float(np.max(cap[np.isfinite(cap)]))
    nbytes = np.asarray(nbytes, dtype=float) / unit_bytes
    cap = np.asarray(cap, dtype=float) / unit_cap
    num_entries = routes.num_entries
    rows, cols, vals, beq = [], [], [], []
    r = 0
    for f in range(routes.num_flows):
        a, b = routes.flow_ptr[f], routes.flow_ptr[f + 1]
        if a == b:
            continue
        nodes = {}
        for e in range(a, b):
            ln = routes.link[e]
            for v, sign in ((link_src[ln], 1.0), (link_dst[ln], -1.0)):
                nodes.setdefault(int(v), len(nodes))
                rows.append(r + nodes[int(v)])
                cols.append(e)
                vals.append(sign)
        rhs = np.zeros(len(nodes))
        rhs[nodes[int(src[f])]] += 1.0
        rhs[nodes[int(dst[f])]] -= 1.0
        beq.extend(rhs)
        r += len(nodes)
    a_eq = scipy_sparse.coo_matrix((vals, (rows, cols)), shape=(r, num_entries + 1))
    flow = np.repeat(np.arange(routes.num_flows), np.diff(routes.flow_ptr))
    finite = np.isfinite(cap[routes.link])
    used = np.unique(routes.link[finite])
    row_of = {int(ln): i for i, ln in enumerate(used)}
    ub_rows = [row_of[int(ln)] for ln in routes.link[finite]] + list(range(len(used)))
    ub_cols = list(np.flatnonzero(finite)) + [num_entries] * len(used)
    ub_vals = list(nbytes[flow[finite]]) + list(-cap[used])
    a_ub = scipy_sparse.coo_matrix((ub_vals, (ub_rows, ub_cols)),
                                   shape=(len(used), num_entries + 1))
    c = np.zeros(num_entries + 1)
    c[-1] = 1.0
    res = scipy_optimize.linprog(c, A_ub=a_ub, b_ub=np.zeros(len(used)), A_eq=a_eq, b_eq=beq,
                                 bounds=[(0, None)] * (num_entries + 1), method="highs")
    assert res.status == 0, res.message
    return res.fun * unit_bytes / unit_cap


def max_load(routes, nbytes, cap):
    flow = np.repeat(np.arange(routes.num_flows), np.diff(routes.flow_ptr))
    load = np.bincount(routes.link, weights=nbytes[flow] * routes.frac, minlength=len(cap))
    with np.errstate(divide="ignore", invalid="ignore"):
        util = np.where(load > 0, load / cap, 0.0)
    return util.max()


def assert_valid_flows(new, split, link_src, link_dst, src, dst):
    """Every flow: entries a subset of its split links, fractions in (0, 1],
    one unit out of the source, into the destination, conserved elsewhere."""
    assert new.num_flows == split.num_flows
    np.testing.assert_array_equal(new.hops, split.hops)
    assert np.all(new.frac > 0) and np.all(new.frac <= 1 + 1e-12)
    for f in range(split.num_flows):
        links, frac = new.flow_links(f)
        assert set(links.tolist()) <= set(split.flow_links(f)[0].tolist())
        if src[f] == dst[f]:
            assert len(links) == 0
            continue
        net = {}
        for ln, x in zip(links.tolist(), frac.tolist(), strict=True):
            net[int(link_src[ln])] = net.get(int(link_src[ln]), 0.0) + x
            net[int(link_dst[ln])] = net.get(int(link_dst[ln]), 0.0) - x
        for v, value in net.items():
            expect = 1.0 if v == src[f] else (-1.0 if v == dst[f] else 0.0)
            assert value == pytest.approx(expect, abs=1e-9), (f, v)


def random_flows(rng, n, count):
    src = rng.integers(0, n, count)
    dst = (src + rng.integers(1, n, count)) % n
    return src, dst, rng.uniform(0.1, 1.0, count)


def check_against_lp(topo, src, dst, nbytes, cap):
    split = topo.route(src, dst, "split")
    got = adaptive_solve(split, topo.link_src, topo.link_dst, src, dst, nbytes, cap)
    opt = lp_optimum(split, topo.link_src, topo.link_dst, src, dst, nbytes, cap)
    assert_valid_flows(got.routes, split, topo.link_src, topo.link_dst, src, dst)
    achieved = max_load(got.routes, nbytes, cap)
    assert achieved == pytest.approx(got.max_load, rel=1e-12)
    # the LP optimum is a floor no routing beats; the solver is within its tolerance
    assert achieved >= opt * (1 - 1e-9)
    assert achieved <= opt * (1 + DEFAULT_TOL)
    # a certified bound: never above the optimum
    assert got.lower_bound <= opt * (1 + 1e-9)
    # never worse than split
    assert achieved <= max_load(split, nbytes, cap) * (1 + 1e-15)
    return got, opt


@pytest.mark.parametrize("spec", ["torus:4x4", "torus:3x3x3", "fattree:k=4", "mesh:3x4"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_flows_match_the_lp(spec, seed):
    topo = parse_topology(spec)
    rng = np.random.default_rng(seed)
    src, dst, nbytes = random_flows(rng, topo.num_endpoints, 2 * topo.num_endpoints)
    cap = topo.link_capacity(Network())
    check_against_lp(topo, src, dst, nbytes, cap)


@pytest.mark.parametrize("spec,gain", [("hyperx:3x3", True), ("hammingmesh:2x2,2x2", True),
                                       ("mesh:3x3x2", True), ("leafspine:4x2x3", True),
                                       ("fattree:k=4,levels=2", True),
                                       ("dragonfly:a=4,p=1,h=2", False)])
def test_other_families_with_random_capacities_match_the_lp(spec, gain):
    """Random flows on families whose minimal paths branch in other ways
    (HyperX dimension orders, HammingMesh boards and switches, spines and
    parallel uplinks), every link's capacity scaled at random and the links
    at endpoints made 10x faster, so that the fabric is the bottleneck. A
    Dragonfly has one minimal path between two routers (one global link per
    pair of groups): the split is the only routing, and certified."""
    topo = parse_topology(spec)
    rng = np.random.default_rng(len(spec))
    src, dst, nbytes = random_flows(rng, topo.num_endpoints, 2 * topo.num_endpoints)
    cap = topo.link_capacity(Network()) * rng.uniform(0.2, 1.0, topo.num_links)
    at_endpoint = (topo.link_src < topo.num_endpoints) | (topo.link_dst < topo.num_endpoints)
    cap[at_endpoint] *= 10
    got, _ = check_against_lp(topo, src, dst, nbytes, cap)
    if gain:
        assert got.status == "optimized" and got.max_load < got.split_max
    else:
        assert got.status == "split optimal"


def test_tolerance_and_iteration_cap():
    """A looser ``tol`` stops earlier, within it of the LP optimum; no
    iteration at all keeps the split (nothing found beats it)."""
    topo = parse_topology("torus:4x4")
    rng = np.random.default_rng(5)
    src, dst, nbytes = random_flows(rng, 16, 40)
    cap = topo.link_capacity(Network()) * rng.uniform(0.3, 1.0, topo.num_links)
    split = topo.route(src, dst, "split")
    opt = lp_optimum(split, topo.link_src, topo.link_dst, src, dst, nbytes, cap)
    tight = adaptive_solve(split, topo.link_src, topo.link_dst, src, dst, nbytes, cap)
    loose = adaptive_solve(split, topo.link_src, topo.link_dst, src, dst, nbytes, cap, tol=1e-2)
    assert loose.iterations < tight.iterations
    assert opt * (1 - 1e-9) <= loose.max_load <= opt * (1 + 1e-2)
    none = adaptive_solve(split, topo.link_src, topo.link_dst, src, dst, nbytes, cap, max_iter=0)
    assert none.status == "no gain over split" and none.routes is split
    assert none.max_load == none.split_max > tight.max_load


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_torus_with_slow_links_matches_the_lp(seed):
    """A torus some of whose links run at a fraction of the bandwidth."""
    topo = parse_topology("torus:4x4")
    rng = np.random.default_rng(10 + seed)
    src, dst, nbytes = random_flows(rng, 16, 24)
    cap = topo.link_capacity(Network())
    slow = rng.choice(topo.num_links, 6, replace=False)
    cap[slow] *= rng.uniform(0.1, 0.9, 6)
    got, _ = check_against_lp(topo, src, dst, nbytes, cap)
    assert got.status == "optimized" and got.max_load < got.split_max


def switch_ring_graph(tmp_path):
    """Four switches in a ring of unequal links (1, 2, 0.5, 1 x 100 Gb/s),
    two hosts on each: hosts on opposite switches have two minimal paths."""
    nodes = [{"id": f"h{i}", "endpoint": True} for i in range(8)]
    nodes += [{"id": f"s{i}"} for i in range(4)]
    links = [{"src": f"h{i}", "dst": f"s{i // 2}"} for i in range(8)]
    for i, bw in enumerate([100, 200, 50, 100]):
        links.append({"src": f"s{i}", "dst": f"s{(i + 1) % 4}", "bandwidth": f"{bw}Gb/s"})
    path = tmp_path / "ring.json"
    path.write_text(json.dumps({"nodes": nodes, "links": links}))
    return parse_topology(f"graph:{path}")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_graph_with_asymmetric_capacities_matches_the_lp(tmp_path, seed):
    topo = switch_ring_graph(tmp_path)
    rng = np.random.default_rng(20 + seed)
    src, dst, nbytes = random_flows(rng, 8, 12)
    check_against_lp(topo, src, dst, nbytes, topo.link_capacity(Network()))


# --------------------------------------------------------------- closed forms
def torus_with_slow_link(factor):
    """torus:4x4 whose link 0 -> 1 runs at ``factor`` x the bandwidth (a new
    instance: parsed topologies may be shared)."""
    topo = Torus((4, 4))
    slow = int(np.flatnonzero((topo.link_src == 0) & (topo.link_dst == 1))[0])
    bw = np.full(topo.num_links, np.nan)
    bw[slow] = factor * Network().bandwidth
    object.__setattr__(topo, "link_bandwidth_abs", bw)
    return topo, slow


@pytest.mark.parametrize("factor", [0.25, 0.5, 0.8])
def test_slow_link_on_one_of_two_paths(factor):
    """Node 0 -> node 5 = (1,1) has two minimal paths, 0-1-5 (the slow link)
    and 0-4-5. The split puts half on each: max load (1/2)/(f B). Adaptive
    puts f/(1+f) on the slow path: max load 1/((1+f) B); max-min then gives
    the flow (1+f) B instead of 2 f B."""
    topo, slow = torus_with_slow_link(factor)
    net = Network()
    big = 1e6
    cap = topo.link_capacity(net)
    split = topo.route(np.array([0]), np.array([5]), "split")
    got = adaptive_solve(split, topo.link_src, topo.link_dst, [0], [5], [big], cap)
    assert got.status == "optimized" and isinstance(got.routes, AdaptedRoutes)
    bw = net.bandwidth
    assert got.split_max == pytest.approx(0.5 * big / (factor * bw), rel=1e-12)
    assert got.max_load == pytest.approx(big / ((1 + factor) * bw), rel=DEFAULT_TOL)
    assert got.lower_bound == pytest.approx(big / ((1 + factor) * bw), rel=DEFAULT_TOL)
    links, frac = got.routes.flow_links(0)
    assert dict(zip(links.tolist(), frac.tolist(), strict=True))[slow] == \
        pytest.approx(factor / (1 + factor), rel=1e-5)
    traffic = pd.DataFrame({"step": [0], "src": [0], "dst": [5], "bytes": [big]})
    lat = net.alpha + 2 * (net.link_latency + net.hop_latency)
    t_split = flowemu.time_traffic(topo, traffic, ecmp="split", network=net)["time_s"].iloc[0]
    t_adapt = flowemu.time_traffic(topo, traffic, ecmp="adaptive", network=net)["time_s"].iloc[0]
    assert t_split == pytest.approx(lat + big / (2 * factor * bw), rel=1e-12)
    assert t_adapt == pytest.approx(lat + big / ((1 + factor) * bw), rel=DEFAULT_TOL)
    assert t_adapt < t_split


def test_profile_stays_exact_in_n():
    """Adaptive fractions depend on the bytes' ratios only: the profile's
    times equal solving every step at every size directly."""
    topo, _ = torus_with_slow_link(0.3)
    # recursive doubling's peers two hops away have two minimal paths, one
    # of them through the slow link for some
    sched = get_algorithm("recdoub").build(16, topo, False, variant="bandwidth")
    sizes = [1e3, 1e6, 3e8]
    prof = profile(sched, topo, Network(), ecmp="adaptive").times(sizes)
    direct = direct_times(sched, topo, Network(), sizes, ecmp="adaptive")
    np.testing.assert_allclose(prof, direct, rtol=1e-12)
    assert prof[-1] < profile(sched, topo, Network(), ecmp="split").times(sizes)[-1]


def test_threads_do_not_change_adaptive_times():
    topo, _ = torus_with_slow_link(0.3)
    sched = get_algorithm("dbtree").build(16, topo, False)
    one = profile(sched, topo, Network(), ecmp="adaptive", threads=1).times([1e6, 1e8])
    two = profile(sched, topo, Network(), ecmp="adaptive", threads=2).times([1e6, 1e8])
    np.testing.assert_array_equal(one, two)


def test_two_flows_share_a_slow_link():
    """Flows 0 -> 5 and 1 -> 4 on torus:4x4 (nodes 1 = (0,1), 4 = (1,0),
    5 = (1,1)) each have two minimal paths; link 0 -> 4 (factor f) lies on
    one of each, link 1 -> 5 on the other of each. With shares a, b on the
    0 -> 4 paths the loads are (a+b)/f and 2-(a+b) (every other link <= 1),
    so the optimum is a+b = 2f/(1+f), max load 2/((1+f) B); the split has
    1/(f B)."""
    topo = Torus((4, 4))
    cap = topo.link_capacity(Network())
    slow = int(np.flatnonzero((topo.link_src == 0) & (topo.link_dst == 4))[0])
    f = 0.2
    cap[slow] *= f
    src, dst = np.array([0, 1]), np.array([5, 4])
    split = topo.route(src, dst, "split")
    got = adaptive_solve(split, topo.link_src, topo.link_dst, src, dst, [1.0, 1.0], cap)
    b = Network().bandwidth
    assert got.split_max == pytest.approx(1 / (f * b), rel=1e-12)
    assert got.max_load == pytest.approx(2 / ((1 + f) * b), rel=DEFAULT_TOL)
    assert got.max_load == pytest.approx(lp_optimum(split, topo.link_src, topo.link_dst, src,
                                                    dst, np.ones(2), cap), rel=DEFAULT_TOL)


# ---------------------------------------------------- equal to split where optimal
@pytest.mark.parametrize("spec", ["torus:8x8", "fattree:k=4"])
@pytest.mark.parametrize("algorithm", ["ring", "recdoub", "swing", "bucket"])
def test_bit_identical_to_split_on_healthy_networks(spec, algorithm):
    sizes = "32B,4KiB,1MiB,256MiB"
    split = flowemu.simulate(spec, algorithm, sizes, ecmp="split")["time_s"].to_numpy()
    adapt = flowemu.simulate(spec, algorithm, sizes, ecmp="adaptive")["time_s"].to_numpy()
    np.testing.assert_array_equal(adapt, split)


def test_symmetric_split_is_certified_and_returned_as_is():
    """Every node sends to the node two hops away in one dimension of a
    ring of 4: two minimal paths each, all links equally loaded."""
    topo = parse_topology("torus:4")
    src = np.arange(4)
    dst = (src + 2) % 4
    split = topo.route(src, dst, "split")
    got = adaptive_solve(split, topo.link_src, topo.link_dst, src, dst, np.ones(4),
                         topo.link_capacity(Network()))
    assert got.status == "split optimal" and got.routes is split
    assert got.lower_bound == pytest.approx(got.split_max, rel=1e-12)
    assert adaptive_routes(split, topo.link_src, topo.link_dst, src, dst, np.ones(4),
                           topo.link_capacity(Network())) is split


# ------------------------------------------------------ zero and infinite capacity
def test_zero_capacity_link_is_avoided_where_possible():
    topo = Torus((4, 4))
    cap = topo.link_capacity(Network())
    dead = int(np.flatnonzero((topo.link_src == 0) & (topo.link_dst == 1))[0])
    cap[dead] = 0.0
    split = topo.route(np.array([0]), np.array([5]), "split")
    got = adaptive_solve(split, topo.link_src, topo.link_dst, [0], [5], [1.0], cap)
    assert got.split_max == np.inf and got.status == "optimized"
    assert dead not in got.routes.link.tolist()
    assert got.max_load == pytest.approx(1.0 / Network().bandwidth, rel=1e-12)
    # a flow whose only path crosses it: every routing is infinite, split kept
    only = topo.route(np.array([0]), np.array([1]), "split")
    kept = adaptive_solve(only, topo.link_src, topo.link_dst, [0], [1], [1.0], cap)
    assert kept.status == "a flow must cross a zero-capacity link" and kept.routes is only


def test_infinite_capacity_path_takes_everything():
    topo = Torus((4, 4))
    cap = topo.link_capacity(Network())
    fast = np.flatnonzero(((topo.link_src == 0) & (topo.link_dst == 4))
                          | ((topo.link_src == 4) & (topo.link_dst == 5)))
    cap[fast] = np.inf
    split = topo.route(np.array([0]), np.array([5]), "split")
    got = adaptive_solve(split, topo.link_src, topo.link_dst, [0], [5], [1.0], cap)
    assert got.max_load == 0.0
    assert sorted(got.routes.link.tolist()) == sorted(fast.tolist())
    np.testing.assert_array_equal(got.routes.frac, [1.0, 1.0])


# ------------------------------------------------------------- bad inputs
def test_bad_arrays_are_config_errors():
    topo = parse_topology("torus:4x4")
    split = topo.route(np.array([0]), np.array([5]), "split")
    cap = topo.link_capacity(Network())
    args = (split, topo.link_src, topo.link_dst, [0], [5])
    with pytest.raises(ConfigError, match="flow_bytes: bytes must be finite and >= 0"):
        adaptive_routes(*args, [-1.0], cap)
    with pytest.raises(ConfigError, match="flow_bytes: expected 1 values, got 2"):
        adaptive_routes(*args, [1.0, 2.0], cap)
    with pytest.raises(ConfigError, match="capacity: link 3 has nan"):
        adaptive_routes(*args, [1.0], np.where(np.arange(len(cap)) == 3, np.nan, cap))
    with pytest.raises(ConfigError, match="capacity: expected 64 values"):
        adaptive_routes(*args, [1.0], cap[:5])
    with pytest.raises(ConfigError, match="tol: 2 is not allowed"):
        adaptive_routes(*args, [1.0], cap, tol=2)
    with pytest.raises(ConfigError, match="routes: 'x' is not allowed"):
        adaptive_routes("x", topo.link_src, topo.link_dst, [0], [5], [1.0], cap)
    with pytest.raises(ConfigError, match="flow_src: expected integer ids"):
        adaptive_routes(split, topo.link_src, topo.link_dst, [0.5], [5], [1.0], cap)


def test_entries_that_are_not_a_dag_are_solver_errors():
    # link ids 0 -> 1 and 1 -> 0 on a 2-node ring
    link_src, link_dst = np.array([0, 1]), np.array([1, 0])
    cycle = Routes(np.array([0, 2]), np.array([0, 1], dtype=np.int32), np.array([1.0, 1.0]),
                   np.array([2], dtype=np.int32))
    with pytest.raises(SolverError, match="cycle"):
        adaptive_routes(cycle, link_src, link_dst, [0], [1], [1.0], [1.0, 1.0])
    stray = Routes(np.array([0, 1]), np.array([0], dtype=np.int32), np.array([1.0]),
                   np.array([1], dtype=np.int32))
    with pytest.raises(SolverError, match="source to destination"):
        adaptive_routes(stray, link_src, link_dst, [1], [0], [1.0], [1.0, 1.0])


# ------------------------------------------------------------- the modes
def example(family):
    m = re.search(r"e\.g\. (" + re.escape(family) + r":[^\s;]+?)(?:,? |$|;)",
                  topology_families()[family])
    return m.group(1)


@pytest.mark.parametrize("family", sorted(topology_families()))
def test_every_family_with_split_runs_adaptive(family):
    topo = parse_topology(example(family))
    assert "split" in topo.ecmp_modes
    assert topo.engine_modes == (*topo.ecmp_modes, "adaptive")
    assert topo.check_mode("adaptive", engine=True) == "adaptive"
    ranks = min(topo.num_endpoints, 16)
    df = flowemu.simulate(topo, "ring", "1KiB,1MiB", ranks=ranks, ecmp="adaptive")
    assert np.isfinite(df["time_s"]).all() and (df["time_s"] > 0).all()
    assert (df["ecmp"] == "adaptive").all()
    # a topology alone cannot route adaptively: it needs the step's bytes
    with pytest.raises(ConfigError, match="ecmp: 'adaptive' is chosen per step by the engine"):
        topo.route(np.array([0]), np.array([1]), "adaptive")


class HashOnlyTorus(Torus):
    """A family without split (none is registered): adaptive is refused."""

    ecmp_modes = ("hash",)


def test_a_family_without_split_refuses_adaptive():
    topo = HashOnlyTorus((4, 4))
    assert topo.engine_modes == ("hash",)
    sched = get_algorithm("ring").build(16, topo, False)
    with pytest.raises(ConfigError, match=r"^ecmp: 'adaptive' does not apply to torus:4x4; "
                                          r"allowed: hash$"):
        profile(sched, topo, Network(), ecmp="adaptive")


def test_unknown_mode_lists_adaptive():
    with pytest.raises(ConfigError, match=r"ecmp: .*allowed: .*adaptive"):
        flowemu.simulate("torus:4x4", "ring", "1KiB", ecmp="adaptiv")
    with pytest.raises(ConfigError, match=r"ecmp: 'dmodk' does not apply to torus:4x4; "
                                          r"allowed: split, dor, hash, adaptive"):
        flowemu.simulate("torus:4x4", "ring", "1KiB", ecmp="dmodk")


def test_cli_lists_and_runs_adaptive(capsys):
    code, out, _ = run(capsys, ["list"])
    assert code == 0
    assert re.search(r"^  adaptive +" + re.escape(MODE_DOCS["adaptive"]) + "$", out, re.MULTILINE)
    code, out, _ = run(capsys, ["run", "-t", "torus:4x4", "-a", "ring", "-s", "1KiB",
                                "--ecmp", "adaptive"])
    assert code == 0
    code, _, err = run(capsys, ["run", "-t", "torus:4x4", "-a", "ring", "-s", "1KiB",
                                "--ecmp", "adaptiv"])
    assert code == 2 and "adaptive" in one_error_line(err)


# ------------------------------------------------------------- components
def test_components_are_balanced_apart():
    """Flows 0 -> 2 (row 0) and 4 -> 6 (row 1) of torus:4x4 share no link:
    each has two minimal paths around its ring of 4. With link 0 -> 1 at
    factor 1/4 and link 4 -> 5 at 1/2, each flow puts f/(1+f) on its slow
    path: row 1 is balanced to its own optimum 1/(1+1/2), below the overall
    max 1/(1+1/4). Without the second slow link, row 1 is certified and
    keeps the split's 1/2 exactly."""
    topo = Torus((4, 4))
    b = Network().bandwidth

    def link_id(u, v):
        return int(np.flatnonzero((topo.link_src == u) & (topo.link_dst == v))[0])

    src, dst = np.array([0, 4]), np.array([2, 6])
    split = topo.route(src, dst, "split")
    for slow_row1 in (True, False):
        cap = topo.link_capacity(Network())
        cap[link_id(0, 1)] *= 0.25
        if slow_row1:
            cap[link_id(4, 5)] *= 0.5
        got = adaptive_solve(split, topo.link_src, topo.link_dst, src, dst, [1.0, 1.0], cap)
        assert got.status == "optimized"
        assert got.max_load == pytest.approx(1 / (1.25 * b), rel=DEFAULT_TOL)
        first = dict(zip(*(a.tolist() for a in got.routes.flow_links(0)), strict=True))
        second = dict(zip(*(a.tolist() for a in got.routes.flow_links(1)), strict=True))
        assert first[link_id(0, 1)] == pytest.approx(0.25 / 1.25, rel=1e-5)
        if slow_row1:
            assert second[link_id(4, 5)] == pytest.approx(0.5 / 1.5, rel=1e-5)
        else:
            assert second == dict(zip(*(a.tolist() for a in split.flow_links(1)), strict=True))
            assert set(second.values()) == {0.5}


def test_flow_dump_shows_adaptive_fractions_and_hops():
    """Recursive doubling's step between nodes 8 apart on torus:4x4 sends
    0 -> 8 over 0-4-8 and 0-12-8, and 12 -> 4 over 12-0-4 and 12-8-4. With
    link 0 -> 4 at f = 1/4 and shares a, b of those flows on it, links
    0 -> 4 and 12 -> 8 carry (a+b)/f and 2-(a+b): the optimum has
    a + b = 2f/(1+f) = 0.4 (max 1.6, every other link can stay below). The
    dump lists those fractions and every entry as a hop."""
    from flowemu.api.flows import flow_table

    topo = Torus((4, 4))
    slow = int(np.flatnonzero((topo.link_src == 0) & (topo.link_dst == 4))[0])
    bw = np.full(topo.num_links, np.nan)
    bw[slow] = 0.25 * Network().bandwidth
    object.__setattr__(topo, "link_bandwidth_abs", bw)
    sched = get_algorithm("recdoub").build(16, topo, False, variant="bandwidth")
    step = next(k for k, s in enumerate(sched.steps) if 8 in s.traffic.dst[s.traffic.src == 0])
    df = flow_table(sched, topo, Network(), 1e6, ecmp="adaptive", steps=[step])
    row = df[df.src == 0].iloc[0]
    assert row.dst == 8 and row.path == "0>4 0>12 4>8 12>8"
    on_slow = 0.0
    for text in df.links:
        fracs = dict(item.split(":") for item in text.split())
        on_slow += float(fracs.get(str(slow), 0.0))
    assert on_slow == pytest.approx(0.4, rel=1e-5)
