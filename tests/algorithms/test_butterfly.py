"""Kolmakov's generalized butterfly (``butterfly``): proven an allreduce,
step counts and byte counts against the paper's closed forms, α-β time on
one switch, ``r=auto`` per size, and bad options refused."""

import dataclasses
import math

import numpy as np
import pytest

import flowemu
from flowemu.algorithms import get_algorithm
from flowemu.algorithms.butterfly import build, form, halvings
from flowemu.algorithms.verify import verify_allreduce
from flowemu.api.units import Bps
from flowemu.api.units import s as seconds
from flowemu.core.errors import ConfigError, ScheduleError
from tests.helpers.cli import one_error_line, run


def L_of(p):
    return math.ceil(math.log2(p))


def forms_of(p):
    return range(L_of(p) + 1)


def is_pow2(p):
    return p & (p - 1) == 0


# ------------------------------------------------------------------ oracle
def paper_replay(p, r):
    """The paper's algorithm replayed literally, independently of the
    builder: one reduction per result placement ``o`` (§8: the reduction of
    placement 0 shifted by ``o``, eqs. 26–31), each a list of vectors
    ``(placement, contributors)`` with contributors as a bit set of rank
    offsets (a vector at placement k on rank j holds part j−k summed over
    ranks j+d, d in the set). Vectors equal in placement and contributors
    are one vector (shared between reductions, eq. 32). Returns per step
    the placements sent and the number of distinct vectors combined, after
    asserting that no contribution is ever combined twice and that every
    result holds all p contributions; then the distribution (§7: reduction
    steps reversed, copying) fills every placement exactly once."""
    full = (1 << p) - 1

    def shift(bits, s):        # contributors seen from the receiving rank j − s
        s %= p
        return ((bits << s) | (bits >> (p - s))) & full

    L = L_of(p)
    R = p if r == L else 2 ** r
    vecs = [[((o + k) % p, 1) for k in range(p)] for o in range(R)]   # eq. 7
    steps = []
    n = p
    while n >= 2:
        half, keep = n // 2, (n + 1) // 2
        sent, made = set(), set()
        for o in range(R):
            v = vecs[o]
            for k in range(keep, n):                   # eq. 20, operator eq. 19
                sent.add(v[k])
            new = list(v[:keep])
            for k in range(keep, n):
                land = k - half                        # eqs. 22–23
                pl, bits = v[k]
                pl2, mine = new[land]
                assert (pl - half) % p == pl2
                moved = shift(bits, half)
                assert mine & moved == 0, "a contribution combined twice"
                new[land] = (pl2, mine | moved)
                made.add(new[land])
            vecs[o] = new
        placements = sorted({pl for pl, _ in sent})
        assert len(placements) == len(sent)   # one shared vector per placement is sent
        steps.append(("reduce", -half, placements, len(made)))
        n = keep
    for o in range(R):
        assert vecs[o] == [(o, full)]                  # eq. 24 / 31 / 43
    have = set(range(R))
    for n in reversed(halvings(p)[: L - r]):
        half, keep = n // 2, (n + 1) // 2
        targets = [k for k in range(keep, n) if k not in have]
        assert all(k - half in have for k in targets)
        have |= set(targets)
        steps.append(("copy", half, [k - half for k in targets], 0))
    assert have == set(range(p))
    return steps


def builder_steps(p, r):
    f = form(p, r)
    return [("reduce" if ph.reduce else "copy", ph.shift, ph.placements.tolist(), ph.combined)
            for ph in f.phases]


# ------------------------------------------------------------------ proofs
@pytest.mark.parametrize("p", list(range(2, 65)) + [100, 127])
def test_every_form_is_the_papers_algorithm(p):
    for r in forms_of(p):
        assert builder_steps(p, r) == paper_replay(p, r), (p, r)


