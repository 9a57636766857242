"""Engine: closed forms on tori, exact profile linearity, step caching."""

import numpy as np
import pytest

import flowemu
from flowemu.algorithms import Reduction, Schedule, Step, Traffic, get_algorithm
from flowemu.core.network import Network
from flowemu.engine.profiles import direct_times, profile
from flowemu.engine.steptimes import pareto_lines
from flowemu.topology import parse_topology

B = 50e9          # 400 Gb/s in bytes/s
LAT = 400e-9      # link 100 ns + hop 300 ns


def build(name, p, topo=None, **opts):
    spec = get_algorithm(name)
    return spec.build(p, topo, False, **spec.parse_options(opts))


@pytest.mark.parametrize("p", [3, 4, 5, 7, 8, 12, 16, 31])
@pytest.mark.parametrize("ports", [1, 2])
def test_ring_on_ring_closed_form(p, ports):
    topo = parse_topology(f"torus:{p}")
    n = np.array([32.0, 2.0**20, 2.0**29])
    prof = profile(build("ring", p, ports=ports), topo, Network())
    # 2(p-1) steps, each: one neighbour hop, every link direction carries at
    # most one flow of n/(ports·p) bytes
    expected = 2 * (p - 1) * (LAT + n / (ports * p) / B)
    np.testing.assert_allclose(prof.times(n), expected, rtol=1e-9)


def test_ring_on_two_nodes_uses_both_links():
    # p = 2: the peer is d/2 away, so ECMP split sends half over each of the two links
    topo = parse_topology("torus:2")
    n = 2.0**20
    t = profile(build("ring", 2), topo, Network()).times([n])[0]
    assert t == pytest.approx(2 * (LAT + n / 2 / 2 / B), rel=1e-9)


@pytest.mark.parametrize("p", [4, 8, 16, 32])
def test_recdoub_latency_steps_dor(p):
    """Step s: every node sends n to r XOR 2^s, 2^s hops away; with dimension
    order routing 2^s flows share the busiest link direction (every flow
    crosses it), so the step takes 2^s·(link+hop latency) + n·2^s/B."""
    topo = parse_topology(f"torus:{p}")
    n = 2.0**24
    prof = profile(build("recdoub", p, variant="latency"), topo, Network(), ecmp="dor",
                   congestion=True)
    steps = prof.step_times([n])[:, 0]
    for s, t in enumerate(steps):
        assert t == pytest.approx(2**s * LAT + n * 2**s / B, rel=1e-9)
        assert prof.steps[s].max_flows_per_link == 2**s


@pytest.mark.parametrize("p", [4, 8, 16, 64])
def test_recdoub_bandwidth_steps_dor(p):
    """Rabenseifner reduce-scatter step s: n/2^(s+1) bytes over 2^s hops with
    2^s flows on the busiest link: 2^s·lat + n/(2B); the allgather mirrors it."""
    topo = parse_topology(f"torus:{p}")
    n = 2.0**24
    k = int(np.log2(p))
    prof = profile(build("recdoub", p, variant="bandwidth"), topo, Network(), ecmp="dor")
    steps = prof.step_times([n])[:, 0]
    assert len(steps) == 2 * k
    for s in range(k):
        expect = 2**s * LAT + n / (2 * B)
        assert steps[s] == pytest.approx(expect, rel=1e-9)
        assert steps[2 * k - 1 - s] == pytest.approx(expect, rel=1e-9)


@pytest.mark.parametrize("p", [4, 8, 16])
def test_half_way_peer_split_is_twice_as_fast_as_dor(p):
    # last latency-optimal step: the peer is exactly p/2 away
    topo = parse_topology(f"torus:{p}")
    net = Network(link_latency=0, hop_latency=0)
    sched = build("recdoub", p, variant="latency")
    last = Schedule("x", "x", p, (sched.steps[-1],))
    n = [2.0**20]
    t_dor = profile(last, topo, net, ecmp="dor").times(n)[0]
    t_split = profile(last, topo, net, ecmp="split").times(n)[0]
    assert t_dor == pytest.approx(n[0] * (p / 2) / B, rel=1e-9)
    assert t_split == pytest.approx(t_dor / 2, rel=1e-9)


SIZES = np.array([32.0, 1024.0, 2.0**15, 2.0**20, 2.0**24, 2.0**27, 2.0**29, 2.0**30])


