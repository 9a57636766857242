"""Tree baselines: binomial reduce + broadcast and NCCL's double binary tree
(flowemu/algorithms/trees.py), pipelined in segments."""

from __future__ import annotations

import math

import numpy as np
import pytest

import flowemu
from flowemu.algorithms import get_algorithm
from flowemu.algorithms.trees import btree_parents, dtree_parents
from flowemu.algorithms.verify import verify_allreduce
from flowemu.core.errors import ConfigError
from flowemu.core.network import Network
from tests.helpers.cli import one_error_line, run

NAMES = ["binomial", "dbtree"]
FREE = Network(bandwidth="8Gb/s", link_latency=0, hop_latency=0, alpha="2us")   # 1e9 B/s


def _height(parent: np.ndarray) -> int:
    """Height of a tree from its parent array, by walking every node up (an
    independent count: the depth of the deepest node)."""
    best = 0
    for r in range(len(parent)):
        d, v = 0, r
        while parent[v] >= 0:
            v, d = parent[v], d + 1
        best = max(best, d)
    return best


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("p", list(range(2, 65)) + [100, 997, 1000])
def test_verifier_every_p(name, p):
    for k in ((1, 2, 5) if p <= 64 else (1, 3)):
        sched = get_algorithm(name).build(p, None, True, segments=k)
        verify_allreduce(sched)


@pytest.mark.parametrize("p", list(range(2, 40)) + [100, 1000])
@pytest.mark.parametrize("k", [1, 4])
def test_step_counts(p, k):
    """Reduce and broadcast each take K + H − 1 pipelined steps: H = ⌈log2 p⌉
    for the binomial tree, the taller of the two trees for dbtree."""
    b = get_algorithm("binomial").build(p, None, False, segments=k)
    assert b.num_steps == 2 * (k + math.ceil(math.log2(p)) - 1)
    t1, t2 = dtree_parents(p)
    h = max(_height(t1), _height(t2))
    assert get_algorithm("dbtree").build(p, None, False, segments=k).num_steps == 2 * (k + h - 1)


def test_nccl_trees():
    """ncclGetBtree: rank 0 roots the tree with one child (the highest power
    of two below p); a rank's parent clears its lowest set bit b and sets 2b;
    for p even the second tree mirrors the first and its inner nodes are the
    first's leaves."""
    assert btree_parents(8).tolist() == [-1, 2, 4, 2, 0, 6, 4, 6]
    t1, t2 = dtree_parents(8)
    leaves1 = set(range(8)) - set(t1[t1 >= 0].tolist())
    inner2 = set(t2[t2 >= 0].tolist())
    assert leaves1 == {1, 3, 5, 7} and leaves1 <= inner2
    t1, t2 = dtree_parents(9)          # p odd: shifted by one
    assert t2.tolist() == [(u + 1) % 9 if u >= 0 else -1 for u in t1[(np.arange(9) - 1) % 9]]


@pytest.mark.parametrize("topology", ["tree:16", "torus:32", "fattree:k=4"])
@pytest.mark.parametrize("p", [2, 5, 8, 16])
def test_binomial_closed_form_without_congestion(topology, p):
    """Unpipelined binomial: in each step a child sends the whole vector to
    its parent, one flow per receiver and the paths disjoint (on the 1-D
    torus a child is 2^k < N/2 ranks ahead of its parent: one shortest
    path, not both ways round), so each of the
    2⌈log2 p⌉ steps takes α + n/B."""
    n = 2**20
    t = flowemu.simulate(topology, "binomial", [n], ranks=p, network=FREE)["time_s"].item()
    steps = 2 * math.ceil(math.log2(p))
    assert t == pytest.approx(steps * (FREE.alpha + n / FREE.bandwidth), rel=1e-12)


@pytest.mark.parametrize("topology", ["tree:8", "torus:8", "fattree:k=4"])
@pytest.mark.parametrize("k", [1, 3, 8])
def test_pipelined_two_ranks_closed_form(topology, k):
    """Two ranks: binomial moves n/K per step over K + K steps (2Kα + 2n/B);
    dbtree sends its two halves opposite ways at once (2Kα + n/B)."""
    n = 3 * 2**20
    a, B = FREE.alpha, FREE.bandwidth
    tb = flowemu.simulate(topology, f"binomial:segments={k}", [n], ranks=2, network=FREE)
    td = flowemu.simulate(topology, f"dbtree:segments={k}", [n], ranks=2, network=FREE)
    assert tb["time_s"].item() == pytest.approx(2 * k * a + 2 * n / B, rel=1e-12)
    assert td["time_s"].item() == pytest.approx(2 * k * a + n / B, rel=1e-12)


def test_pipelining_pays_for_big_vectors():
    net = Network(alpha="1us")
    n = 2**28
    one = flowemu.simulate("tree:64", "dbtree", [n], network=net)["time_s"].item()
    many = flowemu.simulate("tree:64", "dbtree:segments=64", [n], network=net)["time_s"].item()
    assert many < one / 2


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("bad", ["0", "-2", "x", "1.5", str(2**16 + 1)])
def test_bad_segments(name, bad, capsys):
    with pytest.raises(ConfigError, match="segments"):
        flowemu.simulate("tree:8", f"{name}:segments={bad}", "1KiB")
    code, _, err = run(capsys, ["run", "-t", "tree:8", "-a", f"{name}:segments={bad}"])
    assert code == 2 and "segments" in one_error_line(err)
