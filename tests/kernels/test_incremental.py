"""Exactness of the incremental max-min solver (issue 25, item 2).

Random instances of every topology family and ECMP mode, with failed and
degraded (partial-capacity) links, incast (one class, or a class per tree
tier), persistent background flows and 0-byte flows:

* against the pure-Python oracle (``tests/helpers/maxmin_oracle.py``, a full
  progressive filling at every event) on instances small enough for it, at
  1e-12 relative;
* against the screened solver (the other exact solver, which shares nothing
  with the incremental one but the input checks) on instances with thousands
  of finish events, at 1e-12 relative.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowemu.core.errors import ConfigError
from flowemu.core.network import Network
from flowemu.kernels import maxmin
from flowemu.kernels.completion import (
    SCREEN_START,
    STATUS_HANDOFF,
    few_finish_times,
    screened_completion_kernel,
)
from flowemu.kernels.incremental import STATUS_BULK, incremental_events, moved_enough
from flowemu.kernels.maxmin import solve_completion
from flowemu.kernels.refill import CAP, LOAD_HI, OVER_TOL, W_HI, stale_pools, water_level
from flowemu.topology import parse_topology
from flowemu.whatif.faults import apply_faults
from tests.helpers.maxmin_oracle import completion, completion_persistent, csr_to_lists
from tests.helpers.routes import make_routes

RTOL = 1e-12

#: (spec, ECMP modes) of every family, small enough for the oracle
FAMILIES = [
    ("torus:4x4", ["split", "dor", "hash"]),
    ("torus:3x3x2", ["split", "dor", "hash"]),
    ("mesh:3x4", ["split", "dor", "hash"]),
    ("fattree:k=4", ["split", "hash", "dmodk"]),
    ("fattree:k=4,taper=2", ["split", "hash", "dmodk"]),
    ("fattree:k=4,levels=2,taper=1.5", ["split", "hash", "dmodk"]),
    ("leafspine:4x3x2,uplinks=2", ["split", "hash"]),
    ("hyperx:3x4", ["split", "dor", "hash"]),
    ("dragonfly:a=2,p=2,h=1", ["split", "hash", "valiant"]),
    ("hx2mesh:2x2", ["split", "dor", "hash"]),
    ("tree:3x4,eps=20ps:80ps,wt=2:1", ["split", "hash"]),
]
#: the same families at sizes with thousands of finish events
LARGE = [
    ("torus:16x16", "hash"), ("torus:8x8x4", "dor"), ("torus:12x12", "split"),
    ("fattree:k=12", "dmodk"), ("fattree:k=12,taper=2", "split"), ("fattree:k=8", "hash"),
    ("hyperx:8x8", "split"), ("dragonfly:a=4,p=4,h=2", "valiant"),
    ("hx2mesh:4x4", "hash"), ("tree:8x16,eps=20ps:80ps,wt=2:1", "split"),
    ("leafspine:16x8x4", "hash"), ("mesh:12x12", "split"),
]


def _problem(spec, ecmp, n_flows, seed, *, fail=0, degrade=0, incast=False, background=0.0):
    """Arrays for :func:`solve_completion` (as the engine builds them) of
    ``n_flows`` random flows on ``spec``; the failed and degraded links are
    drawn with ``seed``."""
    rng = np.random.default_rng(seed)
    topo = parse_topology(spec)
    sel_fail = f"random:{fail}:{seed}" if fail else None
    sel_degrade = f"random:{degrade}:{seed + 1}={rng.uniform(0.1, 0.9):.3f}" if degrade \
        else None
    n = topo.num_endpoints
    src = rng.integers(0, n, n_flows)
    dst = (src + rng.integers(1, n, n_flows)) % n
    net = Network.from_si(bandwidth="100Gb/s", incast_threshold=2 if incast else math.inf,
                  incast_slope="30ps" if incast else 0.0)
    try:
        faulty = apply_faults(topo, sel_fail, sel_degrade)
        routes = faulty.route(src, dst, ecmp, seed=seed)
        topo = faulty
    except ConfigError:   # a draw that cuts a flow off: keep the network whole
        routes = topo.route(src, dst, ecmp, seed=seed)
    flow_bytes = rng.uniform(1e6, 4e6, n_flows)
    flow_bytes[rng.random(n_flows) < 0.05] = 0.0
    persistent = rng.random(n_flows) < background
    kwargs = {"persistent": persistent} if background else {}
    if incast or spec.startswith("tree:"):
        w_t, eps = topo.incast_classes(net)
        if incast or np.any(eps > 0):
            kwargs.update(flow_dst=dst, ingress_capacity=topo.ingress_capacity(net),
                          incast_threshold=w_t, incast_slope=eps,
                          flow_class=topo.flow_incast_class(src, dst))
    return routes, topo.link_capacity(net), flow_bytes, kwargs


def _close(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    assert np.array_equal(np.isinf(a), np.isinf(b))
    fin = np.isfinite(a)
    np.testing.assert_allclose(a[fin], b[fin], rtol=RTOL, atol=0)


def _oracle(routes, cap, flow_bytes, kwargs):
    """The oracle's ``(rate0, finish, moved, status)`` for the same problem,
    the ingress resources built the way the oracle's own tests build them."""
    paths = csr_to_lists(routes.flow_ptr, routes.link, routes.frac)
    capacity = [float(c) for c in cap]
    n_plain = len(capacity)
    w_ts, epss = math.inf, 0.0
    if "flow_dst" in kwargs:
        w_t, eps = np.atleast_1d(kwargs["incast_threshold"]), np.atleast_1d(kwargs["incast_slope"])
        ingress = kwargs["ingress_capacity"]
        resource = {}
        w_ts, epss = [], []
        for f, (d, k) in enumerate(zip(kwargs["flow_dst"], kwargs["flow_class"])):
            if not paths[f]:
                continue
            key = (int(d), int(k))
            if key not in resource:
                resource[key] = n_plain + len(resource)
                capacity.append(float(ingress[d]))
                w_ts.append(float(w_t[k]))
                epss.append(float(eps[k]))
            paths[f] = paths[f] + [(resource[key], 1.0)]
    persistent = kwargs.get("persistent")
    if persistent is not None:
        return completion_persistent(paths, capacity, list(flow_bytes), list(persistent),
                                     n_plain=n_plain, w_t=w_ts, eps=epss)
    rate0, finish, status = completion(paths, capacity, list(flow_bytes), n_plain=n_plain,
                                       w_t=w_ts, eps=epss)
    return rate0, finish, None, status


