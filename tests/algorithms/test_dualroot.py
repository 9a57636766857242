"""``dualroot``: Träff's doubly-pipelined dual-root allreduce
(J. L. Träff, "A Doubly-pipelined, Dual-root Reduction-to-all Algorithm and
Implementation"): the trees of §1.1
against a recursive construction written here, every rank's exchanges in
the order of Algorithm 1, the block-level verifier, the round count of §1.2
and the time against the α-β closed form where the network adds no
congestion."""

from __future__ import annotations

import math

import numpy as np
import pytest

import flowemu
from flowemu.algorithms import get_algorithm
from flowemu.algorithms.dualroot import AUTO_MAX_BLOCKS, MAX_BLOCKS, dual_trees, step_count
from flowemu.algorithms.verify import verify_allreduce
from flowemu.core.errors import ConfigError
from tests.helpers.cli import one_error_line, run


def build(p, b, blocks=False, topology=None):
    return get_algorithm("dualroot").build(p, topology, blocks, blocks=b)


# --------------------------------------------------------------------------- oracle

def oracle_trees(p):
    """Two post-order trees, as complete as possible (left subtree filled
    first), by plain recursion: {rank: (parent, depth, first child, second
    child)} with None for absent children; the roots' parent is the dual."""
    out = {}

    def left_size(n):
        if n <= 1:
            return 0
        h = math.floor(math.log2(n))
        half = 2 ** (h - 1)
        return half - 1 + min(n - (2 ** h - 1), half)

    def grow(lo, n, parent, depth):
        root = lo + n - 1
        nl = left_size(n)
        nr = n - 1 - nl
        kids = []
        if nr:
            kids.append(grow(lo + nl, nr, root, depth + 1))
        if nl:
            kids.append(grow(lo, nl, root, depth + 1))
        # the first child is i − 1 (the right subtree's root, or the lone child)
        out[root] = [parent, depth, *(kids + [None, None])[:2]]
        return root

    n0 = (p + 1) // 2
    r0 = grow(0, n0, None, 0)
    r1 = grow(n0, p - n0, None, 0)
    out[r0][0], out[r1][0] = r1, r0
    return out, (r0, r1)


def algorithm1_exchanges(p, b):
    """Every rank's exchanges in the order of Algorithm 1: per round j,
    first child, second child, parent (or dual root); each as (peer, blocks
    sent, blocks received), exchanges of no block left out. A rank runs
    rounds 0..b+d−1 with its parent and 0..b+d with its children (the round
    in which block b−1 = j−(d+1) goes down)."""
    tree, roots = oracle_trees(p)
    seq = {r: [] for r in range(p)}
    for r, (parent, d, c0, c1) in tree.items():
        for j in range(b + d + 1):
            for c in (c0, c1):
                if c is None:
                    continue
                sent = [j - d - 1] if 0 <= j - d - 1 < b else []
                got = [j] if j < b else []
                if sent or got:
                    seq[r].append((c, sent, got))
            if j < b + d:
                if r in roots:
                    if j < b:
                        seq[r].append((parent, [j], [j]))
                else:
                    sent = [j] if j < b else []
                    got = [j - d] if 0 <= j - d < b else []
                    if sent or got:
                        seq[r].append((parent, sent, got))
    return seq


def schedule_exchanges(schedule):
    """The same per-rank lists read off a block-level schedule; each rank
    takes part in at most one exchange (one peer) per step."""
    seq = {r: [] for r in range(schedule.p)}
    for step in schedule.steps:
        t = step.traffic
        per = {}
        for f in range(t.num_flows):
            s, d = int(t.src[f]), int(t.dst[f])
            blk = [int(x) for x in t.block_idx[t.block_ptr[f]:t.block_ptr[f + 1]]]
            per.setdefault(s, {}).setdefault(d, [[], []])[0].extend(blk)
            per.setdefault(d, {}).setdefault(s, [[], []])[1].extend(blk)
        for r, peers in per.items():
            assert len(peers) == 1, (step.label, r, peers)
            (peer, (sent, got)), = peers.items()
            seq[r].append((peer, sent, got))
    return seq


# --------------------------------------------------------------------------- trees

@pytest.mark.parametrize("p", list(range(2, 40)) + [64, 100, 997])
def test_trees_are_the_post_order_complete_trees(p):
    tree, roots = oracle_trees(p)
    t = dual_trees(p)
    assert sorted(t["roots"].tolist()) == sorted(roots)
    for r, (parent, depth, c0, c1) in tree.items():
        assert t["parent"][r] == parent and t["depth"][r] == depth
        if c0 is not None:
            assert c0 == r - 1 and t["first"][c0] == 1   # §1.1: the first child is i − 1
        if c1 is not None:
            assert t["first"][c1] == 0
    # as balanced as possible: each tree's height is ⌊log2 n⌋ of its n ranks
    n0 = (p + 1) // 2
    for lo, n in ((0, n0), (n0, p - n0)):
        assert t["depth"][lo:lo + n].max() == math.floor(math.log2(n))


