"""Ring and recursive doubling schedules: proven allreduces, block-free builds
identical to block builds, closed-form byte/step counts (Swing paper §2.3.1–
2.3.3, GenModel Tables 1–2 RHD) and option errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flowemu.algorithms import get_algorithm, recdoub, ring
from flowemu.algorithms.base import COPY, REDUCE, Schedule, Step, Traffic
from flowemu.algorithms.verify import equivalent_traffic, verify_allreduce
from flowemu.core.errors import ConfigError, ScheduleError

ALGOS = [
    ("ring", {"ports": 1}),
    ("ring", {"ports": 2}),
    ("recdoub", {"variant": "latency"}),
    ("recdoub", {"variant": "bandwidth"}),
]
ALGO_IDS = [f"{n}-{next(iter(o.values()))}" for n, o in ALGOS]
SMALL_P = list(range(2, 65))
VERIFY_P = SMALL_P + [100, 128]


def build(name, opts, p, blocks):
    return get_algorithm(name).build(p, None, blocks, **opts)


def p_eff(p):
    return 1 << (p.bit_length() - 1)


def is_pow2(p):
    return p & (p - 1) == 0


# ------------------------------------------------------------------ correctness

@pytest.mark.parametrize("p", VERIFY_P)
@pytest.mark.parametrize("name,opts", ALGOS, ids=ALGO_IDS)
def test_schedule_is_allreduce(name, opts, p):
    sched = build(name, opts, p, True)
    report = verify_allreduce(sched)
    assert report.p == p and report.num_steps == sched.num_steps


@pytest.mark.parametrize("p", SMALL_P)
@pytest.mark.parametrize("name,opts", ALGOS, ids=ALGO_IDS)
def test_blockless_equals_block_build(name, opts, p):
    with_blocks = build(name, opts, p, True)
    without = build(name, opts, p, False)
    assert without.num_blocks is None and without.block_share is None
    assert all(not s.traffic.has_blocks for s in without.steps)
    assert without.info == with_blocks.info
    assert without.variant == with_blocks.variant
    equivalent_traffic(with_blocks, without)


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(range(len(ALGOS))), st.integers(2, 40), st.randoms(use_true_random=False))
def test_flow_order_is_irrelevant(which, p, rnd):
    """Shuffling flows within each step keeps the schedule an allreduce and
    equivalent to the original."""
    name, opts = ALGOS[which]
    sched = build(name, opts, p, True)
    steps = []
    for step in sched.steps:
        tr = step.traffic
        order = np.array(rnd.sample(range(tr.num_flows), tr.num_flows), dtype=np.int64)
        counts = np.diff(tr.block_ptr)[order]
        ptr = np.concatenate([[0], np.cumsum(counts)])
        idx = np.concatenate([tr.block_idx[tr.block_ptr[f]:tr.block_ptr[f + 1]] for f in order])
        steps.append(Step(Traffic(tr.src[order], tr.dst[order], tr.share[order], tr.tag[order],
                                  ptr, idx, tr.op[order]), step.reduction, step.label))
    shuffled = Schedule(sched.algorithm, sched.variant, p, tuple(steps), sched.num_blocks,
                        sched.block_share, sched.info)
    verify_allreduce(shuffled)
    equivalent_traffic(sched, shuffled)


# ------------------------------------------------------------------ ring closed forms

@pytest.mark.parametrize("ports", [1, 2])
@pytest.mark.parametrize("p", [2, 3, 5, 8, 13, 64, 100])
def test_ring_counts(p, ports):
    sched = ring.build(p, None, True, ports=ports)
    assert sched.num_steps == 2 * (p - 1)
    assert [s.label for s in sched.steps] == \
        [f"rs{s}" for s in range(p - 1)] + [f"ag{s}" for s in range(p - 1)]
    assert sched.num_blocks == ports * p
    report = verify_allreduce(sched)
    np.testing.assert_allclose(report.sent, 2 * (p - 1) / p, rtol=1e-12)
    np.testing.assert_allclose(report.received, 2 * (p - 1) / p, rtol=1e-12)
    # reduce-scatter reduces (p-1)/p at fan-in 2: GenModel γ (p-1)/p, δ 3(p-1)/p
    np.testing.assert_allclose(report.reduced, (p - 1) / p, rtol=1e-12)
    assert report.gamma_path == pytest.approx((p - 1) / p, rel=1e-12)
    assert report.delta_path == pytest.approx(3 * (p - 1) / p, rel=1e-12)
    for step in sched.steps:
        assert step.traffic.num_flows == ports * p
        np.testing.assert_array_equal(np.bincount(step.traffic.tag), [p] * ports)
        assert np.all(step.traffic.op == (REDUCE if step.label.startswith("rs") else COPY))


def test_ring_block_indexing():
    """§2.3.1: reduce-scatter step s sends block (r − s) mod p to r + 1; rank r
    ends owning block r + 1; the mirrored ring runs r → r − 1."""
    p = 5
    sched = ring.build(p, None, True, ports=2)
    r = np.arange(p)
    for s in range(p - 1):
        tr = sched.steps[s].traffic
        np.testing.assert_array_equal(tr.src, np.tile(r, 2))
        np.testing.assert_array_equal(tr.dst, np.concatenate([(r + 1) % p, (r - 1) % p]))
        np.testing.assert_array_equal(tr.block_idx, np.concatenate([(r - s) % p,
                                                                    p + (r + s) % p]))
    first_ag = sched.steps[p - 1].traffic
    np.testing.assert_array_equal(first_ag.block_idx[:p], (r + 1) % p)
    np.testing.assert_array_equal(first_ag.block_idx[p:], p + (r - 1) % p)


def test_ring_blockless_shares_traffic_objects():
    """Without blocks every step reuses one Traffic (memory O(p) at 16k ranks)."""
    sched = ring.build(16384, None, False, ports=2)
    assert sched.num_steps == 2 * 16383
    assert len({id(s.traffic) for s in sched.steps}) == 1
    assert sched.steps[0].traffic.num_flows == 2 * 16384
    assert sched.steps[0].traffic.share[0] == 1 / (2 * 16384)


# ------------------------------------------------------------------ recdoub closed forms

@pytest.mark.parametrize("p", [2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 31, 32, 33, 64, 100, 128])
def test_rabenseifner_counts(p):
    pe, extra = p_eff(p), p - p_eff(p)
    levels = pe.bit_length() - 1
    sched = recdoub.build(p, None, True, variant="bandwidth")
    assert sched.info["p_eff"] == pe
    assert sched.num_blocks == pe
    chi = 0 if is_pow2(p) else 1
    assert sched.num_steps == 2 * levels + 2 * chi
    labels = [f"rs{s}" for s in range(levels)] + [f"ag{s}" for s in range(levels)]
    if chi:
        labels = ["pre"] + labels + ["post"]
    assert [s.label for s in sched.steps] == labels
    report = verify_allreduce(sched)
    r = np.arange(p)
    core = 2 * (pe - 1) / pe
    expected_sent = np.where(r < pe, core, 0.0) + np.where(r < extra, 1.0, 0.0) \
        + np.where(r >= pe, 1.0, 0.0)
    np.testing.assert_allclose(report.sent, expected_sent, rtol=1e-12)
    np.testing.assert_allclose(report.received, expected_sent, rtol=1e-12)
    # GenModel Table 1/2 RHD: β 2(N−1)/N + χ·2, γ (N−1)/N + χ, δ 3(N−1)/N + 3χ
    assert report.sent_path == pytest.approx(core + 2 * chi, rel=1e-12)
    assert report.gamma_path == pytest.approx((pe - 1) / pe + chi, rel=1e-12)
    assert report.delta_path == pytest.approx(3 * (pe - 1) / pe + 3 * chi, rel=1e-12)
    # reduce-scatter halves the data, distance doubles (§2.3.3)
    rs = [s for s in sched.steps if s.label.startswith("rs")]
    for s, step in enumerate(rs):
        tr = step.traffic
        np.testing.assert_array_equal(tr.dst, tr.src ^ (1 << s))
        np.testing.assert_array_equal(tr.share, 2.0 ** -(s + 1))


@pytest.mark.parametrize("p", [4, 8, 16, 64, 1024])
def test_rhd_genmodel_reduction_power_of_two(p):
    """GenModel Table 2 RHD on the block-free schedule the engine times:
    reduction γ coefficient (p−1)/p and δ coefficient 3(p−1)/p."""
    sched = recdoub.build(p, None, False, variant="bandwidth")
    gamma = sum(s.reduction.seconds_per_byte(1.0, 0.0, p) for s in sched.steps)
    delta = sum(s.reduction.seconds_per_byte(0.0, 1.0, p) for s in sched.steps)
    assert gamma == pytest.approx((p - 1) / p, rel=1e-12)
    assert delta == pytest.approx(3 * (p - 1) / p, rel=1e-12)


@pytest.mark.parametrize("p", [3, 6, 12, 100, 1000])
def test_rhd_genmodel_chi_term(p):
    """χ(N) term of GenModel Table 2: non-power-of-two adds Sγ + 3Sδ of
    reduction (the pre step) and two whole-vector transfers."""
    pe = p_eff(p)
    sched = recdoub.build(p, None, False, variant="bandwidth")
    gamma = sum(s.reduction.seconds_per_byte(1.0, 0.0, p) for s in sched.steps)
    delta = sum(s.reduction.seconds_per_byte(0.0, 1.0, p) for s in sched.steps)
    assert gamma == pytest.approx((pe - 1) / pe + 1, rel=1e-12)
    assert delta == pytest.approx(3 * (pe - 1) / pe + 3, rel=1e-12)
    pre, post = sched.steps[0], sched.steps[-1]
    np.testing.assert_array_equal(pre.traffic.src, np.arange(pe, p))
    np.testing.assert_array_equal(pre.traffic.dst, np.arange(p - pe))
    np.testing.assert_array_equal(post.traffic.src, np.arange(p - pe))
    np.testing.assert_array_equal(post.traffic.dst, np.arange(pe, p))
    assert np.all(pre.traffic.share == 1.0) and np.all(post.traffic.share == 1.0)
    assert len(post.reduction.node) == 0


def test_rabenseifner_block_indexing():
    """Rank r holds the blocks matching its low s bits and sends the half
    matching its partner's bit s; it ends with block r."""
    sched = recdoub.build(8, None, True, variant="bandwidth")
    tr = sched.steps[0].traffic
    np.testing.assert_array_equal(tr.block_idx[:4], [1, 3, 5, 7])    # rank 0 → 1
    np.testing.assert_array_equal(tr.block_idx[4:8], [0, 2, 4, 6])   # rank 1 → 0
    tr = sched.steps[2].traffic                                       # rs2, rank 0 → 4
    np.testing.assert_array_equal(tr.block_idx[tr.block_ptr[0]:tr.block_ptr[1]], [4])
    first_ag = sched.steps[3].traffic                                 # rank r sends block r
    np.testing.assert_array_equal(first_ag.block_idx, np.arange(8))
    np.testing.assert_array_equal(first_ag.dst, np.arange(8) ^ 4)


