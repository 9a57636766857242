"""Tests of flowemu.kernels.maxmin: closed forms, the slow oracle on random
instances (hypothesis), the invariants of a max-min allocation, bad arguments
and status codes."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowemu.core.errors import SolverError
from flowemu.kernels import fill, maxmin
from flowemu.kernels.completion import append_entries, append_ingress, screened_completion_kernel
from flowemu.kernels.fill import STATUS_STALLED, maxmin_rates_kernel
from flowemu.kernels.incremental import incremental_completion_kernel
from flowemu.kernels.maxmin import STATUS_OK, Solution, max_min_rates, solve_completion
from flowemu.topology.base import Routes
from tests.helpers.maxmin_oracle import check_maxmin, completion, csr_to_lists, progressive_filling
from tests.helpers.routes import make_routes

RTOL = 1e-9


def with_ingress(paths, n_links, flow_dst):
    """The oracle's own copy of the incast construction: every non-empty path
    gets the ingress resource of its receiver with fraction 1."""
    return [list(p) + [(n_links + int(d), 1.0)] if p else [] for p, d in zip(paths, flow_dst)]


#: below the smallest normal float a value has no relative precision left (a
#: flow of 5e-324 bytes finishes at 13 or 14 times that, by rounding alone;
#: the incremental solver, which brings a flow's bytes up to date once per
#: rate change instead of once per event, lands a few subnormals off): any
#: two subnormal results agree, normal ones are held to RTOL
ATOL = np.finfo(float).tiny


def assert_close(actual, expected, rtol=RTOL):
    actual = np.asarray(actual, dtype=float)
    expected = np.asarray(expected, dtype=float)
    assert actual.shape == expected.shape
    inf_a, inf_e = np.isinf(actual), np.isinf(expected)
    assert np.array_equal(inf_a, inf_e), (actual, expected)
    np.testing.assert_allclose(actual[~inf_a], expected[~inf_e], rtol=rtol, atol=ATOL)


# --------------------------------------------------------------------------
# closed forms
# --------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 3, 7, 64])
def test_equal_flows_on_one_link(n):
    c, size = 3.0, 5.0
    routes = make_routes([[(0, 1.0)]] * n)
    sol = solve_completion(routes, np.array([c]), np.full(n, size))
    assert sol.status == STATUS_OK
    assert_close(sol.rate0, np.full(n, c / n))
    assert_close(sol.finish, np.full(n, size * n / c))


def test_two_flows_water_filling():
    # both get c/2 until the short one is done at t1 = 2*b1/c; the long one
    # then has b2 - b1 left at rate c: t2 = t1 + (b2 - b1)/c = (b1 + b2)/c
    c, b1, b2 = 4.0, 2.0, 10.0
    routes = make_routes([[(0, 1.0)], [(0, 1.0)]])
    sol = solve_completion(routes, np.array([c]), np.array([b1, b2]))
    assert sol.status == STATUS_OK
    assert_close(sol.rate0, [c / 2, c / 2])
    assert_close(sol.finish, [2 * b1 / c, (b1 + b2) / c])


def test_fractional_split_closed_form():
    # flow 0 splits evenly over links 0 and 1; flow 1 uses link 1 only.
    # Link 1: 0.5*x0 + x1 <= 1, link 0: 0.5*x0 <= 1. Filling: link 1
    # saturates first at 1.5*lam = 1 -> both at 2/3.
    routes = make_routes([[(0, 0.5), (1, 0.5)], [(1, 1.0)]])
    rates = max_min_rates(routes, np.array([1.0, 1.0]))
    assert_close(rates, [2 / 3, 2 / 3])


def test_three_level_chain():
    # link 0 (cap 1): f0, f1; link 1 (cap 3): f1, f2. Level 0.5 on link 0
    # freezes f0, f1; f2 then gets 3 - 0.5 = 2.5.
    routes = make_routes([[(0, 1.0)], [(0, 1.0), (1, 1.0)], [(1, 1.0)]])
    rates = max_min_rates(routes, np.array([1.0, 3.0]))
    assert_close(rates, [0.5, 0.5, 2.5])


@pytest.mark.parametrize("w,w_t", [(6, 2), (6, 5), (10, 0), (3, 3), (2, 5)])
def test_incast_closed_form(w, w_t):
    # GenModel eq. 9/10: the receiver takes B_total = w*size bytes at the
    # per-byte cost beta' = beta + max(w - w_t, 0)*eps with beta = 1/c, so the
    # w equal flows (sharing the ingress fairly, never finishing apart) all
    # end at T = w*size*(1/c + max(w - w_t, 0)*eps).
    c, eps, size = 2.0, 0.05, 3.0
    # each sender has its own fat link, so only the ingress resource binds
    routes = make_routes([[(i, 1.0)] for i in range(w)])
    link_cap = np.full(w, 1e6)
    sol = solve_completion(routes, link_cap, np.full(w, size), flow_dst=np.zeros(w, np.int64),
                           ingress_capacity=np.array([c, 7.0]), incast_threshold=w_t,
                           incast_slope=eps)
    assert sol.status == STATUS_OK
    expected = w * size * (1.0 / c + max(w - w_t, 0) * eps)
    assert_close(sol.finish, np.full(w, expected))
    assert_close(sol.rate0, np.full(w, size / expected))


def test_incast_capacity_recovers_as_flows_finish():
    # 3 flows into one receiver (base c = 1, w_t = 1, eps = 0.5): capacity
    # 1/(1 + 2*0.5) = 0.5 shared by 3; the 1-byte flow ends at t1 = 6; then
    # 2 flows, capacity 1/(1 + 0.5) = 2/3, 1/3 each: the 3-byte flows had
    # 3 - 1 = 2 bytes left, done after 6 more: t = 12.
    routes = make_routes([[(0, 1.0)], [(1, 1.0)], [(2, 1.0)]])
    sol = solve_completion(routes, np.full(3, 100.0), np.array([1.0, 3.0, 3.0]),
                           flow_dst=np.zeros(3, np.int64), ingress_capacity=np.array([1.0]),
                           incast_threshold=1, incast_slope=0.5)
    assert sol.status == STATUS_OK
    assert_close(sol.rate0, np.full(3, 0.5 / 3))
    assert_close(sol.finish, [6.0, 12.0, 12.0])


def test_incast_off_adds_nothing():
    routes = make_routes([[(0, 1.0)], [(0, 1.0)]])
    base = solve_completion(routes, np.array([2.0]), np.array([1.0, 2.0]))
    for w_t, eps in [(math.inf, 0.3), (0, 0.0)]:
        sol = solve_completion(routes, np.array([2.0]), np.array([1.0, 2.0]),
                               flow_dst=np.zeros(2, np.int64),
                               ingress_capacity=np.array([1e-3]), incast_threshold=w_t,
                               incast_slope=eps)
        assert_close(sol.finish, base.finish)


def test_empty_path_and_zero_bytes():
    routes = make_routes([[], [(0, 1.0)], [(0, 1.0)]])
    sol = solve_completion(routes, np.array([2.0]), np.array([5.0, 0.0, 4.0]))
    assert sol.status == STATUS_OK
    assert sol.rate0[0] == math.inf and sol.finish[0] == 0.0
    # the 0-byte flow takes part in the t = 0 solve and ends at 0
    assert_close(sol.rate0[1:], [1.0, 1.0])
    assert sol.finish[1] == 0.0
    assert_close(sol.finish[2:], [2.0])


def test_no_flows():
    routes = make_routes([])
    sol = solve_completion(routes, np.array([1.0]), np.zeros(0))
    assert sol.status == STATUS_OK and sol.rate0.shape == (0,) and sol.finish.shape == (0,)
    assert max_min_rates(routes, np.array([1.0])).shape == (0,)


def test_batched_equal_finish():
    # two symmetric pairs on separate links end at the same instant: one event
    routes = make_routes([[(0, 1.0)], [(0, 1.0)], [(1, 1.0)], [(1, 1.0)]])
    sol = solve_completion(routes, np.array([1.0, 1.0]), np.full(4, 1.0))
    assert_close(sol.finish, np.full(4, 2.0))


def test_inactive_flows_get_zero():
    routes = make_routes([[(0, 1.0)], [(0, 1.0)], []])
    rates = max_min_rates(routes, np.array([1.0]), active=np.array([True, False, False]))
    assert rates.tolist() == [1.0, 0.0, 0.0]


# --------------------------------------------------------------------------
# status codes and bad arguments
# --------------------------------------------------------------------------


def _kernel_statuses(ptr, res, frac, cap, flow_bytes):
    """Status of each completion kernel, called directly (no incast)."""
    none = np.zeros(0)
    keep = np.zeros(len(ptr) - 1, np.bool_)
    return [kernel(ptr, res, frac, cap, len(cap), none, none, flow_bytes, keep)[3]
            for kernel in (incremental_completion_kernel, screened_completion_kernel)]


def test_zero_capacity_stalls():
    routes = make_routes([[(0, 1.0)], [(1, 1.0)]])
    cap = np.array([0.0, 1.0])
    sol = solve_completion(routes, cap, np.array([1.0, 1.0]))
    assert isinstance(sol, Solution)
    assert sol.status == STATUS_STALLED
    for status in _kernel_statuses(routes.flow_ptr, routes.link, routes.frac, cap,
                                   np.array([1.0, 1.0])):
        assert status == STATUS_STALLED
    _rates, status = maxmin_rates_kernel(routes.flow_ptr, routes.link, routes.frac, cap,
                                         np.ones(2, np.bool_))
    assert status == STATUS_STALLED
    with pytest.raises(SolverError):
        max_min_rates(routes, cap)


def test_zero_capacity_with_zero_bytes_is_fine():
    routes = make_routes([[(0, 1.0)]])
    sol = solve_completion(routes, np.array([0.0]), np.array([0.0]))
    assert sol.status == STATUS_OK and sol.finish[0] == 0.0


def test_kernel_reports_bad_data_without_raising():
    ptr = np.array([0, 1], np.int64)
    for res, frac, cap, expected in [
        (np.array([5], np.int32), np.array([1.0]), np.array([1.0]), maxmin.STATUS_BAD_INPUT),
        (np.array([0], np.int32), np.array([np.nan]), np.array([1.0]), maxmin.STATUS_NONFINITE),
        (np.array([0], np.int32), np.array([1.0]), np.array([np.inf]), maxmin.STATUS_NONFINITE),
        (np.array([0], np.int32), np.array([1.5]), np.array([1.0]), maxmin.STATUS_BAD_INPUT),
    ]:
        assert _kernel_statuses(ptr, res, frac, cap, np.ones(1)) == [expected, expected]
        _, status = maxmin_rates_kernel(ptr, res, frac, cap, np.ones(1, np.bool_))
        assert status == expected


def _one_link():
    return make_routes([[(0, 1.0)], [(0, 0.5)]])


@pytest.mark.parametrize("kwargs,match", [
    ({"link_capacity": np.array([np.nan])}, "link_capacity"),
    ({"link_capacity": np.array([-1.0])}, "negative"),
    ({"link_capacity": np.ones((1, 1))}, "1-D"),
    ({"flow_bytes": np.array([1.0, -2.0])}, "negative"),
    ({"flow_bytes": np.array([1.0])}, "expected 2 flows"),
    ({"flow_bytes": np.array([1.0, np.inf])}, "not finite"),
    ({"routes": make_routes([[(3, 1.0)]]), "flow_bytes": np.ones(1)}, "link id"),
    ({"routes": make_routes([[(0, 0.0)]]), "flow_bytes": np.ones(1)}, r"\(0, 1\]"),
    ({"routes": make_routes([[(0, 1.5)]]), "flow_bytes": np.ones(1)}, r"\(0, 1\]"),
    ({"routes": make_routes([[(0, np.nan)]]), "flow_bytes": np.ones(1)}, r"\(0, 1\]"),
    ({"routes": Routes(np.array([0, 2], np.int64), np.zeros(1, np.int32), np.ones(1),
                        np.ones(1, np.int32)), "flow_bytes": np.ones(1)}, "flow_ptr"),
    ({"routes": Routes(np.array([0, 1], np.int64), np.zeros(1, np.int32), np.ones(2),
                        np.ones(1, np.int32)), "flow_bytes": np.ones(1)}, "entries"),
    ({"routes": Routes(np.array([0.0, 1.0]), np.zeros(1, np.int32), np.ones(1),
                        np.ones(1, np.int32)), "flow_bytes": np.ones(1)}, "integer"),
    ({"incast_threshold": 2, "incast_slope": 0.1}, "required when incast is on"),
    ({"incast_threshold": 2, "incast_slope": -0.1}, "incast_slope"),
    ({"incast_threshold": np.nan, "incast_slope": 0.1}, "incast_threshold"),
    ({"incast_threshold": 2, "incast_slope": 0.1, "flow_dst": np.array([0, 3]),
          "ingress_capacity": np.ones(2)}, "flow_dst"),
    ({"incast_threshold": 2, "incast_slope": 0.1, "flow_dst": np.array([0, 1]),
          "ingress_capacity": np.array([1.0, np.nan])}, "ingress_capacity"),
    ({"method": "restricted"}, "method: 'restricted' is not one of"),
])
def test_bad_arguments_raise_value_error(kwargs, match):
    args = {"routes": _one_link(), "link_capacity": np.array([1.0]),
                "flow_bytes": np.array([1.0, 2.0])}
    args.update(kwargs)
    routes = args.pop("routes")
    cap = args.pop("link_capacity")
    flow_bytes = args.pop("flow_bytes")
    with pytest.raises(ValueError, match=match):
        solve_completion(routes, cap, flow_bytes, **args)


def test_incast_bad_link_is_not_taken_for_an_ingress_resource():
    routes = make_routes([[(1, 1.0)]])  # link 1 does not exist; vertex 0's ingress would be 1
    with pytest.raises(ValueError, match="link id"):
        solve_completion(routes, np.array([1.0]), np.ones(1), flow_dst=np.zeros(1, np.int64),
                         ingress_capacity=np.ones(1), incast_threshold=0, incast_slope=1.0)


def test_max_min_rates_bad_arguments():
    routes = _one_link()
    with pytest.raises(ValueError, match="active"):
        max_min_rates(routes, np.array([1.0]), active=np.ones(3, np.bool_))
    with pytest.raises(ValueError, match="bool"):
        max_min_rates(routes, np.array([1.0]), active=np.ones(2))
    with pytest.raises(ValueError, match="link id"):
        max_min_rates(make_routes([[(4, 1.0)]]), np.array([1.0]))


# --------------------------------------------------------------------------
# against the oracle
# --------------------------------------------------------------------------


def oracle_solution(routes, cap, flow_bytes, flow_dst=None, ingress=None, w_t=math.inf,
                    eps=0.0):
    paths = csr_to_lists(routes.flow_ptr, routes.link, routes.frac)
    capacity = list(map(float, cap))
    n_links = len(capacity)
    if eps > 0 and math.isfinite(w_t):
        paths = with_ingress(paths, n_links, flow_dst)
        capacity += list(map(float, ingress))
    return completion(paths, capacity, list(map(float, flow_bytes)), n_plain=n_links, w_t=w_t,
                      eps=eps), paths, capacity


def caps_at_t0(paths, capacity, n_plain, w_t, eps):
    """Capacities at t = 0 (incast: every flow with a path is active)."""
    caps = list(capacity)
    if eps > 0 and math.isfinite(w_t):
        fan_in = [0] * len(caps)
        for p in paths:
            for r, _ in p:
                fan_in[r] += 1
        for r in range(n_plain, len(caps)):
            excess = fan_in[r] - w_t
            if excess > 0:
                caps[r] = 1.0 / (1.0 / capacity[r] + excess * eps)
    return caps


def check_against_oracle(routes, cap, flow_bytes, flow_dst=None, ingress=None, w_t=math.inf,
                         eps=0.0, method="auto"):
    sol = solve_completion(routes, cap, flow_bytes, flow_dst=flow_dst, ingress_capacity=ingress,
                           incast_threshold=w_t, incast_slope=eps, method=method)
    (o_rate0, o_finish, o_status), paths, capacity = oracle_solution(
        routes, cap, flow_bytes, flow_dst, ingress, w_t, eps)
    assert sol.status == o_status
    if o_status != STATUS_OK:
        return sol
    assert_close(sol.rate0, o_rate0)
    assert_close(sol.finish, o_finish)
    # the t = 0 rates are a max-min fair allocation
    ptr = [0]
    res = []
    frac = []
    for p in paths:
        res += [r for r, _ in p]
        frac += [a for _, a in p]
        ptr.append(len(res))
    caps0 = caps_at_t0(paths, capacity, len(cap), w_t, eps)
    check_maxmin(ptr, res, frac, caps0, np.where(np.isinf(sol.rate0), 0.0, sol.rate0))
    return sol


#: every re-solve mode of solve_completion
METHODS = ["auto", "incremental", "screened"]

FRACTIONS = st.one_of(st.sampled_from([1.0, 0.5, 0.25, 1 / 3]),
                      st.floats(0.01, 1.0, allow_nan=False))
CAPACITIES = st.one_of(st.sampled_from([1.0, 2.0, 0.5]), st.floats(0.25, 8.0))
SIZES = st.one_of(st.sampled_from([0.0, 1.0, 2.0, 3.0]), st.floats(0.0, 10.0))


@st.composite
def instances(draw):
    n_res = draw(st.integers(2, 30))
    n_flows = draw(st.integers(1, 40))
    paths = []
    for _ in range(n_flows):
        k = draw(st.integers(0, min(n_res, 6)))
        links = draw(st.lists(st.integers(0, n_res - 1), min_size=k, max_size=k, unique=True))
        paths.append([(r, draw(FRACTIONS)) for r in links])
    cap = np.array(draw(st.lists(CAPACITIES, min_size=n_res, max_size=n_res)))
    flow_bytes = np.array(draw(st.lists(SIZES, min_size=n_flows, max_size=n_flows)))
    incast = draw(st.sampled_from(["off", "on", "on"]))
    if incast == "off":
        return paths, cap, flow_bytes, None, None, math.inf, 0.0
    n_vertices = draw(st.integers(1, 6))
    flow_dst = np.array(draw(st.lists(st.integers(0, n_vertices - 1), min_size=n_flows,
                                      max_size=n_flows)), dtype=np.int64)
    ingress = np.array(draw(st.lists(CAPACITIES, min_size=n_vertices, max_size=n_vertices)))
    w_t = draw(st.integers(0, 5))
    eps = draw(st.floats(0.01, 2.0))
    return paths, cap, flow_bytes, flow_dst, ingress, float(w_t), eps


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_completion_matches_oracle(inst):
    """The incremental solver (what "auto" runs on these instances: they
    have few entries a flow)."""
    paths, cap, flow_bytes, flow_dst, ingress, w_t, eps = inst
    check_against_oracle(make_routes(paths), cap, flow_bytes, flow_dst, ingress, w_t, eps,
                         method="incremental")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_full_resolves_match_oracle(inst):
    """The screened solver's full re-solves (these instances have fewer
    events than ``SCREEN_START``)."""
    paths, cap, flow_bytes, flow_dst, ingress, w_t, eps = inst
    check_against_oracle(make_routes(paths), cap, flow_bytes, flow_dst, ingress, w_t, eps,
                         method="screened")


@settings(max_examples=600, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(instances())
def test_screened_resolves_match_oracle(monkeypatch, inst):
    """Screened re-solves (what the screened solver runs from event
    ``SCREEN_START`` on) from the second event on: only (nearly) saturated
    resources are solved over, the others are kept below capacity by the
    drift bound."""
    monkeypatch.setattr(maxmin, "SCREEN_START", 2)
    paths, cap, flow_bytes, flow_dst, ingress, w_t, eps = inst
    check_against_oracle(make_routes(paths), cap, flow_bytes, flow_dst, ingress, w_t, eps,
                         method="screened")


@settings(max_examples=300, deadline=None)
@given(instances(), st.data())
def test_static_rates_match_oracle(inst, data):
    paths, cap = inst[0], inst[1]
    active = np.array(data.draw(st.lists(st.booleans(), min_size=len(paths),
                                         max_size=len(paths))), dtype=np.bool_)
    routes = make_routes(paths)
    rates = max_min_rates(routes, cap, active=active)
    expected = progressive_filling(paths, list(map(float, cap)), list(active))
    assert_close(rates, expected)
    check_maxmin(routes.flow_ptr, routes.link, routes.frac, cap,
                 np.where(np.isinf(rates), 0.0, rates), active=list(active))


def test_heap_path_many_levels():
    """200 flows with distinct bottlenecks: hundreds of levels, far past the
    pass-based limit, so the heap path does almost all the work."""
    assert fill.PASS_LIMIT < 50
    rng = np.random.default_rng(7)
    n = 200
    paths = []
    for f in range(n):
        shared = rng.choice(np.arange(n, n + 20), size=3, replace=False)
        paths.append([(f, 1.0)] + [(int(r), float(rng.uniform(0.05, 0.5))) for r in shared])
    cap = np.concatenate([1.0 + rng.permutation(n) / n, rng.uniform(12.0, 24.0, 20)])
    routes = make_routes(paths)
    rates = max_min_rates(routes, cap)
    expected = progressive_filling(paths, list(cap), [True] * n)
    assert len(np.unique(np.round(expected, 12))) > 50
    assert_close(rates, expected)
    check_maxmin(routes.flow_ptr, routes.link, routes.frac, cap, rates)
    # and event-driven on a part of it (the oracle is cubic)
    sub = paths[:70]
    used = sorted({r for p in sub for r, _ in p})
    remap = {r: i for i, r in enumerate(used)}
    sub = [[(remap[r], a) for r, a in p] for p in sub]
    check_against_oracle(make_routes(sub), cap[used], rng.uniform(0.5, 3.0, len(sub)))


@pytest.mark.parametrize("method", METHODS)
def test_incremental_path_many_events(method):
    """60 flows, random fractional paths over 15 links, all sizes distinct:
    60 events, each re-solving only the flows at or above the finished rate."""
    rng = np.random.default_rng(11)
    paths = []
    for _ in range(60):
        links = rng.choice(15, size=rng.integers(1, 6), replace=False)
        paths.append([(int(r), float(rng.uniform(0.1, 1.0))) for r in links])
    cap = rng.uniform(0.5, 3.0, 15)
    sizes = rng.uniform(0.1, 5.0, 60)
    sol = check_against_oracle(make_routes(paths), cap, sizes, method=method)
    assert len(np.unique(sol.finish)) == 60


@pytest.mark.parametrize("method", METHODS)
def test_incremental_path_with_incast(method):
    rng = np.random.default_rng(12)
    paths = []
    for _ in range(50):
        links = rng.choice(10, size=rng.integers(1, 4), replace=False)
        paths.append([(int(r), float(rng.uniform(0.2, 1.0))) for r in links])
    check_against_oracle(make_routes(paths), rng.uniform(1.0, 3.0, 10),
                         rng.uniform(0.1, 5.0, 50), flow_dst=rng.integers(0, 4, 50),
                         ingress=rng.uniform(0.5, 2.0, 4), w_t=2.0, eps=0.3, method=method)


def _torus_permutation(dims, seed):
    """``(topology, src, dst, rng)``: a torus and a random permutation of its
    nodes drawn from ``default_rng(seed)`` (which the caller goes on using)."""
    Torus = pytest.importorskip("flowemu.topology.torus").Torus
    topo = Torus(dims=dims)
    rng = np.random.default_rng(seed)
    dst = rng.permutation(topo.num_nodes)
    return topo, np.arange(topo.num_nodes), dst, rng


@pytest.mark.parametrize("method", METHODS)
def test_torus_permutation_against_oracle(method):
    topo, src, dst, rng = _torus_permutation((6, 6), 3)
    n = topo.num_nodes
    routes = topo.route(src, dst, ecmp="split")
    cap = np.ones(topo.num_links)
    check_against_oracle(routes, cap, rng.uniform(0.5, 2.0, n), method=method)
    check_against_oracle(routes, cap, rng.uniform(0.5, 2.0, n), flow_dst=dst,
                         ingress=topo.ingress_capacity_scale(), w_t=1.0, eps=0.2,
                         method=method)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("ecmp", ["hash", "split"])
def test_torus_permutation_heap_compaction_against_oracle(ecmp, method):
    """An 8x8 permutation: most resources in the heap lose their last flow
    through another resource, so the heap drops them in bulk sweeps (above
    64 entries); the result must not change."""
    topo, src, dst, rng = _torus_permutation((8, 8), 4)
    n = topo.num_nodes
    routes = topo.route(src, dst, ecmp=ecmp, seed=2)
    sol = check_against_oracle(routes, np.ones(topo.num_links), rng.uniform(0.5, 2.0, n),
                               method=method)
    assert len(np.unique(sol.finish)) > 40


def test_tiny_ecmp_fractions_keep_invariants():
    """ECMP corner fractions far below the others (1e-15 .. 1e-30) must not
    turn into negative weights or zero rates."""
    rng = np.random.default_rng(5)
    paths = []
    n_links = 40
    for _ in range(120):
        links = rng.choice(n_links, size=8, replace=False)
        fr = [0.5, 0.5, 0.25] + [float(10.0 ** -rng.integers(3, 31)) for _ in range(5)]
        paths.append(list(zip(map(int, links), fr)))
    routes = make_routes(paths)
    cap = rng.uniform(0.5, 2.0, n_links)
    sol = solve_completion(routes, cap, rng.uniform(0.5, 2.0, 120))
    assert sol.status == STATUS_OK
    assert np.all(sol.rate0 > 0) and np.all(np.isfinite(sol.finish))
    check_maxmin(routes.flow_ptr, routes.link, routes.frac, cap, sol.rate0)


def test_linearity_in_bytes():
    """Scaling every size by k scales every finish time by k (the engine
    relies on it)."""
    rng = np.random.default_rng(9)
    paths = [[(int(r), float(rng.uniform(0.2, 1.0))) for r in rng.choice(8, 3, replace=False)]
             for _ in range(30)]
    routes = make_routes(paths)
    cap = rng.uniform(1.0, 2.0, 8)
    sizes = rng.uniform(0.1, 1.0, 30)
    a = solve_completion(routes, cap, sizes)
    b = solve_completion(routes, cap, 1024.0 * sizes)
    assert_close(b.finish, 1024.0 * a.finish)
    assert_close(b.rate0, a.rate0)


def _permutation_flows(dims, ecmp):
    """A random permutation on a torus (flows to oneself left out, sizes
    0.5..2): ``(topology, routes, sizes, destinations)``."""
    topo, src, dst, rng = _torus_permutation(dims, 5)
    keep = src != dst
    routes = topo.route(src[keep], dst[keep], ecmp=ecmp, seed=1)
    return topo, routes, rng.uniform(0.5, 2.0, keep.sum()), dst[keep]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("ecmp", ["hash", "split"])
def test_methods_match_oracle_on_torus_permutation(ecmp, method):
    """A 12x12 permutation: 143 flows finishing one by one, so "auto" runs
    past its trial and weighs restricted re-solves against full ones (and
    stays restricted). Every mode gives the oracle's times, with and without
    incast."""
    topo, routes, sizes, dst = _permutation_flows((12, 12), ecmp)
    cap = np.ones(topo.num_links)
    sol = check_against_oracle(routes, cap, sizes, method=method)
    assert sol.status == STATUS_OK
    assert len(np.unique(sol.finish)) > 100
    sol = check_against_oracle(routes, cap, sizes, dst, topo.ingress_capacity_scale(), 1.0, 0.2,
                               method=method)
    assert sol.status == STATUS_OK


def test_auto_method_follows_route_entries():
    """A 16x16 permutation (255 events): on split routes (~47 entries a
    flow) "auto" takes the screened solver, on hashed paths (~8) the
    incremental one; every method gives the oracle's times."""
    for ecmp, want in (("split", "screened"), ("hash", "incremental")):
        topo, routes, sizes, _ = _permutation_flows((16, 16), ecmp)
        assert maxmin.completion_method(routes.flow_ptr) == want
        cap = np.ones(topo.num_links)
        (_, o_finish, o_status), _, _ = oracle_solution(routes, cap, sizes)
        assert o_status == STATUS_OK
        for method in METHODS:
            assert_close(solve_completion(routes, cap, sizes, method=method).finish, o_finish)