@st.composite
def small_problems(draw):
    spec, modes = draw(st.sampled_from(FAMILIES))
    ecmp = draw(st.sampled_from(modes))
    n_flows = draw(st.integers(1, 40))
    seed = draw(st.integers(0, 10_000))
    opts = {"fail": draw(st.sampled_from([0, 0, 1, 2])),
            "degrade": draw(st.sampled_from([0, 2, 4])),
            "incast": draw(st.booleans()),
            "background": draw(st.sampled_from([0.0, 0.0, 0.2]))}
    return spec, ecmp, n_flows, seed, opts


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_problems())
def test_incremental_matches_oracle_on_every_family(problem):
    _matches_oracle(problem, "incremental")


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_problems())
def test_screened_matches_oracle_on_every_family(problem):
    """The screened re-solves alone (finish times, and the bytes background
    flows move, which an event brings up to date only when a rate changes)."""
    _matches_oracle(problem, "screened")


def _matches_oracle(problem, method):
    spec, ecmp, n_flows, seed, opts = problem
    routes, cap, flow_bytes, kwargs = _problem(spec, ecmp, n_flows, seed, **opts)
    sol = solve_completion(routes, cap, flow_bytes, method=method, **kwargs)
    rate0, finish, moved, status = _oracle(routes, cap, flow_bytes, kwargs)
    assert sol.status == status
    if status == 0:
        _close(sol.rate0, rate0)
        _close(sol.finish, finish)
        if moved is not None:
            _close(sol.moved, moved)