@pytest.mark.parametrize("topo,alg,opts,ecmp,net", [
    ("torus:8x8", "ring", {}, "split", Network()),
    ("torus:8x8", "ring", {"ports": 2}, "hash", Network.from_si(alpha=1e-6)),
    ("torus:4x4", "recdoub", {"variant": "bandwidth"}, "split",
     Network.from_si(gamma=1e-11, delta=3e-12)),
    ("torus:3x5", "recdoub", {"variant": "latency"}, "dor", Network()),
    ("torus:6x6", "recdoub", {"variant": "bandwidth"}, "split",
     Network.from_si(incast_threshold=1, incast_slope=2e-11)),
    ("mesh:4x4", "recdoub", {"variant": "latency"}, "split", Network()),
])
def test_profile_equals_direct_solves(topo, alg, opts, ecmp, net):
    t = parse_topology(topo)
    sched = build(alg, t.num_endpoints, **opts)
    from_profile = profile(sched, t, net, ecmp=ecmp).times(SIZES)
    direct = direct_times(sched, t, net, SIZES, ecmp=ecmp)
    np.testing.assert_allclose(from_profile, direct, rtol=1e-12, atol=0)


def test_random_traffic_profile_equals_direct():
    """Unequal flows finishing at different times (event-driven) stay exactly
    linear in n."""
    rng = np.random.default_rng(7)
    t = parse_topology("torus:6x6")
    steps = []
    for k in range(3):
        src = rng.permutation(36)
        dst = rng.permutation(36)
        keep = src != dst
        steps.append(Step(Traffic(src[keep], dst[keep], rng.uniform(0.01, 1, keep.sum())),
                          Reduction.none(), f"s{k}"))
    sched = Schedule("random", "x", 36, tuple(steps))
    for ecmp in ("split", "dor", "hash"):
        np.testing.assert_allclose(profile(sched, t, Network(), ecmp=ecmp).times(SIZES),
                                   direct_times(sched, t, Network(), SIZES, ecmp=ecmp),
                                   rtol=1e-12)


def test_reduction_terms_follow_genmodel_rhd():
    """GenModel Table 2 (RHD): the reduce-scatter reduces (N-1)/N·S bytes per
    node with fan-in 2: (N-1)/N·S·γ + 3(N-1)/N·S·δ."""
    p, gamma, delta = 16, 2e-11, 5e-12
    t = parse_topology("torus:16")
    sched = build("recdoub", p, variant="bandwidth")
    base = profile(sched, t, Network()).times([2.0**20])[0]
    with_red = profile(sched, t, Network.from_si(gamma=gamma, delta=delta)).times([2.0**20])[0]
    S = 2.0**20
    assert with_red - base == pytest.approx((p - 1) / p * S * (gamma + 3 * delta), rel=1e-9)


def _count_solves(monkeypatch) -> list:
    """The solver calls of every step solve from now on (one entry each)."""
    from flowemu.engine import steps
    calls = []
    orig = steps.solve_completion
    monkeypatch.setattr(steps, "solve_completion",
                        lambda *a, **k: calls.append(1) or orig(*a, **k))
    return calls


def test_identical_steps_are_solved_once(monkeypatch):
    t = parse_topology("torus:8")
    sched = build("ring", 8)
    calls = _count_solves(monkeypatch)
    profile(sched, t, Network())
    # every ring step is the same neighbour pattern with the same share
    assert len(calls) == 1


def test_repeated_scaled_steps_share_their_lines_and_sum_exactly():
    """A ring's steps repeat one pattern at share 1/p (scaled from the unit
    solve): they share one set of lines, so the total evaluates it once, and
    that total equals the step-by-step sum (to rounding) and the direct solve."""
    t = parse_topology("torus:8")
    sched = build("ring", 8)
    prof = profile(sched, t, Network())
    assert len({id(s.spb) for s in prof.steps if s.num_flows}) == 1
    # held as distinct profiles and an index; the steps keep their own labels
    assert prof.num_steps == len(sched.steps) == 14 and len(prof.distinct) < 14
    assert [s.label for s in prof.steps] == [s.label for s in sched.steps]
    sizes = np.array([1e3, 3e6, 2e9])
    np.testing.assert_array_equal(prof.step_times(sizes),
                                  np.stack([s.time(sizes) for s in prof.steps]))
    # count · (one step's time) against the sum of every step: equal up to rounding
    np.testing.assert_allclose(prof.times(sizes), prof.step_times(sizes).sum(axis=0),
                               rtol=1e-14)
    np.testing.assert_allclose(prof.times(sizes), direct_times(sched, t, Network(), sizes),
                               rtol=1e-12)


