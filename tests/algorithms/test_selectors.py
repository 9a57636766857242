"""``mpich``: what MPICH picks, by the thresholds of its selection logic
(Thakur, Rabenseifner and Gropp 2005; MPICH's default ``MPIR_CVAR_*`` values
2048 B, 12288 B and 8 ranks, 524288 B, 81920 B, 256 B and 32768 B a block,
with MPICH's own comparisons), checked on both sides of each threshold; a
run with ``mpich`` is the chosen algorithm's run, named in ``variant``."""

from __future__ import annotations

import numpy as np
import pytest

from flowemu.algorithms import get_algorithm
from flowemu.algorithms.collectives import COLLECTIVES
from flowemu.algorithms.selectors import mpich_choice
from flowemu.algorithms.verify import verify
from tests.helpers.selectors import assert_runs_are_the_choices

CASES = [
    # collective, p, n bytes, MPICH's choice
    ("allreduce", 16, 2048, "recdoub:variant=latency"),          # n > 2048 needed
    ("allreduce", 16, 2049, "recdoub:variant=bandwidth"),
    ("allreduce", 2048, 4096, "recdoub:variant=latency"),        # 1024 elements < pof2 2048
    ("broadcast", 7, 2**30, "binomial"),                         # p < 8
    ("broadcast", 8, 12288, "vandegeijn:allgather=recdoub"),     # p = 8 is not fewer
    ("broadcast", 16, 12287, "binomial"),
    ("broadcast", 16, 12288, "vandegeijn:allgather=recdoub"),    # medium, p a power of two
    ("broadcast", 12, 12288, "vandegeijn"),                      # medium, p not
    ("broadcast", 16, 524288, "vandegeijn"),                     # long
    ("reduce", 16, 2048, "binomial"),                            # n > 2048 needed
    ("reduce", 16, 2052, "rabenseifner"),
    ("reduce_scatter", 16, 524287, "recdoub"),
    ("reduce_scatter", 16, 524288, "pairwise"),
    ("reduce_scatter", 12, 1024, "ring"),
    ("allgather", 16, 524287, "recdoub"),
    ("allgather", 16, 524288, "ring"),
    ("allgather", 12, 81919, "bruck"),
    ("allgather", 12, 81920, "ring"),
    ("gather", 12, 2**30, "binomial"),
    ("scatter", 5, 1, "binomial"),
    ("alltoall", 8, 8 * 256, "bruck"),                           # block <= 256, p >= 8
    ("alltoall", 7, 7 * 256, "linear"),                          # p < 8
    ("alltoall", 8, 8 * 257, "linear"),
    ("alltoall", 8, 8 * 32768, "linear"),
    ("alltoall", 8, 8 * 32769, "pairwise"),
]


@pytest.mark.parametrize("collective, p, n, want", CASES)
def test_thresholds(collective, p, n, want):
    assert mpich_choice(collective, p, n)[0] == want


def test_allreduce_count_against_pof2():
    # 4-byte elements: 4096 B is 1024 elements; Rabenseifner needs count >= pof2
    assert mpich_choice("allreduce", 1024, 4096)[0] == "recdoub:variant=bandwidth"
    assert mpich_choice("allreduce", 1025, 4096)[0] == "recdoub:variant=bandwidth"
    assert mpich_choice("allreduce", 2048, 4096)[0] == "recdoub:variant=latency"


def test_folded_cases_say_so():
    text, note = mpich_choice("reduce", 12, 2**20)
    assert text == "binomial" and "folds the ranks" in note
    assert mpich_choice("reduce", 16, 2**20) == ("rabenseifner", "")


@pytest.mark.parametrize("collective", list(COLLECTIVES))
def test_a_run_is_the_chosen_algorithms_run(collective):
    assert_runs_are_the_choices("mpich", lambda n: mpich_choice(collective, 16, n), collective)


@pytest.mark.parametrize("collective", list(COLLECTIVES))
def test_every_choice_verifies(collective):
    spec = get_algorithm("mpich", collective)
    for p in (8, 12, 16):
        sizes = np.array([64, 1024, 40_000, 100_000, 600_000, 2**26], dtype=float)
        opts = spec.parse_options({"root": 1} if COLLECTIVES[collective].rooted else {})
        for sched, _ in spec.sized(p, None, None, sizes, opts, blocks=True):
            assert verify(sched).collective == collective