@pytest.mark.parametrize("spec, ecmp", LARGE)
def test_incremental_matches_screened_with_thousands_of_events(spec, ecmp):
    """Thousands of distinct finish times, failures, degraded links, incast
    and background flows at once; the screened solver is the reference."""
    n = parse_topology(spec).num_endpoints
    n_flows = max(2000, 8 * n)
    routes, cap, flow_bytes, kwargs = _problem(spec, ecmp, n_flows, 7, fail=2, degrade=6,
                                               incast=True, background=0.05)
    inc = solve_completion(routes, cap, flow_bytes, method="incremental", **kwargs)
    scr = solve_completion(routes, cap, flow_bytes, method="screened", **kwargs)
    assert inc.status == scr.status == 0
    assert len(np.unique(inc.finish[np.isfinite(inc.finish)])) > 1000
    _close(inc.rate0, scr.rate0)
    _close(inc.finish, scr.finish)
    _close(inc.moved, scr.moved)


@pytest.mark.parametrize("background", [0.0, 0.2])
@pytest.mark.parametrize("method", ["incremental", "screened", "auto"])
@pytest.mark.parametrize("spec, ecmp", LARGE)
def test_equal_sizes_finish_at_their_first_rate(spec, ecmp, method, background):
    """A closed form, as in a collective's step under a background load: when
    every flow that finishes has the same bytes ``B``, each finishes at ``B /
    (its rate at t = 0)`` however the persistent flows' rates move.

    (A finish leaves every rate below the finished flow's unchanged: each
    resource the flow crossed saturated at or above its rate, and without it,
    with the same loads below that level, less weight and no less capacity,
    saturates no earlier; with equal bytes the fastest flows finish first,
    those tied in rate together, so no flow still running ever sees a finish
    below its rate.) Tens to thousands of events (equal sizes tie many
    flows), with a background whose rates they move or without (where "auto"
    solves ``t = 0`` only and the others go through every event), on
    failed, degraded and incast-limited resources."""
    n = parse_topology(spec).num_endpoints
    routes, cap, flow_bytes, kwargs = _problem(spec, ecmp, max(2000, 8 * n), 11, fail=2,
                                               degrade=6, incast=True, background=background)
    flow_bytes[:] = 3e6
    sol = solve_completion(routes, cap, flow_bytes, method=method, **kwargs)
    assert sol.status == 0
    done = ~kwargs.get("persistent", np.zeros(len(flow_bytes), dtype=bool))
    assert len(np.unique(sol.finish[done])) >= 20
    if background:
        assert np.all(sol.moved[~done] > 0)
    # (flows within the tie tolerance of a faster one finish with it: 1e-12)
    np.testing.assert_allclose(sol.finish[done], flow_bytes[done] / sol.rate0[done],
                               rtol=2e-12, atol=0)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_problems(), st.sampled_from([0.0, 1e6, 3e6]))
def test_auto_ends_flows_of_one_size_at_the_first_solve_as_the_oracle(problem, size):
    """"auto" with flows of one size and no background: every finish time
    from the ``t = 0`` rates (grouped to the tie tolerance as the events
    would), against the oracle's event-by-event filling."""
    spec, ecmp, n_flows, seed, opts = problem
    routes, cap, flow_bytes, kwargs = _problem(spec, ecmp, n_flows, seed,
                                               **dict(opts, background=0.0))
    flow_bytes[:] = size
    sol = solve_completion(routes, cap, flow_bytes, **kwargs)
    rate0, finish, _, status = _oracle(routes, cap, flow_bytes, kwargs)
    assert sol.status == status
    if status == 0:
        _close(sol.rate0, rate0)
        _close(sol.finish, finish)


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(small_problems())
def test_incremental_screening_matches_oracle(monkeypatch, problem):
    """The same with screening forced on (every flow counted lazily on the
    resources far from capacity from the first event on, drift events and
    admissions as they come)."""
    monkeypatch.setattr(maxmin, "LAZY_ENTRIES", 0)
    test_incremental_matches_oracle_on_every_family.hypothesis.inner_test(problem)