def test_pareto_lines_keep_the_max():
    rng = np.random.default_rng(1)
    lat, spb = rng.uniform(0, 1, 200), rng.uniform(0, 1, 200)
    kl, ks = pareto_lines(lat, spb)
    n = np.logspace(-3, 3, 50)
    np.testing.assert_array_equal(np.max(lat[:, None] + spb[:, None] * n, axis=0),
                                  np.max(kl[:, None] + ks[:, None] * n, axis=0))


def test_simulate_columns_and_auto():
    df = flowemu.simulate("torus:8x8", "recdoub", "32B..1MiB")
    assert list(df.columns) == flowemu.RESULT_COLUMNS
    assert set(df.variant) <= {"latency", "bandwidth"}
    lat = flowemu.simulate("torus:8x8", "recdoub:variant=latency", "32B..1MiB")
    bw = flowemu.simulate("torus:8x8", "recdoub:variant=bandwidth", "32B..1MiB")
    np.testing.assert_allclose(df.time_s, np.minimum(lat.time_s, bw.time_s), rtol=0)


def test_simulate_rejects_unknown_network_parameter():
    with pytest.raises(flowemu.ConfigError, match="bandwith"):
        flowemu.simulate("torus:4x4", "ring", "1KiB", bandwith="1Gb/s")


def test_congestion_report_recdoub_latency_dor():
    """Latency-optimal recursive doubling on a 1-D torus of p nodes, dor:
    step s puts 2^s whole vectors on the busiest link and one on the busiest
    port. Ψ = log2 p / (2(p−1)/p / 2) (one port of two used, whole vector
    each step) and Ψ·Ξ = Σ 2^s / (2(p−1)/p / 2)."""
    p = 16
    prof = profile(build("recdoub", p, variant="latency"), parse_topology(f"torus:{p}"),
                   Network(), ecmp="dor", congestion=True)
    steps, summary = prof.congestion_report()
    assert list(steps.max_flows_per_link) == [1, 2, 4, 8]
    np.testing.assert_allclose(steps.max_link_load, [1, 2, 4, 8], rtol=1e-12)
    np.testing.assert_allclose(steps.max_port_injection, 1.0, rtol=1e-12)
    ideal = 2 * (p - 1) / p / 2
    assert summary["psi"] == pytest.approx(4 / ideal, rel=1e-12)
    assert summary["xi"] == pytest.approx(15 / 4, rel=1e-12)
    assert summary["psi_xi"] == pytest.approx(15 / ideal, rel=1e-12)
    # each sender has 2 ports; ideal per-port load is half its vector
    np.testing.assert_allclose(steps.load_vs_ideal, [2, 4, 8, 16], rtol=1e-12)


def test_congestion_report_ring_two_ports_is_optimal():
    p = 12
    prof = profile(build("ring", p, ports=2), parse_topology(f"torus:{p}"), Network(),
                   congestion=True)
    steps, summary = prof.congestion_report()
    assert (steps.max_flows_per_link == 1).all()
    assert summary["psi"] == pytest.approx(1.0, rel=1e-12)
    assert summary["xi"] == pytest.approx(1.0, rel=1e-12)


def test_pattern_key_ignores_order_and_scale():
    from flowemu.engine.context import pattern_key
    rng = np.random.default_rng(3)
    src, dst = rng.integers(0, 50, 200), rng.integers(50, 100, 200)
    share = rng.uniform(0.1, 1.0, 200)
    k1, s1 = pattern_key(Traffic(src, dst, share))
    order = rng.permutation(200)
    k2, s2 = pattern_key(Traffic(src[order], dst[order], share[order] / 8))
    assert k1 == k2 and s2 == s1 / 8
    k3, _ = pattern_key(Traffic(src, dst[::-1], share))
    share2 = share.copy()
    share2[0] *= 1.5
    k4, _ = pattern_key(Traffic(src, dst, share2))
    assert k3 != k1 and k4 != k1