@pytest.mark.parametrize("p", [2, 3, 4, 7, 8, 9, 16, 17, 64, 100, 128])
def test_latency_counts(p):
    pe, extra = p_eff(p), p - p_eff(p)
    levels = pe.bit_length() - 1
    chi = 0 if is_pow2(p) else 1
    sched = recdoub.build(p, None, True, variant="latency")
    assert sched.num_blocks == 1
    assert sched.num_steps == levels + 2 * chi
    labels = [f"x{s}" for s in range(levels)]
    assert [s.label for s in sched.steps] == (["pre"] + labels + ["post"] if chi else labels)
    report = verify_allreduce(sched)
    r = np.arange(p)
    expected = np.where(r < pe, float(levels), 1.0) + np.where(r < extra, 1.0, 0.0)
    np.testing.assert_allclose(report.sent, expected, rtol=1e-12)
    assert report.gamma_path == pytest.approx(levels + chi, rel=1e-12)
    assert report.delta_path == pytest.approx(3 * (levels + chi), rel=1e-12)
    for s, step in enumerate(sched.steps[chi:chi + levels]):
        np.testing.assert_array_equal(step.traffic.dst, step.traffic.src ^ (1 << s))
        assert np.all(step.traffic.share == 1.0)


@pytest.mark.parametrize("p", [16384, 16383, 10000])
@pytest.mark.parametrize("variant", ["latency", "bandwidth"])
def test_recdoub_large_p_builds(p, variant):
    sched = recdoub.build(p, None, False, variant=variant)
    pe = p_eff(p)
    # no topology: a 1-D logical shape, so layout=auto is the linear XOR pattern
    assert sched.info == {"p_eff": pe, "extra_ranks": p - pe, "layout": "linear",
                          "collectives": 1}
    levels = pe.bit_length() - 1
    chi = 0 if p == pe else 1
    assert sched.num_steps == (levels if variant == "latency" else 2 * levels) + 2 * chi