@pytest.mark.parametrize("spec, ecmp", LARGE)
def test_incremental_screening_matches_screened_with_thousands_of_events(monkeypatch, spec,
                                                                         ecmp):
    monkeypatch.setattr(maxmin, "LAZY_ENTRIES", 0)
    test_incremental_matches_screened_with_thousands_of_events(spec, ecmp)


def _at_first_move(monkeypatch, what):
    """Make the solver act on the first event that moves a rate: ``what``
    "SWITCH", the incremental solver without screening starts to screen
    (the engine waits for 32 events moving 16 rates each on average);
    "BULK", "auto" hands a step the incremental solver took on to the
    screened re-solves (it waits for 32 events moving a tenth of the flows'
    rates each)."""
    after, share = {"SWITCH": ("SWITCH_EVENTS", "SWITCH_CHANGES"),
                    "BULK": ("BULK_AFTER", "BULK_SHARE")}[what]
    monkeypatch.setattr(maxmin, after, 0)
    monkeypatch.setattr(maxmin, share, 0.0)


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(small_problems())
def test_incremental_switching_to_screening_matches_oracle(monkeypatch, problem):
    """The same with screening started between two events (every flow
    counted lazily from the rates and loads then, its pool copied from its
    row)."""
    _at_first_move(monkeypatch, "SWITCH")
    test_incremental_matches_oracle_on_every_family.hypothesis.inner_test(problem)


@pytest.mark.parametrize("spec, ecmp", LARGE)
def test_incremental_switching_to_screening_matches_screened_with_thousands_of_events(
        monkeypatch, spec, ecmp):
    _at_first_move(monkeypatch, "SWITCH")
    test_incremental_matches_screened_with_thousands_of_events(spec, ecmp)


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(small_problems())
def test_auto_handing_on_to_bulk_resolves_matches_oracle(monkeypatch, problem):
    """"auto" (the screened solver at ``t = 0``, the incremental one for a
    step with many finish times, the screened re-solves again for the rest
    of it from the time and the bytes left then) against the oracle."""
    _at_first_move(monkeypatch, "BULK")
    _matches_oracle(problem, "auto")


@pytest.mark.parametrize("spec, ecmp", LARGE)
def test_auto_handing_on_to_bulk_resolves_matches_screened(monkeypatch, spec, ecmp):
    _at_first_move(monkeypatch, "BULK")
    n = parse_topology(spec).num_endpoints
    routes, cap, flow_bytes, kwargs = _problem(spec, ecmp, max(2000, 8 * n), 7, fail=2,
                                               degrade=6, incast=True, background=0.05)
    auto = solve_completion(routes, cap, flow_bytes, method="auto", **kwargs)
    scr = solve_completion(routes, cap, flow_bytes, method="screened", **kwargs)
    assert auto.status == scr.status == 0
    _close(auto.rate0, scr.rate0)
    _close(auto.finish, scr.finish)
    _close(auto.moved, scr.moved)


def _rescreen_at_every_event(monkeypatch):
    """Screening from the start, and screening again at every event (the
    engine looks at the pools once its fills have walked a quarter of all
    entries and screens again where half of them went stale)."""
    monkeypatch.setattr(maxmin, "LAZY_ENTRIES", 0)
    monkeypatch.setattr(maxmin, "RESCREEN_WALK", 0.0)
    monkeypatch.setattr(maxmin, "RESCREEN_STALE", -1.0)


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(small_problems())
def test_incremental_screening_again_matches_oracle(monkeypatch, problem):
    """The same with the pools screened again between every two events (each
    candidate that its flows at their lazy rates leave far from capacity is
    screened and leaves their pools; a flow whose pool was its whole route
    is counted at its rate first)."""
    _rescreen_at_every_event(monkeypatch)
    test_incremental_matches_oracle_on_every_family.hypothesis.inner_test(problem)


