"""Bine's broadcast and reduce on p that is not a power of two, against the
authors' MPICH port of libbine (HLC-Lab/mpich): MPIR_Bcast_intra_bine_lat
(src/mpi/coll/bcast/bcast_intra_bine_lat.c) and MPIR_Reduce_intra_bine_lat
(src/mpi/coll/reduce/reduce_intra_bine_lat.c), transcribed below loop for
loop, rank by rank, from the C. Each transcription records the sends and the
receives every rank posts, by phase (its loop iteration; the tail of the
broadcast and the fold of the reduce are one phase each); the receives
must match the sends, and the sends of phase j must be the builder's flows
of step j. libbine itself (HLC-Lab/pico) and the MPICH port keep gather,
scatter and all-to-all to power-of-two p; flowemu refuses those there."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from flowemu.algorithms import get_algorithm
from flowemu.algorithms.base import COPY, REDUCE
from flowemu.algorithms.verify import verify
from flowemu.core.errors import ConfigError

M32 = 0xFFFFFFFF
P_ORACLE = [2, 3, 5, 6, 8, 12, 13, 16, 31, 100]


# ---- mpir_bine.h, with C's 32-bit unsigned / signed arithmetic

def binary_to_negabinary(b: int) -> int:
    mask = 0xAAAAAAAA
    return ((mask + b) ^ mask) & M32


def negabinary_to_binary(neg: int) -> int:
    mask = 0xAAAAAAAA
    v = ((mask ^ neg) - mask) & M32
    return v - (1 << 32) if v >= 1 << 31 else v        # int32_t


def bine_mod(a: int, b: int) -> int:
    r = abs(a) % b * (1 if a >= 0 else -1)             # C's %, then made positive
    return r + b if r < 0 else r


def mpl_pof2(n: int) -> int:
    pof2 = 1
    while pof2 * 2 <= n:
        pof2 *= 2
    return pof2


def bine_log2(value: int) -> int:                        # ⌈log₂value⌉
    log = value.bit_length() - 1
    return log + 1 if value & (value - 1) else log


def hibit(value: int, start: int) -> int:
    mask = value & ((1 << start) - 1)
    return -1 if mask == 0 else mask.bit_length() - 1


# ---- MPIR_Bcast_intra_bine_lat

def bcast_bine_lat(rank: int, comm_size: int, root: int, log: list) -> None:
    if comm_size == 1:
        return
    pow2 = mpl_pof2(comm_size)
    vrank = rank - root if rank >= root else rank - root + comm_size
    steps = bine_log2(pow2)
    mask = 0x1 << (steps - 1)
    recvd = root == rank
    btnb_vrank = binary_to_negabinary(vrank)
    is_in_pow2 = vrank < pow2
    phase = 0
    while is_in_pow2 and mask > 0:
        partner = btnb_vrank ^ ((mask << 1) - 1)
        partner = bine_mod(negabinary_to_binary(partner), pow2)
        partner = bine_mod(partner + root, comm_size)
        mask_lsbs = (mask << 1) - 1
        lsbs = btnb_vrank & mask_lsbs
        equal_lsbs = lsbs == 0 or lsbs == mask_lsbs
        if recvd:
            log.append(("send", phase, rank, partner))
        elif equal_lsbs:
            log.append(("recv", phase, partner, rank))
            recvd = True
        mask >>= 1
        phase += 1
    if vrank >= pow2:
        partner = bine_mod(vrank - pow2 + root, comm_size)
        log.append(("recv", steps, partner, rank))
    elif vrank < comm_size - pow2:
        partner = bine_mod(pow2 + vrank + root, comm_size)
        log.append(("send", steps, rank, partner))


# ---- MPIR_Reduce_intra_bine_lat

def reduce_bine_lat(rank: int, comm_size: int, root: int, log: list) -> None:
    if comm_size == 1:
        return
    steps = hibit(comm_size, 31)
    adjsize = 1 << steps
    vrank = bine_mod(rank - root, comm_size)
    extra_ranks = comm_size - adjsize
    first = 1 if extra_ranks else 0          # the phase the tree's first iteration is
    new_rank = vrank
    loop_flag = False
    if vrank < 2 * extra_ranks:
        if vrank % 2 != 0:
            log.append(("send", 0, rank, bine_mod(vrank - 1 + root, comm_size)))
            loop_flag = True
        else:
            log.append(("recv", 0, bine_mod(vrank + 1 + root, comm_size), rank))
            new_rank = vrank >> 1
    else:
        new_rank = vrank - extra_ranks
    mask = 0x1
    btnb_vrank = binary_to_negabinary(new_rank)
    phase = first
    if not loop_flag:
        while mask < adjsize:
            partner = btnb_vrank ^ ((mask << 1) - 1)
            partner = bine_mod(negabinary_to_binary(partner), adjsize)
            abs_partner = partner * 2 if partner < extra_ranks else partner + extra_ranks
            abs_partner = bine_mod(abs_partner + root, comm_size)
            mask_lsbs = (mask << 2) - 1
            lsbs = btnb_vrank & mask_lsbs
            equal_lsbs = lsbs == 0 or lsbs == mask_lsbs
            if not equal_lsbs or ((mask << 1) >= adjsize and rank != root):
                log.append(("send", phase, rank, abs_partner))
                break
            log.append(("recv", phase, abs_partner, rank))
            mask <<= 1
            phase += 1


def oracle(program, p: int, root: int) -> list[Counter]:
    """The (src, dst) messages of each phase; every receive posted matches a send."""
    log: list = []
    for rank in range(p):
        program(rank, p, root, log)
    sends = Counter(e[1:] for e in log if e[0] == "send")
    recvs = Counter(e[1:] for e in log if e[0] == "recv")
    assert sends == recvs, (p, root)
    phases = max(ph for ph, _, _ in sends) + 1
    return [Counter((s, d) for ph, s, d in sends if ph == j) for j in range(phases)]


def built(collective: str, p: int, root: int, blocks: bool = False):
    spec = get_algorithm("bine", collective)
    return spec.build(p, None, blocks, **spec.parse_options({"root": root}))


@pytest.mark.parametrize("collective, program", [("broadcast", bcast_bine_lat),
                                                 ("reduce", reduce_bine_lat)])
@pytest.mark.parametrize("p", P_ORACLE)
def test_builder_is_the_mpich_port(collective, program, p):
    for root in sorted({0, p - 1, p // 3}):
        expect = oracle(program, p, root)
        sched = built(collective, p, root, blocks=True)
        assert len(sched.steps) == len(expect), (p, root)
        for j, step in enumerate(sched.steps):
            tr = step.traffic
            assert Counter(zip(tr.src.tolist(), tr.dst.tolist())) == expect[j], (p, root, j)
            np.testing.assert_array_equal(tr.share, 1.0)      # the whole vector
            assert set(tr.op.tolist()) == {REDUCE if collective == "reduce" else COPY}


@pytest.mark.parametrize("p", [6, 12, 13, 100])
def test_structure_by_hand(p):
    """q = 2^⌊log₂p⌋, e = p − q: the broadcast is log₂q tree steps (2^j
    flows in step j) and then e flows v → v + q (relative to the root); the
    reduce first folds the e odd ranks v < 2e into v − 1, then runs the tree
    on q ranks leaves first: q/2, q/4, …, 1 flows, the last into the root."""
    q = 1 << (p.bit_length() - 1)
    e = p - q
    root = p // 3
    bc = built("broadcast", p, root)
    assert [s.traffic.num_flows for s in bc.steps] == [2 ** j for j in range(q.bit_length() - 1)
                                                       ] + [e]
    tail = bc.steps[-1].traffic
    assert sorted(zip(((tail.src - root) % p).tolist(), ((tail.dst - root) % p).tolist())) \
        == [(v, v + q) for v in range(e)]
    rd = built("reduce", p, root)
    assert [s.traffic.num_flows for s in rd.steps] == [e] + [q >> (j + 1)
                                                             for j in range(q.bit_length() - 1)]
    fold = rd.steps[0].traffic
    assert sorted(zip(((fold.src - root) % p).tolist(), ((fold.dst - root) % p).tolist())) \
        == [(v, v - 1) for v in range(1, 2 * e, 2)]
    assert rd.steps[-1].traffic.dst.tolist() == [root]           # the tree ends at the root
    assert bc.info["p_eff"] == rd.info["p_eff"] == q and bc.info["extra_ranks"] == e


@pytest.mark.parametrize("collective", ["broadcast", "reduce"])
def test_any_p_is_proved(collective):
    """The block-level verifier on the acceptance's p and roots, and the
    byte counts: each non-root receives the vector once (broadcast), each
    non-root sends its partial sum once (reduce)."""
    for p in list(range(2, 65)) + [100, 101]:
        for root in sorted({0, p - 1, p // 3}):
            rep = verify(built(collective, p, root, blocks=True))
            moved = rep.received if collective == "broadcast" else rep.sent
            np.testing.assert_allclose(np.delete(moved, root), 1.0)
            assert moved[root] == 0
            assert rep.num_steps == (p - 1).bit_length()         # ⌈log₂p⌉


@pytest.mark.parametrize("collective, instead", [("gather", "binomial"),
                                                 ("scatter", "binomial"),
                                                 ("alltoall", "mpich")])
def test_other_p_refused_where_libbine_has_no_form(collective, instead):
    spec = get_algorithm("bine", collective)
    for p in (3, 6, 12, 100):
        with pytest.raises(ConfigError, match=rf"p={p} ranks must be a power of two "
                                              r"\(libbine's .*MPICH port.*\); use " + instead):
            spec.build(p, None, False, **spec.parse_options({}))