@pytest.mark.parametrize("p", list(range(2, 65)) + [100, 127])
def test_block_level_verifier(p):
    """Every form is proven by the block-level verifier: one buffer per block
    where q* and the shared vectors coincide (r = 0, or p a power of two),
    two where a rank keeps both (§8–9)."""
    for r in forms_of(p):
        f = form(p, r)
        assert f.two_buffers == (r > 0 and not is_pow2(p))
        sched = build(p, None, True, r=r)
        assert sched.num_buffers == (2 if f.two_buffers else 1)
        rep = verify_allreduce(sched)
        assert rep.num_steps == 2 * L_of(p) - r
        assert rep.num_buffers == sched.num_buffers


def strip_buffers(sched, keep=None):
    """``sched`` with every block entry in buffer 0 (or its buffers changed by
    ``keep(bufs) -> bufs``)."""
    steps = []
    for st in sched.steps:
        tr = st.traffic
        if tr.block_buffers is not None:
            bufs = np.zeros_like(tr.block_buffers) if keep is None else keep(tr.block_buffers)
            tr = dataclasses.replace(tr, block_buffers=bufs)
        steps.append(dataclasses.replace(st, traffic=tr))
    return dataclasses.replace(sched, steps=tuple(steps))


@pytest.mark.parametrize("p,r", [(3, 1), (6, 1), (7, 2), (12, 2), (100, 3), (100, 7)])
def test_two_buffer_forms_need_the_second_buffer(p, r):
    """The two buffers are what makes these forms correct: one buffer per
    block loses a partial sum, and a fork that does not start from q* (base
    buffer 1 instead of 0) double-counts or loses a contribution."""
    sched = build(p, None, True, r=r)
    with pytest.raises(ScheduleError):
        verify_allreduce(strip_buffers(sched))

    def no_fork(bufs):
        out = bufs.copy()
        out[(out[:, 1] == 1) & (out[:, 2] == 0), 2] = 1
        return out
    with pytest.raises(ScheduleError):
        verify_allreduce(strip_buffers(sched, no_fork))


@pytest.mark.slow
def test_large_p_every_form_verified():
    """The prime 257, every form (two buffers for r >= 1; ~1 min). The prime
    127 is proven in the default run (test_block_level_verifier)."""
    for r in forms_of(257):
        rep = verify_allreduce(build(257, None, True, r=r))
        assert rep.num_steps == 2 * L_of(257) - r


@pytest.mark.parametrize("p", [1000, 997])
def test_large_p_against_the_replay(p):
    for r in (0, 1):
        assert builder_steps(p, r) == paper_replay(p, r), (p, r)


