"""Slow ranks (flowemu.whatif.stragglers): the spec grammar, closed forms for the
network cap (fluid time × 1/f) and the compute slowdown (reduction time ×
1/f), profile exactness against direct solves, and bad values."""

from __future__ import annotations

import numpy as np
import pytest

from flowemu.algorithms import get_algorithm
from flowemu.api import profiling
from flowemu.core.errors import ConfigError
from flowemu.core.network import Network
from flowemu.engine import profiles as engine
from flowemu.topology import parse_topology
from flowemu.whatif.stragglers import Slow, parse_slow

RTOL = 1e-9
FLUID = Network(alpha=0, link_latency=0, hop_latency=0)


def build(name, p, topo, **opts):
    spec = get_algorithm(name)
    if spec.auto_param:
        opts.setdefault(spec.auto_param, "bandwidth")
    return spec.build(p, topo, False, **spec.parse_options(opts))


# --------------------------------------------------------------------------- grammar


def test_ranks_and_ranges_slow_both_kinds_by_default():
    slow = parse_slow("3,7-9=0.5", 12)
    expected = np.ones(12)
    expected[[3, 7, 8, 9]] = 0.5
    assert np.array_equal(slow.compute, expected) and np.array_equal(slow.network, expected)
    assert slow.network_ranks.tolist() == [3, 7, 8, 9]


def test_kinds_items_and_overrides():
    slow = parse_slow("0-3=0.5:compute; 2=0.25; 5=0.8:network", 8)
    assert slow.compute.tolist() == [0.5, 0.5, 0.25, 0.5, 1, 1, 1, 1]
    assert slow.network.tolist() == [1, 1, 0.25, 1, 1, 0.8, 1, 1]
    only = parse_slow("1=0.5:compute", 4)
    assert only.compute_speed is not None and len(only.network_ranks) == 0
    assert parse_slow("1=1", 4).compute_speed is None


def test_random_ranks_are_seeded_and_distinct():
    a = parse_slow("random:5:42=0.5", 64)
    b = parse_slow("random:5:42=0.5", 64)
    c = parse_slow("random:5:43=0.5", 64)
    assert np.array_equal(a.compute, b.compute)
    assert int((a.compute < 1).sum()) == 5
    assert not np.array_equal(a.compute, c.compute)
    assert np.all(parse_slow("random:0:1=0.5", 8).compute == 1.0)


@pytest.mark.parametrize("spec, match", [
    ("3=0", r"factor '0'.*from 1e-6 to 1"),
    ("3=1.5", r"factor '1.5'"),
    ("3=nan", "factor 'nan'"),
    ("3=x", "factor 'x'"),
    ("8=0.5", r"rank 8 .*out of range.*0\.\.7"),
    ("2-9=0.5", r"rank 9"),
    ("5-2=0.5", "empty"),
    ("a=0.5", "ranks 'a'"),
    ("-1=0.5", "ranks '-1'"),
    ("3=0.5:disk", "kind 'disk'"),
    ("3", "item '3'"),
    ("3=0.5=1", "item"),
    ("random:9:1=0.5", "9 random ranks"),
    ("random:2=0.5", "random:K:SEED"),
    ("", "empty"),
    (" ; ", "empty"),
])
def test_bad_slow_specs(spec, match):
    with pytest.raises(ConfigError, match=match) as err:
        parse_slow(spec, 8)
    assert str(err.value).startswith("slow:") and "\n" not in str(err.value)


def test_slow_for_another_run_is_refused():
    slow = parse_slow("1=0.5", 4)
    assert parse_slow(slow, 4) is slow
    with pytest.raises(ConfigError, match="slow: .*4 ranks"):
        parse_slow(slow, 8)
    topo = parse_topology("torus:8")
    with pytest.raises(ConfigError, match="slow: .*4 ranks"):
        profiling.profile(build("ring", 8, topo), topo, slow=slow)
    with pytest.raises(ConfigError, match="slow"):
        Slow(2, np.array([1.0, 0.0]), np.ones(2))


# --------------------------------------------------------------------------- closed forms


@pytest.mark.parametrize("f", [0.5, 0.25, 0.9])
def test_network_factor_scales_the_fluid_time(f):
    """leafspine:4x1x1 (one host a leaf, one uplink a host): the ring's flows
    of a rank share its only uplink. Capping rank 2's injection and ejection
    at f × its port scales every step's fluid time by exactly 1/f."""
    topo = parse_topology("leafspine:4x1x1")
    sched = build("ring", 4, topo)
    n = np.array([1e4, 1e8])
    healthy = profiling.profile(sched, topo, FLUID)
    slow = profiling.profile(sched, topo, FLUID, slow=f"2={f}:network")
    np.testing.assert_allclose(slow.step_times(n), healthy.step_times(n) / f, rtol=RTOL)
    # the healthy ring moves 2(p-1)/p·n bytes out of each host port at full speed
    np.testing.assert_allclose(healthy.times(n), 2 * 3 / 4 * n / FLUID.bandwidth, rtol=RTOL)