def test_completion_method_threshold():
    """The choice is the mean entries of the flows with a path against
    ``SCREEN_ENTRIES`` (empty paths do not count)."""
    n = maxmin.SCREEN_ENTRIES
    assert maxmin.completion_method(np.array([0, n, 2 * n, 2 * n])) == "incremental"
    assert maxmin.completion_method(np.array([0, n, 2 * n + 1])) == "screened"
    assert maxmin.completion_method(np.array([0, 0])) == "incremental"


def test_completion_method_counts_the_flows_that_finish():
    """Persistent flows never finish: their entries do not count (a
    collective's step of 1-entry flows under a background of long split
    routes goes to the incremental solver; the background alone would not)."""
    n = maxmin.SCREEN_ENTRIES
    ptr = np.array([0, 1, 2, 2 + 10 * n])   # two 1-entry flows and a long one
    assert maxmin.completion_method(ptr) == "screened"   # (10n + 2) / 3 entries a flow
    assert maxmin.completion_method(ptr, np.array([False, False, True])) == "incremental"
    assert maxmin.completion_method(ptr, np.array([True, False, False])) == "screened"


@pytest.mark.parametrize("method", METHODS)
def test_screened_link_that_comes_to_bind(method):
    """Flows A and B share link 0 (capacity 1); A also crosses link 1
    (capacity 0.9), loaded to 0.5 while B runs, far enough below capacity to
    be screened. When B finishes, A would take all of link 0, but link 1
    holds it to 0.9: the screened link must come back into the solve.
    Closed form: both at 0.5 until B finishes at t_B = b_B / 0.5; then A
    at 0.9 for its remaining b_A - 0.5 t_B bytes."""
    paths = [[(0, 1.0), (1, 1.0)], [(0, 1.0)]]
    cap = np.array([1.0, 0.9])
    b_a, b_b = 3.0, 1.0
    sol = solve_completion(make_routes(paths), cap, np.array([b_a, b_b]), method=method)
    assert sol.status == STATUS_OK
    t_b = b_b / 0.5
    assert_close(sol.rate0, [0.5, 0.5])
    assert_close(sol.finish, [t_b + (b_a - 0.5 * t_b) / 0.9, t_b])


def test_append_entries_and_ingress():
    """Extra resources join each flow's entries after its own, fraction 1,
    in column order, where given (-1: none); the ingress resource joins
    every non-empty flow only."""
    ptr = np.array([0, 2, 2, 3], dtype=np.int64)
    res = np.array([5, 6, 7], dtype=np.int32)
    frac = np.array([0.5, 0.25, 1.0])
    extra = np.array([[9, -1], [-1, 12], [10, 11]], dtype=np.int64)
    p, r, f = append_entries(ptr, res, frac, extra)
    assert p.tolist() == [0, 3, 4, 7]
    assert r.tolist() == [5, 6, 9, 12, 7, 10, 11]
    assert f.tolist() == [0.5, 0.25, 1.0, 1.0, 1.0, 1.0, 1.0]
    p, r, f = append_ingress(ptr, res, frac, np.array([3, 1, 0]), 100)
    assert p.tolist() == [0, 3, 3, 5]
    assert r.tolist() == [5, 6, 103, 7, 100]
    assert f.tolist() == [0.5, 0.25, 1.0, 1.0, 1.0]
