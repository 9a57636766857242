"""Background traffic (flowemu.whatif.background) and persistent flows in the
max-min solver: closed forms on one shared link, the pure-Python oracle on
random instances, profile exactness against direct solves, generators,
traffic files and bad values."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowemu.algorithms import get_algorithm
from flowemu.algorithms.base import Reduction, Schedule, Step, Traffic
from flowemu.api import profiling
from flowemu.core.errors import ConfigError
from flowemu.core.network import Network
from flowemu.engine import profiles as engine
from flowemu.kernels.maxmin import solve_completion
from flowemu.topology import parse_topology
from flowemu.whatif.background import Background, parse_background
from flowemu.whatif.stragglers import parse_slow
from tests.helpers.maxmin_oracle import check_maxmin, completion_persistent
from tests.helpers.routes import make_routes

RTOL = 1e-9
METHODS = ["auto", "incremental", "screened"]
#: no latency terms: a step is its fluid phase
FLUID = Network(alpha=0, link_latency=0, hop_latency=0)


def build(name, p, topo):
    """A schedule of the bandwidth variant where the algorithm has several."""
    spec = get_algorithm(name)
    opts = {spec.auto_param: "bandwidth"} if spec.auto_param else {}
    return spec.build(p, topo, False, **spec.parse_options(opts))


def one_flow_schedule(src=0, dst=1, share=1.0) -> Schedule:
    t = Traffic(np.array([src]), np.array([dst]), np.array([share]))
    return Schedule("one", "", 2, (Step(t, Reduction.none(), "s0"),))


# --------------------------------------------------------------------------- solver


@st.composite
def persistent_instances(draw):
    n_res = draw(st.integers(1, 12))
    n_flows = draw(st.integers(1, 14))
    paths, persistent = [], []
    for _ in range(n_flows):
        is_p = draw(st.booleans())
        k = draw(st.integers(1 if is_p else 0, min(n_res, 4)))
        links = draw(st.lists(st.integers(0, n_res - 1), min_size=k, max_size=k, unique=True))
        paths.append([(r, draw(st.sampled_from([1.0, 0.5, 0.25, 1 / 3]))) for r in links])
        persistent.append(is_p)
    cap = draw(st.lists(st.sampled_from([1.0, 2.0, 0.5, 3.0]), min_size=n_res,
                        max_size=n_res))
    flow_bytes = draw(st.lists(st.sampled_from([0.0, 1.0, 2.0, 5.0, 0.3]), min_size=n_flows,
                               max_size=n_flows))
    return paths, cap, flow_bytes, persistent


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(persistent_instances(), st.sampled_from(METHODS))
def test_persistent_flows_match_oracle(inst, method):
    paths, cap, flow_bytes, persistent = inst
    sol = solve_completion(make_routes(paths), np.array(cap), np.array(flow_bytes),
                           persistent=np.array(persistent), method=method)
    rate0, finish, moved, status = completion_persistent(paths, cap, flow_bytes, persistent)
    assert sol.status == status == 0
    np.testing.assert_allclose(np.where(np.isinf(rate0), -1, sol.rate0),
                               np.where(np.isinf(rate0), -1, rate0), rtol=RTOL)
    assert np.array_equal(np.isinf(sol.finish), np.isinf(finish))
    fin = np.isfinite(finish)
    np.testing.assert_allclose(sol.finish[fin], np.array(finish)[fin], rtol=RTOL, atol=1e-300)
    assert np.all(np.isinf(sol.finish[np.array(persistent)]))
    np.testing.assert_allclose(sol.moved, moved, rtol=1e-8, atol=1e-12)
    # t = 0 rates are max-min fair over every flow, persistent ones included
    ptr = np.cumsum([0] + [len(p) for p in paths])
    res = [r for p in paths for r, _ in p]
    frac = [a for p in paths for _, a in p]
    check_maxmin(ptr, res, frac, cap, np.where(np.isinf(sol.rate0), 0.0, sol.rate0))


def test_persistent_flows_with_incast_match_oracle():
    rng = np.random.default_rng(5)
    for _ in range(30):
        n_links, n_flows, n_vert = 4, 8, 3
        paths = [[(int(r), 1.0) for r in rng.choice(n_links, 2, replace=False)]
                 for _ in range(n_flows)]
        dst = rng.integers(0, n_vert, n_flows)
        persistent = rng.random(n_flows) < 0.4
        cap, ingress = rng.uniform(1, 3, n_links), rng.uniform(1, 3, n_vert)
        nbytes = rng.uniform(0.5, 3, n_flows)
        sol = solve_completion(make_routes(paths), cap, nbytes, flow_dst=dst,
                               ingress_capacity=ingress, incast_threshold=1.0, incast_slope=0.2,
                               persistent=persistent)
        # the oracle's own ingress construction: receiver v is resource n_links + v
        opaths = [p + [(n_links + int(d), 1.0)] for p, d in zip(paths, dst)]
        _, finish, moved, status = completion_persistent(
            opaths, list(cap) + list(ingress), list(nbytes), list(persistent), n_plain=n_links,
            w_t=1.0, eps=0.2)
        assert sol.status == status == 0
        fin = np.isfinite(finish)
        np.testing.assert_allclose(sol.finish[fin], np.array(finish)[fin], rtol=RTOL)
        np.testing.assert_allclose(sol.moved, moved, rtol=1e-8, atol=1e-12)


def test_capped_persistent_flows_equal_fixed_loads():
    """Persistent flows capped below every fair share keep their cap at every
    event, so the others finish as on capacities reduced by the caps."""
    rng = np.random.default_rng(11)
    for _ in range(40):
        n_links, n_f, n_p = 6, 7, 4
        paths = [[(int(r), float(rng.choice([1.0, 0.5]))) for r in
                  rng.choice(n_links, rng.integers(1, 4), replace=False)]
                 for _ in range(n_f + n_p)]
        cap = rng.uniform(1, 4, n_links)
        weight = np.zeros(n_links)
        for p in paths:
            for r, a in p:
                weight[r] += a
        demand = np.array([0.9 * min(cap[r] / weight[r] for r, _ in p) for p in paths[n_f:]])
        # each persistent flow's private cap resource
        capped = paths[:n_f] + [p + [(n_links + i, 1.0)] for i, p in enumerate(paths[n_f:])]
        nbytes = rng.uniform(0.5, 5, n_f)
        sol = solve_completion(make_routes(capped), np.concatenate([cap, demand]),
                               np.concatenate([nbytes, np.zeros(n_p)]),
                               persistent=np.arange(n_f + n_p) >= n_f)
        reduced = cap.copy()
        for i, p in enumerate(paths[n_f:]):
            for r, a in p:
                reduced[r] -= a * demand[i]
        ref = solve_completion(make_routes(paths[:n_f]), reduced, nbytes)
        np.testing.assert_allclose(sol.finish[:n_f], ref.finish, rtol=1e-10)
        np.testing.assert_allclose(sol.moved[n_f:], demand * ref.finish.max(), rtol=1e-10)
        np.testing.assert_allclose(sol.rate0[n_f:], demand, rtol=1e-12)


def test_no_persistent_flows_is_the_default_path():
    rng = np.random.default_rng(2)
    paths = [[(int(r), 1.0) for r in rng.choice(5, 2, replace=False)] for _ in range(9)]
    routes, cap, nbytes = make_routes(paths), rng.uniform(1, 2, 5), rng.uniform(1, 2, 9)
    base = solve_completion(routes, cap, nbytes)
    none = solve_completion(routes, cap, nbytes, persistent=np.zeros(9, bool))
    assert base.moved is None
    assert np.array_equal(base.finish, none.finish) and np.array_equal(base.rate0, none.rate0)
    assert np.array_equal(none.moved, np.zeros(9))


def test_only_persistent_flows_end_at_zero_with_their_rates():
    paths = [[(0, 1.0)], [(0, 1.0), (1, 1.0)]]
    sol = solve_completion(make_routes(paths), np.array([2.0, 0.5]), np.zeros(2),
                           persistent=np.array([True, True]))
    assert sol.status == 0
    np.testing.assert_allclose(sol.rate0, [1.5, 0.5])
    assert np.all(np.isinf(sol.finish)) and np.array_equal(sol.moved, [0.0, 0.0])


def test_persistent_flow_at_rate_zero_does_not_stall():
    paths = [[(0, 1.0)], [(1, 1.0)]]
    sol = solve_completion(make_routes(paths), np.array([1.0, 0.0]), np.array([2.0, 0.0]),
                           persistent=np.array([False, True]))
    assert sol.status == 0 and sol.finish[0] == 2.0 and sol.moved[1] == 0.0


@pytest.mark.parametrize("persistent, match", [
    (np.array([True]), "shape"),
    (np.array([1, 0]), "bool"),
    (np.array([False, True]), "non-empty path"),
])
def test_bad_persistent_masks(persistent, match):
    routes = make_routes([[(0, 1.0)], []])
    with pytest.raises(ValueError, match=match):
        solve_completion(routes, np.array([1.0]), np.ones(2), persistent=persistent)


# --------------------------------------------------------------------------- closed forms


@pytest.mark.parametrize("load", [0.1, 0.25, 0.5, 0.6, 0.9, 1.0])
def test_one_shared_link_closed_form(load):
    """leafspine:2x1x1: host 0's uplink (capacity C) is the only link the
    collective's flow 0 -> 1 and the background flow 0 -> 1 (hotspot on
    endpoint 1, demand L·C) share. Max-min with a capped competitor: the
    collective gets (1−L)·C for L <= 1/2 and C/2 above; the background gets
    min(L, 1/2)·C while the collective runs."""
    topo = parse_topology("leafspine:2x1x1")
    c = FLUID.bandwidth
    n = np.array([1e3, 1e6, 3e8])
    prof = profiling.profile(one_flow_schedule(), topo, FLUID, background=f"hotspot:{load}:1")
    rate = (1 - load) * c if load <= 0.5 else c / 2
    np.testing.assert_allclose(prof.times(n), n / rate, rtol=RTOL)
    np.testing.assert_allclose(prof.info["background_rate"], load * c, rtol=RTOL)
    np.testing.assert_allclose(prof.background_throughput(n), min(load, 0.5) * c, rtol=RTOL)
    # the oracle on the same problem: host uplink 0, the rest of the path, the cap
    paths = [[(0, 1.0), (1, 1.0)], [(0, 1.0), (1, 1.0), (2, 1.0)]]
    _, finish, moved, status = completion_persistent(paths, [c, c, load * c], [1.0, 0.0],
                                                     [False, True])
    assert status == 0
    np.testing.assert_allclose(finish[0], 1 / rate, rtol=RTOL)
    np.testing.assert_allclose(moved[1], min(load, 0.5) * c / rate, rtol=RTOL)


def test_background_throughput_counts_latency_at_the_uncontested_rate():
    """With latency terms the background runs uncontested (L·C) during them."""
    topo = parse_topology("leafspine:2x1x1")
    net = Network.from_si(alpha=2e-6, link_latency=0, hop_latency=0)
    load, c, n = 0.75, net.bandwidth, np.array([1e4, 1e7])
    prof = profiling.profile(one_flow_schedule(), topo, net, background=f"hotspot:{load}:1")
    fluid = n / (c / 2)
    expected = (c / 2 * fluid + load * c * 2e-6) / (fluid + 2e-6)
    np.testing.assert_allclose(prof.times(n), fluid + 2e-6, rtol=RTOL)
    np.testing.assert_allclose(prof.background_throughput(n), expected, rtol=RTOL)


def test_background_without_flows_reports_zero(tmp_path):
    path = tmp_path / "idle.csv"
    pd.DataFrame({"step": [0], "src": [0], "dst": [1], "bytes": [0.0]}).to_csv(path, index=False)
    topo = parse_topology("leafspine:2x1x1")
    prof = profiling.profile(one_flow_schedule(), topo, FLUID, background=str(path))
    assert prof.info["background_rate"] == 0.0 and prof.info["background_flows"] == 0
    np.testing.assert_allclose(prof.times([1e6]), 1e6 / FLUID.bandwidth, rtol=RTOL)
    assert np.array_equal(prof.background_throughput([1e6]), [0.0])


def test_no_background_reports_none():
    topo = parse_topology("leafspine:2x1x1")
    prof = profiling.profile(one_flow_schedule(), topo, FLUID)
    assert "background_rate" not in prof.info
    assert np.array_equal(prof.background_throughput([1.0, 2.0]), [0.0, 0.0])


# --------------------------------------------------------------------------- exactness


def _direct_background(ctx, schedule, n):
    """Background bytes of a run at size n by direct solves (real bytes)."""
    rate = engine.uncontested_rate(ctx, engine.solve_step)
    moved = total = 0.0
    for step in schedule.steps:
        red = step.reduction.seconds_per_byte(ctx.network.gamma, ctx.network.delta,
                                              schedule.p) * n
        if step.traffic.num_flows == 0:
            moved += rate * red
            total += red
            continue
        routes, src, dst = engine.route_step(ctx, step.traffic)
        sol = engine.solve_step(ctx, routes, dst, step.traffic.share * n, step.label, src)
        t = float(np.max(engine.flow_latency(ctx, routes) + sol.finish)) + red
        moved += sol.background_moved + rate * (t - sol.finish.max())
        total += t
    return moved / total


@pytest.mark.parametrize("spec, algorithm, bg, ecmp, seed", [
    ("torus:4x4", "swing", "perm:0.5:3", "split", 0),
    ("torus:4x4", "ring", "alltoall:0.4", "split", 0),
    ("torus:4x4", "recdoub", "hotspot:0.8:5", "split", 0),
    ("torus:4x4", "bucket", "perm:1:1", "split", 0),
    ("torus:4x4", "swing", "alltoall:0.7", "hash", 5),
    ("fattree:k=4", "ring", "perm:0.7:2", "split", 0),
    ("leafspine:4x2x2", "swing", "alltoall:0.9", "split", 0),
    ("tree:2x4,eps=1ps:2ps,wt=1:1", "cps", "hotspot:0.6:3", "split", 0),
])
def test_profile_is_exact_with_background(spec, algorithm, bg, ecmp, seed):
    """Profile lines against direct solves at real sizes (times and the
    background's bytes), incast per tier included (tree)."""
    topo = parse_topology(spec)
    net = Network.from_si(gamma=1e-10, delta=2e-11, incast_threshold=2, incast_slope=1e-12)
    sched = build(algorithm, topo.num_endpoints, topo)
    sizes = np.array([1e3, 7e5, 2e8])
    prof = profiling.profile(sched, topo, net, ecmp=ecmp, seed=seed, background=bg, threads=1)
    direct = engine.direct_times(sched, topo, net, sizes, ecmp=ecmp, seed=seed,
                                 background=parse_background(bg, topo, net))
    np.testing.assert_allclose(prof.times(sizes), direct, rtol=RTOL)
    ctx = engine.make_context(topo, net, ecmp, seed, None, sched.p, parse_background(bg, topo, net),
                              None)
    got = prof.background_throughput(sizes)
    for i, n in enumerate(sizes):
        np.testing.assert_allclose(got[i], _direct_background(ctx, sched, n), rtol=1e-8)
    # background only slows the collective down
    healthy = profiling.profile(sched, topo, net, ecmp=ecmp, seed=seed).times(sizes)
    assert np.all(prof.times(sizes) >= healthy * (1 - 1e-12))


def test_engine_step_equals_the_oracle_on_a_hand_built_problem():
    """One Swing step on torus:4x4 with a permutation background and a
    network-slowed rank: the engine's solve equals the oracle run on the
    problem built here from the routes (background caps, rank 5's port caps)."""
    topo = parse_topology("torus:4x4")
    net = FLUID
    sched = build("swing", 16, topo)
    bg = parse_background("perm:0.6:2", topo, net)
    ctx = engine.make_context(topo, net, "split", 0, None, 16, bg, parse_slow("5=0.3:network", 16))
    step = sched.steps[2].traffic
    routes, src, dst = engine.route_step(ctx, step)
    sol = engine.solve_step(ctx, routes, dst, step.share, "s", src)
    bg_routes = topo.route(bg.src, bg.dst, ecmp="split")
    cap = list(topo.link_capacity(net))
    n_links = len(cap)
    c = net.bandwidth
    out5 = c * np.sum(topo.link_src == 5)
    in5 = c * np.sum(topo.link_dst == 5)

    def lists(r):
        return [[(int(r.link[e]), float(r.frac[e])) for e in range(r.flow_ptr[f],
                                                                  r.flow_ptr[f + 1])]
                for f in range(r.num_flows)]

    inj, ej = n_links + bg.num_flows, n_links + bg.num_flows + 1
    paths = []
    for path, s_, d_ in zip(lists(routes) + lists(bg_routes),
                            list(src) + list(bg.src), list(dst) + list(bg.dst)):
        paths.append(path + ([(inj, 1.0)] if s_ == 5 else []) + ([(ej, 1.0)] if d_ == 5 else []))
    nf = routes.num_flows
    for i in range(bg.num_flows):
        paths[nf + i].insert(len(paths[nf + i]) - (bg.src[i] == 5) - (bg.dst[i] == 5),
                             (n_links + i, 1.0))
    capacity = cap + list(bg.demand) + [0.3 * out5, 0.3 * in5]
    _, finish, moved, status = completion_persistent(
        paths, capacity, list(step.share) + [0.0] * bg.num_flows,
        [False] * nf + [True] * bg.num_flows)
    assert status == 0
    np.testing.assert_allclose(sol.finish, finish[:nf], rtol=RTOL)
    np.testing.assert_allclose(sol.background_moved, sum(moved), rtol=1e-8)


def test_fattree_reduced_problem_with_background_is_exact(monkeypatch):
    """The fat tree merges uplink groups (solver_problem) over the collective
    and background flows together; the result equals the unreduced problem."""
    topo = parse_topology("fattree:k=4")
    sched = build("recdoub", 16, topo)
    sizes = np.array([1e6])
    reduced = profiling.profile(sched, topo, FLUID, background="perm:0.9:4", threads=1)
    monkeypatch.setattr(type(topo), "solver_problem", lambda self, r, c, e: (r, c))
    full = profiling.profile(sched, topo, FLUID, background="perm:0.9:4", threads=1)
    np.testing.assert_allclose(reduced.times(sizes), full.times(sizes), rtol=RTOL)
    np.testing.assert_allclose(reduced.background_throughput(sizes),
                               full.background_throughput(sizes), rtol=RTOL)


def test_every_algorithm_runs_with_background_and_slow_ranks():
    topo = parse_topology("torus:4x4")
    for name in ("ring", "recdoub", "swing", "bucket"):
        sched = build(name, 16, topo)
        base = profiling.profile(sched, topo).times([1e6])
        prof = profiling.profile(sched, topo, background="perm:0.5", slow="3=0.5")
        assert prof.times([1e6])[0] > base[0]
        assert 0 < prof.background_throughput([1e6])[0] <= prof.info["background_rate"]


# --------------------------------------------------------------------------- generators


def test_perm_is_a_seeded_permutation_without_fixed_points():
    topo = parse_topology("torus:4x4")
    bg = parse_background("perm:0.5:7", topo)
    assert sorted(bg.src) == list(range(16)) and sorted(bg.dst) == list(range(16))
    assert np.all(bg.src != bg.dst)
    again = parse_background("perm:0.5:7", topo)
    assert np.array_equal(again.dst[np.argsort(again.src)], bg.dst[np.argsort(bg.src)])
    other = parse_background("perm:0.5:8", topo)
    assert not np.array_equal(other.dst[np.argsort(other.src)], bg.dst[np.argsort(bg.src)])
    # a torus endpoint injects on 4 links of the network's bandwidth
    np.testing.assert_allclose(bg.demand, 0.5 * 4 * Network().bandwidth)


def test_alltoall_and_hotspot_demands():
    topo = parse_topology("leafspine:2x3x1")   # 6 hosts, one uplink each
    c = Network().bandwidth
    a2a = parse_background("alltoall:0.6", topo)
    pairs = set(zip(a2a.src.tolist(), a2a.dst.tolist()))
    assert pairs == {(s, d) for s in range(6) for d in range(6) if s != d}
    np.testing.assert_allclose(a2a.demand, 0.6 * c / 5)
    hot = parse_background("hotspot:0.3:4", topo)
    assert sorted(hot.src) == [0, 1, 2, 3, 5] and set(hot.dst.tolist()) == {4}
    np.testing.assert_allclose(hot.demand, 0.3 * c)
    assert set(parse_background("hotspot:1", topo).dst.tolist()) == {0}


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_background_file(tmp_path, suffix):
    df = pd.DataFrame({"step": [3, 3, 3], "src": [0, 2, 1], "dst": [1, 0, 3],
                       "bytes": [1e9, 0.0, 2.5e9]})
    path = tmp_path / f"bg{suffix}"
    df.to_csv(path, index=False) if suffix == ".csv" else df.to_parquet(path, index=False)
    topo = parse_topology("leafspine:2x2x1")
    bg = parse_background(str(path), topo)
    assert bg.src.tolist() == [0, 1] and bg.dst.tolist() == [1, 3]   # demand 0 dropped
    np.testing.assert_allclose(bg.demand, [1e9, 2.5e9])
    assert parse_background(path, topo).num_flows == 2
    assert isinstance(bg, Background)


def _bad_files(tmp_path):
    two = tmp_path / "two.csv"
    pd.DataFrame({"step": [0, 1], "src": [0, 1], "dst": [1, 0], "bytes": [1, 1]}).to_csv(
        two, index=False)
    far = tmp_path / "far.csv"
    pd.DataFrame({"step": [0], "src": [0], "dst": [99], "bytes": [1]}).to_csv(far, index=False)
    junk = tmp_path / "junk.parquet"
    junk.write_bytes(b"not parquet")
    cols = tmp_path / "cols.csv"
    cols.write_text("a,b\n1,2\n")
    return {"two": (str(two), "single step"), "far": (str(far), "endpoint 99"),
            "junk": (str(junk), "cannot read"), "cols": (str(cols), "missing column"),
            "missing": (str(tmp_path / "nope.csv"), "does not exist")}


def test_bad_background_files(tmp_path):
    topo = parse_topology("leafspine:2x2x1")
    for spec, match in _bad_files(tmp_path).values():
        with pytest.raises(ConfigError, match=match) as err:
            parse_background(spec, topo)
        assert str(err.value).startswith("background")


@pytest.mark.parametrize("spec, match", [
    ("perm:0", r"LOAD '0'.*\(0, 1\]"),
    ("perm:1.5", r"LOAD '1.5'"),
    ("alltoall:nan", "LOAD 'nan'"),
    ("alltoall:-0.5", "LOAD"),
    ("perm", "expected perm:LOAD"),
    ("alltoall:0.5:3", "expected perm:LOAD"),
    ("hotspot:0.5:16", r"TARGET '16'.*0\.\.15"),
    ("perm:0.5:x", "SEED 'x'"),
    ("storm:0.5", "unknown generator 'storm'"),
    ("", "not allowed"),
    (3, "not allowed"),
])
def test_bad_background_specs(spec, match):
    with pytest.raises(ConfigError, match=match) as err:
        parse_background(spec, parse_topology("torus:4x4"))
    assert str(err.value).startswith("background:")


def test_background_for_another_topology_is_refused():
    bg = parse_background("perm:0.5", parse_topology("torus:4x4"))
    with pytest.raises(ConfigError, match="background:.*16 endpoints"):
        profiling.profile(build("ring", 8, parse_topology("torus:8")),
                       parse_topology("torus:8"), background=bg)


def test_alltoall_too_large_is_refused_before_allocating():
    with pytest.raises(ConfigError, match="at most"):
        parse_background("alltoall:0.5", parse_topology("torus:64x64"))


def test_cli_style_one_line_errors():
    """The messages are one line (the CLI prints them after ``flowemu: error:``)."""
    for spec in ("perm:2", "nope:1", "hotspot:0.5:99"):
        with pytest.raises(ConfigError) as err:
            parse_background(spec, parse_topology("torus:4x4"))
        assert "\n" not in str(err.value)



def test_threads_do_not_change_a_run_with_background():
    topo = parse_topology("torus:4x4")
    sched = build("swing", 16, topo)
    sizes = np.array([1e3, 1e7])
    one = profiling.profile(sched, topo, background="perm:0.5:2", slow="4=0.5", threads=1)
    two = profiling.profile(sched, topo, background="perm:0.5:2", slow="4=0.5", threads=2)
    assert np.array_equal(one.times(sizes), two.times(sizes))
    assert np.array_equal(one.background_throughput(sizes), two.background_throughput(sizes))


def test_background_counts_in_the_memory_check():
    """A limit the run fits in without background (its own estimate + 1 KiB)
    refuses it with an all-to-all background."""
    from flowemu.core import budget

    topo = parse_topology("torus:8x8")
    sched = build("ring", 64, topo)
    ctx = engine.make_context(topo, Network(), p=sched.p)
    limit = engine.check_memory(ctx, sched, 1, budget.limit("64GiB")) + 1024
    assert profiling.profile(sched, topo, threads=1, max_memory=limit).num_steps > 0
    # (refused where its routes are checked, against the run's limit since that check
    # stopped reading FLOWEMU_MAX_MEMORY instead; else with the solves' estimate)
    with pytest.raises(ConfigError, match="max_memory: (routing background 'alltoall:0.5'|"
                                          ".*with background)"):
        profiling.profile(sched, topo, threads=1, background="alltoall:0.5", max_memory=limit)