@pytest.mark.parametrize("p", [2, 3, 4, 5, 6, 7, 9, 14, 23, 30, 33])
@pytest.mark.parametrize("b", [1, 2, 5])
def test_every_rank_follows_algorithm_1(p, b):
    assert schedule_exchanges(build(p, b, True)) == algorithm1_exchanges(p, b)


# --------------------------------------------------------------------------- verifier

@pytest.mark.parametrize("p", range(2, 65))
def test_verifier_every_p_up_to_64(p):
    for b in (1, 2, 3, 7):
        s = build(p, b, True)
        verify_allreduce(s)
        assert s.num_blocks == b


@pytest.mark.parametrize("p,b", [(100, 1), (100, 4), (997, 1), (997, 3), (1000, 2),
                                 (1000, 3)])
def test_verifier_large_p(p, b):
    verify_allreduce(build(p, b, True))


def test_block_and_plain_schedules_are_the_same_traffic():
    for p, b in ((13, 6), (30, 4)):
        a, c = build(p, b, True), build(p, b, False)
        assert a.num_steps == c.num_steps
        for x, y in zip(a.steps, c.steps):
            np.testing.assert_array_equal(x.traffic.src, y.traffic.src)
            np.testing.assert_array_equal(x.traffic.dst, y.traffic.dst)
            np.testing.assert_array_equal(x.traffic.share, y.traffic.share)
            np.testing.assert_array_equal(x.reduction.node, y.reduction.node)
            assert np.all(x.traffic.share == 1.0 / b)


# --------------------------------------------------------------------------- round count

@pytest.mark.parametrize("h", range(2, 9))
@pytest.mark.parametrize("b", [1, 2, 3, 10, 100])
def test_round_count_is_the_papers_on_complete_trees(h, b):
    """§1.2: 4h − 3 + 3(b − 1) steps; two complete trees of h levels hold
    p = 2^(h+1) − 2 ranks."""
    p = 2 ** (h + 1) - 2
    s = build(p, b)
    assert s.num_steps == 4 * h - 3 + 3 * (b - 1) == step_count(p, b)


@pytest.mark.parametrize("p", range(5, 70))
def test_round_count_bounded_by_the_papers_for_any_p(p):
    """Incomplete trees of h levels never take more than the complete ones;
    every block after the first costs three steps."""
    tree, _ = oracle_trees(p)
    h = max(d for _, d, _, _ in tree.values()) + 1
    for b in (1, 4, 50):
        n = build(p, b).num_steps
        assert n == step_count(p, b)
        assert 3 * (b - 1) + 1 < n <= 4 * h - 3 + 3 * (b - 1)


def test_two_to_four_ranks():
    """p = 2: only the dual roots, one exchange per block. p = 3, 4: a root
    and its one child exchange in b + 1 rounds, the roots in b, never in
    the same step (nobody has a second child: one step in three is empty
    and left out)."""
    for b in (1, 3, 8):
        s = build(2, b)
        assert s.num_steps == b
        assert all(st.traffic.num_flows == 2 for st in s.steps)
        assert build(3, b).num_steps == build(4, b).num_steps == 2 * b + 1


def test_repeated_steps_share_one_traffic():
    """b = 1000 on 16,384 ranks: 3(b−1) + 4h − 3 steps, but only the fill
    and drain steps (≈ 8h) plus three steady ones are distinct objects."""
    s = build(16384, 1000)
    h = 14        # two trees of 8192 ranks: 14 levels
    assert 3 * 999 < s.num_steps == step_count(16384, 1000) <= 4 * h - 3 + 3 * 999
    distinct = {id(st.traffic) for st in s.steps}
    assert len(distinct) <= 8 * h + 6
    assert len({id(st.reduction) for st in s.steps}) == len(distinct)
    assert max(st.traffic.num_flows for st in s.steps) <= 16384


# --------------------------------------------------------------------------- time

NET = {"alpha": "2us", "link_latency": 0, "hop_latency": 0, "bandwidth": "1GB/s", "gamma": 0,
       "delta": 0}


@pytest.mark.parametrize("spec,p,ecmp", [("tree:16", 16, "split"), ("tree:16", 11, "split"),
                                         ("fattree:k=4", 16, "split"),
                                         ("fattree:k=4", 13, "split"),
                                         ("torus:4", 4, "dor")])
@pytest.mark.parametrize("b", [1, 3, 16])
def test_time_is_the_alpha_beta_closed_form(spec, p, ecmp, b):
    """A single switch and a fat tree (split ECMP) carry every step — each
    rank in one exchange — at full rate; so does the 4-node ring under
    dimension order (the dual exchange 1↔3 is alone in its steps, on one of
    the two ways round). Time = steps · (α + β·n/b)."""
    n = 3 * 2**20
    df = flowemu.simulate(spec, f"dualroot:blocks={b}", [n], ranks=p, ecmp=ecmp, **NET)
    steps = step_count(p, b)
    assert df["steps"].item() == steps
    assert df["time_s"].item() == pytest.approx(steps * (2e-6 + n / b / 1e9), rel=1e-9)