# ------------------------------------------------------------------ registry and options

def test_registry():
    assert get_algorithm("ring").build is ring.build
    assert get_algorithm("recdoub").build is recdoub.build
    assert get_algorithm("ring").auto_choices() == ()
    assert get_algorithm("recdoub").auto_param == "variant"
    assert get_algorithm("recdoub").auto_choices() == ("latency", "bandwidth")
    assert get_algorithm("recdoub").parse_options({}) == {"variant": "auto", "layout": "auto",
                                                          "mirrored": False}
    # ring ports: "max" (the most the logical shape allows) unless given
    assert get_algorithm("ring").parse_options({}) == {"ports": "max"}
    assert get_algorithm("ring").parse_options({"ports": "2"}) == {"ports": 2}


def test_recdoub_auto_is_for_the_engine():
    with pytest.raises(ScheduleError, match="engine"):
        recdoub.build(8, None, False, variant="auto")
    with pytest.raises(ScheduleError, match="engine"):
        recdoub.build(8, None, False)          # the default is auto


@pytest.mark.parametrize("name,opts,field", [
    ("ring", {"ports": 3}, "ports"),
    ("ring", {"ports": "3"}, "ports"),
    ("ring", {"ports": "two"}, "ports"),
    ("recdoub", {"variant": "foo"}, "variant"),
    ("ring", {"color": "red"}, "color"),
])
def test_bad_options(name, opts, field):
    spec = get_algorithm(name)
    with pytest.raises(ConfigError, match=field):
        spec.parse_options(opts)
    with pytest.raises(ConfigError, match=field):
        spec.build(8, None, False, **opts)


def test_bad_variant_lists_allowed():
    with pytest.raises(ConfigError) as err:
        recdoub.build(8, None, False, variant="foo")
    assert "latency" in str(err.value) and "bandwidth" in str(err.value)


@pytest.mark.parametrize("p", [1, 0, -3, 2.5, "8", True])
@pytest.mark.parametrize("name,opts", ALGOS, ids=ALGO_IDS)
def test_bad_rank_count(name, opts, p):
    with pytest.raises(ConfigError, match=r"p="):
        build(name, opts, p, False)


def test_numpy_integer_rank_count():
    sched = ring.build(np.int64(6), None, False)
    assert sched.p == 6 and type(sched.p) is int