def test_scaled_steps_share_a_solve_and_stay_exact():
    """Two steps with the same flows and halved shares are solved once; the
    profile still equals direct solves."""
    rng = np.random.default_rng(5)
    t = parse_topology("torus:5x5")
    src = rng.permutation(25)
    dst = np.roll(src, 3)
    share = rng.uniform(0.2, 1.0, 25)
    a = Traffic(src, dst, share)
    order = rng.permutation(25)
    b = Traffic(src[order], dst[order], share[order] * 0.5)
    sched = Schedule("x", "x", 25, (Step(a, Reduction.none(), "a"), Step(b, Reduction.none(), "b")))
    from flowemu.engine import profiles as engine
    calls = []
    orig = engine.solve_step
    engine.solve_step = lambda *a_, **k_: calls.append(1) or orig(*a_, **k_)
    try:
        prof = profile(sched, t, Network())
    finally:
        engine.solve_step = orig
    assert len(calls) == 1
    np.testing.assert_allclose(prof.times(SIZES), direct_times(sched, t, Network(), SIZES),
                               rtol=1e-12)


def _random_schedule(p, nsteps, seed):
    rng = np.random.default_rng(seed)
    steps = []
    for k in range(nsteps):
        src = rng.permutation(p)
        dst = rng.permutation(p)
        keep = src != dst
        steps.append(Step(Traffic(src[keep], dst[keep], rng.uniform(0.01, 1, keep.sum())),
                          Reduction.none(), f"s{k}"))
    return Schedule("random", "x", p, tuple(steps))


@pytest.mark.parametrize("alg", ["swing", "bucket", "random"])
def test_threads_do_not_change_results(alg):
    """Distinct steps solved in threads give bit-identical profiles."""
    t = parse_topology("torus:8x8")
    if alg == "random":
        sched = _random_schedule(64, 6, 3)
    else:
        sched = build(alg, 64, topo=t, **({"variant": "bandwidth"} if alg == "swing" else {}))
    profs = [profile(sched, t, Network(), threads=k) for k in (1, 2, 4)]
    for other in profs[1:]:
        for a, b in zip(profs[0].steps, other.steps, strict=True):
            np.testing.assert_array_equal(a.latency, b.latency)
            np.testing.assert_array_equal(a.spb, b.spb)
        np.testing.assert_array_equal(profs[0].times(SIZES), other.times(SIZES))
    np.testing.assert_allclose(profs[-1].times(SIZES), direct_times(sched, t, Network(), SIZES),
                               rtol=1e-12)


def test_threads_solve_each_pattern_once(monkeypatch):
    t = parse_topology("torus:8x8")
    sched = build("swing", 64, topo=t, variant="bandwidth")
    calls = _count_solves(monkeypatch)
    profile(sched, t, Network(), threads=1)
    n_serial = len(calls)
    calls.clear()
    profile(sched, t, Network(), threads=3)
    assert len(calls) == n_serial > 1


@pytest.mark.parametrize("bad", [0, -2, 1.5, True, "2"])
def test_bad_threads(bad):
    t = parse_topology("torus:4x4")
    with pytest.raises(flowemu.ConfigError, match=r"threads: .* expected an integer >= 1"):
        profile(build("ring", 16), t, Network(), threads=bad)


def test_threads_from_environment(monkeypatch):
    from flowemu.engine.profiles import THREADS_ENV, default_threads
    monkeypatch.setenv(THREADS_ENV, "3")
    assert default_threads() == 3
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv(THREADS_ENV, bad)
        with pytest.raises(flowemu.ConfigError, match=THREADS_ENV):
            default_threads()
    monkeypatch.delenv(THREADS_ENV)
    assert default_threads() >= 1


def test_error_in_a_threaded_step_is_raised():
    """A step that cannot be routed raises its ConfigError from the pool."""
    t = parse_topology("torus:4x4")
    good = Traffic(np.arange(16), (np.arange(16) + 1) % 16, np.ones(16))
    bad = Traffic(np.array([0]), np.array([20]), np.ones(1))
    sched = Schedule("x", "x", 16, (Step(good, Reduction.none(), "a"),
                                    Step(bad, Reduction.none(), "b")))
    with pytest.raises(flowemu.ConfigError, match="rank 20"):
        profile(sched, t, Network(), threads=2)