def test_ring_split_doubles_the_dual_exchange():
    """torus:4 with split ECMP: the dual roots 1 and 3 are two hops apart
    both ways round, so their exchange runs at twice the link rate; the
    tree edges are ring neighbours (one path). p = 4: the children exchange
    in b + 1 steps, the roots in b."""
    n, b = 2**20, 4
    df = flowemu.simulate("torus:4", f"dualroot:blocks={b}", [n], **NET)
    expect = (b + 1) * (2e-6 + n / b / 1e9) + b * (2e-6 + n / b / 2e9)
    assert df["time_s"].item() == pytest.approx(expect, rel=1e-9)


def test_reduction_is_charged():
    """γ and δ: each received partial block is combined (fan-in 2); on
    complete trees some rank reduces in every step of the steady state."""
    n, b = 2**20, 8
    base = flowemu.simulate("tree:14", f"dualroot:blocks={b}", [n], **NET)["time_s"].item()
    red = flowemu.simulate("tree:14", f"dualroot:blocks={b}", [n],
                           **{**NET, "gamma": "0.1ns"})["time_s"].item()
    steps = step_count(14, b)
    # a step with reductions costs γ·n/b more (fan-in 2: (f−1)·γ per byte)
    assert base < red <= base + steps * 1e-10 * n / b * (1 + 1e-9)


def test_auto_picks_the_papers_best_b_per_size():
    """blocks=auto: the b minimising (4h−3+3(b−1))(α + β·m/b) (§1.2),
    brute force over b here; one schedule per distinct b across sizes."""
    h = 3         # p = 14 = 2^(h+1) − 2: two complete trees
    sizes = [2**10, 2**20, 2**26]
    df = flowemu.simulate("tree:14", "dualroot", sizes, **NET)
    for size, variant, t in zip(sizes, df["variant"], df["time_s"]):
        bs = np.arange(1, AUTO_MAX_BLOCKS + 1)
        cost = (4 * h - 3 + 3 * (bs - 1)) * (2e-6 + size / 1e9 / bs)
        best = int(bs[np.argmin(cost)])
        assert variant == f"b={best}"
        assert t == pytest.approx(cost.min(), rel=1e-9)
    assert df["variant"].nunique() == 3


def test_auto_without_startup_cost_takes_the_most_blocks():
    df = flowemu.simulate("tree:6", "dualroot", ["100B", "1MiB"],
                          **{**NET, "alpha": 0})
    assert df["variant"].tolist() == ["b=100", f"b={AUTO_MAX_BLOCKS}"]


def test_plain_build_with_auto_plans_for_the_default_size():
    s = get_algorithm("dualroot").build(14, None)
    assert s.info["pipeline_blocks"] > 1 and s.variant == f"b={s.info['pipeline_blocks']}"


# --------------------------------------------------------------------------- refusals

@pytest.mark.parametrize("raw", ["0", "-3", "abc", "1.5", str(MAX_BLOCKS + 1), ""])
def test_bad_blocks_refused(raw, capsys):
    with pytest.raises(ConfigError, match=r"option blocks=.* is not allowed") as exc:
        flowemu.simulate("tree:4", f"dualroot:blocks={raw}", "1KiB")
    assert "\n" not in str(exc.value)
    code, _, err = run(capsys, ["run", "-t", "tree:4", "-a", f"dualroot:blocks={raw}",
                                "-s", "1KiB"])
    assert code == 2 and "blocks" in one_error_line(err)


@pytest.mark.parametrize("raw", [True, 0, 2.5, MAX_BLOCKS + 1])
def test_bad_blocks_refused_through_the_builder(raw):
    with pytest.raises(ConfigError, match="option blocks="):
        get_algorithm("dualroot").build(4, None, False, blocks=raw)


def test_unknown_option_and_bad_ranks_refused(capsys):
    with pytest.raises(ConfigError, match="unknown option.*depth.*allowed: blocks"):
        get_algorithm("dualroot").build(4, None, False, depth=2)
    with pytest.raises(ConfigError, match="ranks p=1 must be >= 2"):
        get_algorithm("dualroot").build(1, None, False, blocks=2)
    code, _, err = run(capsys, ["run", "-t", "tree:4", "-a", "dualroot:bloks=2", "-s", "1KiB"])
    assert code == 2 and "bloks" in one_error_line(err)


@pytest.mark.parametrize("p", [2, 3, 7, 14, 100, 1000, 5000])
def test_budget_shape_bounds_the_schedule(p):
    from flowemu.algorithms.shapes import schedule_shape
    from flowemu.topology import parse_topology
    flows, distinct = schedule_shape("dualroot", {}, p, parse_topology("tree:4"))
    s = build(p, 300)
    assert max(st.traffic.num_flows for st in s.steps) <= flows
    assert len({id(st.traffic) for st in s.steps}) <= distinct