@pytest.mark.parametrize("spec, ecmp", LARGE)
def test_incremental_screening_again_matches_screened_with_thousands_of_events(
        monkeypatch, spec, ecmp):
    _rescreen_at_every_event(monkeypatch)
    test_incremental_matches_screened_with_thousands_of_events(spec, ecmp)


@pytest.mark.parametrize("elsewhere", [False, True])
def test_a_flow_with_a_tiny_share_stops_at_the_level_of_the_flows_on_its_link(elsewhere):
    """Link 0 (capacity 1) is full with three flows at h = 1/3: it holds
    them, or (``elsewhere``) each is held, at the same rate, by a link of
    its own that it crosses first. Flow B crosses link 0 with a fraction of
    2**-60 and is held, at h too, by link 1 with flow D (which also crosses
    link 0 with 2**-70). When D finishes, link 1 has room and B rises
    again; link 0 has none, so B stays at h (1/(3 + 2**-60), rounded) and
    every flow of 10 bytes ends at 10/h, with the oracle. Link 0's load is a
    sum of rounded products, 2**-54 short of its capacity; over B's weight
    that made link 0's level 64, so link 1 alone stopped B, at 2h (finished
    at 15 s, not 30 s). A resource full to rounding at the level of the
    flows it holds, or of its fastest settled flow, now freezes its rising
    flows there (``refill.SNAP``). With ``elsewhere`` the case is a tie
    within rounding (the three links' capacity is 1/3 rounded down, which
    leaves link 0 the room of 2**-54): the full filling and the oracle
    freeze B with the three at link 0, and so does the incremental solver
    now."""
    h = 1.0 / 3.0
    own = [[(2 + i, 1.0), (0, 1.0)] for i in range(3)] if elsewhere else [[(0, 1.0)]] * 3
    paths = own + [[(1, 1.0), (0, 2.0 ** -60)], [(0, 2.0 ** -70), (1, 1.0)]]
    routes = make_routes(paths)
    cap = [1.0, 2.0 * h] + ([h] * 3 if elsewhere else [])
    sizes = [10.0, 10.0, 10.0, 10.0, 0.01]
    expected = np.array([10.0 / h] * 4 + [0.01 / h])
    _, oracle, status = completion(paths, cap, sizes)
    assert status == 0
    np.testing.assert_allclose(oracle, expected, rtol=1e-15)
    for method in ("incremental", "screened"):
        sol = solve_completion(routes, np.array(cap), np.array(sizes), method=method)
        np.testing.assert_allclose(sol.finish, expected, rtol=1e-15, err_msg=method)


def _water_level(lam, w, flows):
    """``refill.water_level`` on one resource whose rising flows (weight
    ``w``) would fill it at ``lam``, with its settled flows above that level
    ``flows``: ``(fraction, rate, held here)``."""
    rs = np.zeros((1, 8))
    rs[0, W_HI] = w
    over_h = np.array([-1 - i if held else i for i, (_, _, held) in enumerate(flows)],
                      dtype=np.int32)
    over_x = np.array([[a, x] for a, x, _ in flows], dtype=np.float64).reshape(-1, 2)
    return water_level(0, lam, lam + lam * OVER_TOL, over_h, over_x, len(flows), rs)


def test_the_water_level_of_a_worked_example():
    """Rising weight 1 that would fill the link at 1; settled flows at 4
    and 1.5 held elsewhere, and one at 1.2 the link holds (fractions 1).
    With all three rising the link fills at (1 + 4 + 1.5 + 1.2) / 4 =
    1.925, above 1.5: that flow keeps its rate. With the other two, at
    (1 + 4 + 1.2) / 3 = 2.0667, below 4: the flow at 4 rises (it cannot
    get that much here) and the held one rises in any case. The cut
    returned lies between 1.5 and 4."""
    cut = _water_level(1.0, 1.0, [(1.0, 4.0, False), (1.0, 1.5, False), (1.0, 1.2, True)])
    assert 1.5 <= cut < 4.0
    assert cut == pytest.approx(1.925, rel=1e-15)