def test_network_cap_is_a_port_cap_not_a_link_scaling():
    """On a ring torus a slow rank's cap counts both of its out-links: a
    one-port ring (one flow a rank on one link) feels a factor 1/2 not at
    all (the cap is 0.5 × 2 links = one link's worth)."""
    topo = parse_topology("torus:8")
    sched = build("ring", 8, topo, ports=1)
    n = np.array([1e6])
    healthy = profiling.profile(sched, topo, FLUID).times(n)
    np.testing.assert_allclose(profiling.profile(sched, topo, FLUID, slow="3=0.5").times(n),
                               healthy, rtol=RTOL)
    np.testing.assert_allclose(profiling.profile(sched, topo, FLUID, slow="3=0.25").times(n),
                               2 * healthy, rtol=RTOL)


@pytest.mark.parametrize("f", [0.5, 0.2])
def test_compute_factor_scales_the_reduction(f):
    """With γ, δ set, a ring's reduce-scatter makes every rank reduce
    (p−1)/p·n bytes with fan-in 2, one even share a step; a compute factor f
    on one rank makes each step's slowest reduction 1/f longer, so the run
    is (p−1)/p·n·(3δ + γ)·(1/f − 1) longer and the network part unchanged."""
    p, gamma, delta = 8, 3e-10, 1e-10
    topo = parse_topology("torus:8")
    net = Network.from_si(gamma=gamma, delta=delta)
    sched = build("ring", p, topo)
    n = np.array([1e3, 1e7])
    healthy = profiling.profile(sched, topo, net).times(n)
    slow = profiling.profile(sched, topo, net, slow=f"5={f}:compute")
    extra = (p - 1) / p * n * (3 * delta + gamma) * (1 / f - 1)
    np.testing.assert_allclose(slow.times(n), healthy + extra, rtol=RTOL)


def test_compute_only_keeps_the_default_network_path():
    topo = parse_topology("torus:8")
    ctx = engine.make_context(topo, Network(), p=8, slow=parse_slow("1=0.5:compute", 8))
    assert ctx.load is None and ctx.speed is not None


@pytest.mark.parametrize("spec, algorithm, slow", [
    ("torus:4x4", "swing", "3,7-9=0.5"),
    ("torus:4x4", "bucket", "random:3:1=0.3:network; 0=0.5:compute"),
    ("torus:4x4", "recdoub", "0=0.7"),
    ("fattree:k=4", "ring", "2=0.4"),
])
def test_profile_is_exact_with_slow_ranks(spec, algorithm, slow):
    topo = parse_topology(spec)
    net = Network.from_si(gamma=1e-10, delta=2e-11)
    sched = build(algorithm, 16, topo)
    sizes = np.array([1e3, 7e5, 2e8])
    prof = profiling.profile(sched, topo, net, slow=slow, threads=1)
    direct = engine.direct_times(sched, topo, net, sizes, slow=parse_slow(slow, 16))
    np.testing.assert_allclose(prof.times(sizes), direct, rtol=RTOL)
    assert np.all(prof.times(sizes) > profiling.profile(sched, topo, net).times(sizes))


def test_slow_ranks_follow_the_mapping():
    """The cap sits on the slow rank's endpoint: with ranks reversed, slowing
    rank 0 equals slowing endpoint 3 under the identity mapping, i.e. rank 3."""
    topo = parse_topology("leafspine:4x1x1")
    sched = build("ring", 4, topo)
    n = np.array([1e6])
    mapped = profiling.profile(sched, topo, FLUID, mapping=[3, 2, 1, 0], slow="0=0.5")
    plain = profiling.profile(sched, topo, FLUID, slow="3=0.5")
    np.testing.assert_allclose(mapped.times(n), plain.times(n), rtol=RTOL)


@pytest.mark.parametrize("factor", ["1e-300", "1e-320", "9.9e-7"])
def test_a_factor_below_a_millionth_is_refused(factor):
    """3=1e-300 made a run's time inf (stored in a sweep and ranked by
    compare), its dataflow run a ValueError from the kernels' input check,
    and 1e-320 a SolverError; a millionth is the floor."""
    with pytest.raises(ConfigError, match=rf"^slow: factor '{factor}' in '3={factor}' is not "
                                          r"allowed; expected a speed fraction from 1e-6 to 1"):
        parse_slow(f"3={factor}", 8)
    assert parse_slow("3=1e-6", 8).compute[3] == 1e-6