@pytest.mark.slow
@pytest.mark.parametrize("p", [1000, 997])
def test_large_p_against_the_replay_every_form(p):
    L = L_of(p)
    for r in (L // 2, L - 1, L):
        assert builder_steps(p, r) == paper_replay(p, r), (p, r)


# ------------------------------------------------------------------ closed forms
def eq36_parts(p, r):
    """Parts u sent per rank: eq. (25) for r = 0, (36) for 0 < r < L, (44)
    for r = L."""
    L = L_of(p)
    if r == L:
        return p * L
    return 2 * (p - 1) + (2 ** r - 1) * (L - 1)


def wraps(p, r):
    """Eq. (36) counts (2^r − 1) extra parts a step; when ⌊N_i/2⌋ + 2^r − 1 > p
    some of them are the same placement modulo p and fewer are sent."""
    n = p
    while n >= 2:
        if n // 2 + 2 ** r - 1 > p:
            return True
        n = (n + 1) // 2
    return False


@pytest.mark.parametrize("p", list(range(2, 65)) + [100, 127, 1000, 997, 16384, 16383])
def test_step_and_byte_counts_match_the_paper(p):
    L = L_of(p)
    assert len(halvings(p)) == L
    for r in forms_of(p):
        f = form(p, r)
        assert len(f.phases) == (L if r == L else 2 * L - r)
        if r == L or not wraps(p, r):
            assert f.parts_sent == eq36_parts(p, r)
        else:
            assert f.parts_sent < eq36_parts(p, r)
        # γ: eq. (25) exact; eqs. (36)/(44) are the paper's worst case
        if r == 0:
            assert f.parts_combined == p - 1
        elif r == L:
            # eq. (44): P on the first and last step, up to 2P between; for
            # P = 2 the one step is both (P, where the formula gives 0)
            assert f.parts_combined <= p * max(2 * L - 2, 1)
        else:
            assert f.parts_combined <= (p - 1) + (2 ** r - 1) * (2 * L - 2)


def test_latency_optimal_worst_case_is_exact():
    """Eq. (44)'s γ term is reached when N_i is even in ⌈log P⌉ − 2 steps
    (P = 7: N = 7, 4, 2)."""
    assert form(7, 3).parts_combined == 7 * (2 * 3 - 2)


def test_power_of_two_is_recursive_halving_and_doubling():
    """§7: for P = 2^k the bandwidth-optimal form sends n/2, n/4, … (recursive
    halving) and the latency-optimal form the whole vector every step
    (recursive doubling)."""
    for p in (2, 8, 64):
        L = L_of(p)
        bo, lo = form(p, 0), form(p, L)
        assert [len(ph.placements) for ph in bo.phases[:L]] == [p >> (i + 1) for i in range(L)]
        assert [len(ph.placements) for ph in lo.phases] == [p] * L
        assert [-ph.shift for ph in lo.phases] == [p >> (i + 1) for i in range(L)]


# ------------------------------------------------------------------ time on one switch
def alpha_beta_time(p, r, size, alpha, bw, gamma=0.0):
    """Eq. (25)/(36)/(44): steps·α + parts·u·β (+ combined·u·γ)."""
    L = L_of(p)
    u = size / p
    steps = L if r == L else 2 * L - r
    t = steps * alpha + eq36_parts(p, r) * u / bw
    if r == 0:
        t += (p - 1) * u * gamma
    return t


@pytest.mark.parametrize("p", [2, 3, 7, 8, 12, 16, 31])
def test_time_on_one_switch_is_the_alpha_beta_cost(p):
    alpha, bw = 3e-5, 1e8     # the paper's Table 2: α = 3e-5 s, β = 1e-8 s/B
    sizes = [1024, 2 ** 20]
    for r in forms_of(p):
        if r not in (0, L_of(p)) and wraps(p, r):
            continue
        df = flowemu.simulate(f"tree:{p}", f"butterfly:r={r}", sizes, alpha=seconds(alpha),
                              bandwidth=Bps(bw), link_latency=0, hop_latency=0)
        want = [alpha_beta_time(p, r, s, alpha, bw) for s in sizes]
        np.testing.assert_allclose(df["time_s"].to_numpy(), want, rtol=1e-9)
        assert (df["steps"] == (L_of(p) if r == L_of(p) else 2 * L_of(p) - r)).all()


@pytest.mark.parametrize("spec,p", [("fattree:k=4", 16), ("fattree:k=4", 11),
                                     ("fattree:k=8,levels=2", 32), ("fattree:k=8,levels=2", 27)])
def test_time_on_a_fat_tree_is_the_alpha_beta_cost(spec, p):
    """A non-blocking fat tree with an even ECMP split carries every shift
    permutation without congestion."""
    alpha, bw, size = 3e-5, 1e8, 2 ** 20
    for r in (0, 1, L_of(p)):
        df = flowemu.simulate(spec, f"butterfly:r={r}", [size], ranks=p, alpha=seconds(alpha),
                              bandwidth=Bps(bw), link_latency=0, hop_latency=0)
        assert df["time_s"].iloc[0] == pytest.approx(alpha_beta_time(p, r, size, alpha, bw),
                                                     rel=1e-9)


@pytest.mark.parametrize("p", [3, 4, 5, 7, 8, 12, 13])
def test_time_on_a_ring_adds_the_shift_congestion(p):
    """On a 1-D torus (``torus:p``) a step shifting by s sends every flow
    d = min(s, p − s) links the short way, so each link carries d flows (s =
    p/2: half of every flow each way, p/4 flows a link): the step takes
    α + load·parts·u·β, with the parts of each step from the paper's replay."""
    alpha, bw, size = 3e-5, 1e8, 2 ** 20
    u = size / p
    for r in (0, 1, L_of(p)):
        want = 0.0
        for _, shift, placements, _ in paper_replay(p, r):
            s = shift % p
            load = p / 4 if 2 * s == p else min(s, p - s)
            want += alpha + load * len(placements) * u / bw
        df = flowemu.simulate(f"torus:{p}", f"butterfly:r={r}", [size], alpha=seconds(alpha),
                              bandwidth=Bps(bw), link_latency=0, hop_latency=0)
        assert df["time_s"].iloc[0] == pytest.approx(want, rel=1e-9), (p, r)


def test_gamma_time_on_one_switch_bandwidth_optimal():
    p, alpha, bw, gamma = 7, 3e-5, 1e8, 2e-10     # Table 2
    df = flowemu.simulate("tree:7", "butterfly:r=bandwidth", [4096], alpha=seconds(alpha),
                          bandwidth=Bps(bw), gamma=seconds(gamma), link_latency=0, hop_latency=0)
    assert df["time_s"].iloc[0] == pytest.approx(alpha_beta_time(p, 0, 4096, alpha, bw, gamma),
                                                 rel=1e-9)
    # latency-optimal at P = 7 reaches eq. (44)'s γ term exactly
    df = flowemu.simulate("tree:7", "butterfly:r=latency", [4096], alpha=seconds(alpha),
                          bandwidth=Bps(bw), gamma=seconds(gamma), link_latency=0, hop_latency=0)
    u = 4096 / 7
    want = 3 * alpha + 7 * 3 * u / bw + 7 * (2 * 3 - 2) * u * gamma
    assert df["time_s"].iloc[0] == pytest.approx(want, rel=1e-9)


def test_auto_takes_the_cheapest_form_per_size():
    """r=auto: small vectors take the latency-optimal form, big ones the
    bandwidth-optimal one, and each size's time is the minimum over r."""
    p, alpha, bw = 127, 3e-5, 1e8
    sizes = [64, 4096, 2 ** 16, 2 ** 20, 2 ** 26]
    net = {"alpha": seconds(alpha), "bandwidth": Bps(bw), "link_latency": 0, "hop_latency": 0}
    auto = flowemu.simulate(f"tree:{p}", "butterfly", sizes, **net)
    every = np.array([flowemu.simulate(f"tree:{p}", f"butterfly:r={r}", sizes, **net)["time_s"]
                      for r in forms_of(p)])
    np.testing.assert_allclose(auto["time_s"].to_numpy(), every.min(axis=0), rtol=1e-9)
    assert auto["variant"].iloc[0] == "latency" and auto["variant"].iloc[-1] == "bandwidth"
    assert auto["variant"].nunique() >= 3     # an intermediate r wins in between (Fig. 10)


def test_plain_build_with_auto_chooses_for_at():
    small = build(12, None, False, at="1KiB")
    big = build(12, None, False)            # 256 MiB on the default network
    assert small.info["r"] == L_of(12) and big.info["r"] == 0


def test_every_algorithm_runs_on_tree_and_torus():
    for spec in ("tree:13", "torus:4x4"):
        df = flowemu.simulate(spec, "butterfly", "1KiB,1MiB")
        assert (df["time_s"] > 0).all() and df["time_s"].iloc[1] > df["time_s"].iloc[0]


# ------------------------------------------------------------------ bad options
@pytest.mark.parametrize("opts,needle", [
    ("r=9", "option r=9 is not allowed for p=8; allowed: 0..3"),
    ("r=-1", "option r='-1' is not allowed"),
    ("r=fast", "option r='fast' is not allowed"),
    ("r=1.5", "option r='1.5' is not allowed"),
    ("at=0", "option at='0' is not allowed"),
    ("at=big", "option at='big' is not allowed"),
    ("steps=3", "unknown option(s) steps; allowed: at, r"),
])
def test_bad_options_refused(capsys, opts, needle):
    with pytest.raises(ConfigError) as exc:
        flowemu.simulate("tree:8", f"butterfly:{opts}", "1KiB")
    assert needle in str(exc.value) and "\n" not in str(exc.value)
    code, _, err = run(capsys, ["run", "-t", "tree:8", "-a", f"butterfly:{opts}", "-s", "1KiB"])
    assert code == 2 and needle in one_error_line(err)


def test_registered_with_its_options():
    spec = get_algorithm("butterfly")
    assert [p.name for p in spec.params] == ["r", "at"] and spec.sized is not None


@pytest.mark.parametrize("algo", ["butterfly", "butterfly:r=1", "butterfly:r=latency",
                                  "butterfly:at=1KiB"])
def test_genmodel_backend_equals_the_flow_engine_on_one_switch(algo):
    net = {"alpha": "30us", "bandwidth": "100MB/s", "gamma": "0.2ns", "delta": "0.01ns"}
    sizes = [64, 4096, 2 ** 16, 2 ** 22]
    flow = flowemu.simulate("tree:13", algo, sizes, **net)
    model = flowemu.simulate("tree:13", algo, sizes, model="genmodel", **net)
    np.testing.assert_allclose(model["time_s"].to_numpy(), flow["time_s"].to_numpy(), rtol=1e-9)
    assert list(model["variant"]) == list(flow["variant"])
    assert list(model["steps"]) == list(flow["steps"])


@pytest.mark.parametrize("p,r", [(7, 1), (7, 3), (12, 2), (100, 4)])
def test_two_buffer_forms_schedule_the_replayed_steps(p, r):
    """The forms the verifier cannot express: every step's flows are the
    replay's shift (rank j to j + shift), its parts and its combinations."""
    sched = build(p, None, False, r=r)
    replay = paper_replay(p, r)
    assert sched.num_steps == len(replay)
    ranks = np.arange(p)
    for step, (kind, shift, placements, combined) in zip(sched.steps, replay, strict=True):
        tr = step.traffic
        np.testing.assert_array_equal(tr.src, ranks)
        np.testing.assert_array_equal(tr.dst, (ranks + shift) % p)
        np.testing.assert_allclose(tr.share, len(placements) / p, rtol=1e-15)
        red = step.reduction
        if kind == "copy":
            assert len(red.node) == 0
        else:
            np.testing.assert_array_equal(red.node, ranks)
            np.testing.assert_allclose(red.share, combined / p, rtol=1e-15)
            assert (red.fanin == 2).all()


def test_placement_adds_no_tree_planning_note():
    """butterfly's r depends on the size, not on where the ranks run."""
    for model in ("flow", "genmodel"):
        df = flowemu.simulate("tree:16", "butterfly", "1MiB", placement="random:1", model=model)
        assert df["note"].iloc[0] == "", model


@pytest.mark.slow
@pytest.mark.parametrize("p,r", [(1000, 0), (1000, 1), (997, 5)])
def test_verifier_at_1000_ranks(p, r):
    """The block-level verifier on 1,000 ranks and the prime 997 (p blocks,
    two buffers for r >= 1: up to a 4 GB state, ~1 min each)."""
    from flowemu.algorithms import get_algorithm
    from flowemu.algorithms.verify import verify_allreduce
    rep = verify_allreduce(get_algorithm("butterfly").build(p, None, True, r=r))
    assert rep.p == p and rep.num_steps == 2 * L_of(p) - r