@given(lam=st.floats(0.1, 10.0), w=st.floats(1e-3, 10.0),
       flows=st.lists(st.tuples(st.floats(1e-6, 1.0), st.floats(1.0 + 1e-6, 100.0),
                                st.booleans()), min_size=1, max_size=30))
@settings(max_examples=300, deadline=None)
def test_the_water_level_releases_exactly_the_flows_the_link_cannot_carry(lam, w, flows):
    """The water level's defining property, checked from its definition
    (not from the algorithm): with R the flows the link holds and those
    above the returned cut, the link fills at ``L = (lam w + sum_R a x) /
    (w + sum_R a)`` once R rises with its rising flows; every flow of R
    held elsewhere is faster than L (it cannot keep its rate there), and
    every flow left out is at most L (it would freeze again at its rate).
    Rates are drawn as multiples of ``lam`` above it."""
    flows = [(a, lam * x, held) for a, x, held in flows]
    cut = _water_level(lam, w, flows)
    released = [(a, x, held) for a, x, held in flows if held or x > cut]
    kept = [x for _, x, held in flows if not held and x <= cut]
    level = (lam * w + sum(a * x for a, x, _ in released)) / (w + sum(a for a, _, _ in released))
    for _, x, held in released:
        if not held:
            assert x > level * (1 - 1e-12)
    for x in kept:
        assert x <= level * (1 + 1e-12)


def test_stale_pools_counts_the_candidates_entries_far_from_capacity():
    """Three candidate resources of capacity 1 crossed by 1, 2 and 3 flows
    (loads 1.0, 0.5, 0.2; the last two are far from capacity: 5 of the 6
    entries) and a screened one (not counted): stale below a share of 5/6
    only; resources from ``n_plain`` on (ingress) are not looked at."""
    res_ptr = np.array([0, 1, 3, 6, 16])
    rs = np.zeros((4, 8))
    rs[:, CAP] = 1.0
    rs[:, LOAD_HI] = [1.0, 0.5, 0.2, 0.0]
    cand = np.array([1, 1, 1, 0], np.uint8)
    assert stale_pools(res_ptr, rs, cand, 4, 0.5)
    assert stale_pools(res_ptr, rs, cand, 4, 0.83)
    assert not stale_pools(res_ptr, rs, cand, 4, 5 / 6)
    # the first resource alone (n_plain = 1): full, then 1 % below capacity
    # (within the drift room: still a candidate), then 5 % below (stale)
    assert not stale_pools(res_ptr, rs, cand, 1, 0.0)
    rs[0, LOAD_HI] = 0.99
    assert not stale_pools(res_ptr, rs, cand, 1, 0.0)
    rs[0, LOAD_HI] = 0.95
    assert stale_pools(res_ptr, rs, cand, 1, 0.0)


def test_incremental_solver_stops_for_bulk_resolves_with_the_bytes_left():
    """Three flows of 1, 2 and 3 bytes on one link of 1 byte/s (and a
    persistent one on it): rates 1/4 each until the first finishes at
    t = 4, which moves the others' rates; told to stop at the first event
    that moves a rate, the solver returns that time and the bytes left,
    ``size - t / 4``; the screened re-solves of the rest give the closed
    form's times: 4, then 2 - 1 = 1 byte at 1/3 (t = 7), then 3 - 1 - 1 = 1
    byte at 1/2 (t = 9)."""
    flow_ptr = np.arange(5, dtype=np.int64)
    res, frac, cap = np.zeros(4, np.int32), np.ones(4), np.ones(1)
    sizes = np.array([1.0, 2.0, 3.0, 0.0])
    keep = np.array([False, False, False, True])
    none = np.zeros(0)
    rate = np.full(4, 0.25)
    state = np.empty(5)
    _, finish, moved, status = incremental_events(
        flow_ptr, res, frac, cap, 1, none, none, sizes, keep, False, rate.copy(), rate.copy(),
        np.zeros(4), np.zeros(4), -1, 0.0, 0, 0.0, state)
    assert status == STATUS_BULK
    assert state[4] == 4.0 and finish[0] == 4.0
    np.testing.assert_array_equal(state[:4], [-1.0, 1.0, 2.0, 0.0])
    assert moved[3] == 1.0   # the persistent flow at 1/4 for 4 s
    # the screened re-solves go on from there: the persistent flow moves
    # 1 byte more at 1/3 until t = 7 and 1 more at 1/2 until t = 9
    counter = np.zeros(1, np.int64)
    assert maxmin._bulk_rest(flow_ptr, res, frac, cap, 1, none, none, keep, state, finish,
                             moved, counter) == 0
    assert counter[0] == 2   # (flows 1 and 2 finish there)
    np.testing.assert_allclose(finish[:3], [4.0, 7.0, 9.0], rtol=RTOL)
    np.testing.assert_allclose(moved[3], 3.0, rtol=RTOL)


def test_moved_enough_where_finishes_move_many_rates():
    """The rule: from event ``after`` on, once the events so far moved
    more than ``per_event`` rates each on average; never with ``after =
    -1``."""
    assert not moved_enough(31, 10**6, 32, 16.0)      # too early
    assert not moved_enough(32, 32 * 16, 32, 16.0)    # 16 an event: not more
    assert moved_enough(32, 32 * 16 + 1, 32, 16.0)
    assert moved_enough(100, 1601, 32, 16.0)
    assert not moved_enough(100, 1600, 32, 16.0)
    assert not moved_enough(10**6, 10**9, -1, 0.0)
    assert moved_enough(1, 1, 0, 0.0) and not moved_enough(1, 0, 0, 0.0)


def test_screening_follows_route_entries():
    """The incremental solver screens above ``LAZY_ENTRIES`` entries a flow:
    on fat trees' reduced problem (<= 6 entries) it does not; both ways the
    rates are the same."""
    n = maxmin.LAZY_ENTRIES
    assert not maxmin.incremental_screens(np.array([0, n, 2 * n]))
    assert maxmin.incremental_screens(np.array([0, n, 2 * n + 1]))


def test_auto_hands_steps_with_many_finish_times_to_the_incremental_solver():
    """The screened kernel stops after ``t = 0`` with ``STATUS_HANDOFF`` for a
    random permutation (every flow its own finish time) and solves a step
    whose flows finish together itself; "auto" gives the incremental
    solver's times either way."""
    none = np.zeros(0)
    routes, cap, flow_bytes, _ = _problem("torus:8x8", "hash", 64, 3)
    keep = np.zeros(64, np.bool_)
    args = (routes.flow_ptr, routes.link, routes.frac, cap, len(cap), none, none)
    *_, status = screened_completion_kernel(*args, flow_bytes, keep, SCREEN_START, True)
    assert status == STATUS_HANDOFF
    *_, status = screened_completion_kernel(*args, np.ones(64), keep, SCREEN_START, True)
    assert status == 0   # (equal sizes: a handful of finish times)
    auto = solve_completion(routes, cap, flow_bytes)
    _close(auto.finish, solve_completion(routes, cap, flow_bytes, method="incremental").finish)


def test_few_finish_times_counts_groups_to_the_tie_tolerance():
    ptr = np.arange(6)
    keep = np.zeros(5, np.bool_)
    rate = np.ones(5)
    sizes = np.array([1.0, 1.0 + 1e-14, 2.0, 3.0, 3.0])
    assert few_finish_times(ptr, sizes, keep, rate, 3)
    assert not few_finish_times(ptr, sizes, keep, rate, 2)
    # persistent flows and empty paths do not finish: they do not count
    assert few_finish_times(ptr, sizes, np.array([0, 0, 1, 0, 0], np.bool_), rate, 2)
