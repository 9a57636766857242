"""The collectives other than allreduce (issue 28): every algorithm proves its
collective's postcondition on p = 2..64, 100, a prime and (where the state
fits) 1000; the byte totals the verifier reports are the algorithms'
closed forms; the verifier rejects schedules that miss a postcondition,
naming the rank and block."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

import flowemu
from flowemu.algorithms import algorithm_names, get_algorithm
from flowemu.algorithms.base import COPY, REDUCE, Schedule, Step, Traffic
from flowemu.algorithms.collectives import COLLECTIVES, get_collective
from flowemu.algorithms.verify import verify
from flowemu.core.errors import ConfigError, ScheduleError
from tests.helpers.cli import one_error_line, run

OTHERS = [c for c in COLLECTIVES if c != "allreduce"]
#: every algorithm of the other collectives the verifier can replay (ina's switches
#: reduce, which blocks moved between ranks cannot express: tests/algorithms/test_ina.py)
ALGORITHMS = [(c, n) for c in OTHERS for n in algorithm_names(c) if n != "ina"]
POW2_ONLY = {"recdoub", "rabenseifner"}   # (recdoub's halves: ranks folded in otherwise)


def pow2_only(collective, name):
    """Algorithms defined for p a power of two only (Bine's gather, scatter
    and all-to-all, as in libbine and its MPICH port; its broadcast and
    reduce take the port's other-p forms, its reduce-scatter and allgather
    are Swing's, any p)."""
    return name in POW2_ONLY or (name == "bine"
                                 and collective in ("gather", "scatter", "alltoall"))
P_VALUES = list(range(2, 65)) + [100, 101]


def build(collective, name, p, root=None, blocks=True, **options) -> Schedule:
    spec = get_algorithm(name, collective)
    opts = spec.parse_options({**options, **({} if root is None else {"root": root})})
    return spec.build(p, None, blocks, **opts)


def roots(collective, p):
    return sorted({0, p - 1, p // 3}) if COLLECTIVES[collective].rooted else [None]


def test_every_collective_has_algorithms_and_allreduce_keeps_its_own():
    assert set(OTHERS) == {"reduce_scatter", "allgather", "broadcast", "reduce", "gather",
                           "scatter", "alltoall"}
    for c in OTHERS:
        assert algorithm_names(c), c
        for n in algorithm_names(c):
            assert get_algorithm(n, c).collective == c
    assert "swing" in algorithm_names() and get_algorithm("ring").collective == "allreduce"
    assert algorithm_names("alltoall") == ["bine", "bruck", "linear", "mpich", "nccl", "pairwise"]
    halves = ["bucket", "butterfly", "recdoub", "ring", "swing"]
    assert algorithm_names("reduce_scatter") == sorted(["bine", "mpich", "nccl", "pairwise",
                                                        *halves])
    assert algorithm_names("allgather") == sorted(["bine", "bruck", "mpich", "nccl", "sparbit",
                                                   *halves])
    assert get_collective("reduce-scatter").name == "reduce_scatter"


#: the cases of the proofs below that take seconds each (every root of nccl's
#: rooted plans): in make test-all, beside the 1000-rank proofs
SLOW_PROOFS = {("reduce", "nccl"), ("broadcast", "nccl")}


@pytest.mark.parametrize("collective, name", [
    pytest.param(c, n, marks=pytest.mark.slow) if (c, n) in SLOW_PROOFS else (c, n)
    for c, n in ALGORITHMS])
def test_every_algorithm_proves_its_collective(collective, name):
    for p in P_VALUES:
        if pow2_only(collective, name) and p & (p - 1):
            continue
        for root in roots(collective, p):
            sched = build(collective, name, p, root)
            assert sched.collective == collective
            rep = verify(sched)
            assert rep.collective == collective and rep.p == p


@pytest.mark.parametrize("collective, name", [("allgather", "ring"), ("broadcast", "binomial"),
                                              ("reduce", "binomial"), ("gather", "binomial"),
                                              ("scatter", "linear"),
                                              pytest.param("alltoall", "pairwise",
                                                           marks=pytest.mark.slow)])
def test_p_1000(collective, name):
    """A thousand ranks fit: a collective that combines nothing keeps one
    count a (rank, block); broadcast and reduce move one block."""
    rep = verify(build(collective, name, 1000, 999 if COLLECTIVES[collective].rooted else None))
    assert rep.p == 1000


@pytest.mark.parametrize("p", [2, 3, 7, 8, 13, 16, 100])
def test_byte_totals_are_the_closed_forms(p):
    """What each rank sends and receives (fractions of n, the collective's
    own size), against the textbook counts."""
    share = (p - 1) / p
    for coll in ("reduce_scatter", "allgather"):
        rep = verify(build(coll, "ring", p))          # both ways: two flows of n/(2p) a step
        assert rep.num_steps == p - 1
        np.testing.assert_allclose(rep.sent, share, rtol=1e-12)
        np.testing.assert_allclose(rep.received, share, rtol=1e-12)
        np.testing.assert_allclose(rep.reduced, share if coll == "reduce_scatter" else 0,
                                   rtol=1e-12, atol=0)
    logp = (p - 1).bit_length()                      # ⌈log₂p⌉
    bc = verify(build("broadcast", "binomial", p, p - 1))
    assert bc.num_steps == logp and bc.sent_path == logp        # ⌈log₂p⌉ · n on the path
    np.testing.assert_allclose(np.delete(bc.received, p - 1), 1.0)   # each non-root once
    assert bc.received[p - 1] == 0
    red = verify(build("reduce", "binomial", p, 0))
    assert red.num_steps == logp and red.received_path == logp
    np.testing.assert_allclose(red.reduced.sum(), p - 1)       # p − 1 combinations of n
    for name in ("linear", "binomial"):
        ga = verify(build("gather", name, p, 1))
        np.testing.assert_allclose(ga.received[1], share, rtol=1e-12)   # root gets (p−1)/p
        sc = verify(build("scatter", name, p, 1))
        np.testing.assert_allclose(sc.sent[1], share, rtol=1e-12)
        np.testing.assert_allclose(np.delete(sc.received, 1).min(), 1 / p, rtol=1e-12)
    assert verify(build("gather", "linear", p, 0)).num_steps == 1
    assert verify(build("gather", "binomial", p, 0)).num_steps == logp
    for name, steps in (("linear", 1), ("pairwise", p - 1)):
        a2a = verify(build("alltoall", name, p))
        assert a2a.num_steps == steps
        np.testing.assert_allclose(a2a.sent, share, rtol=1e-12)
        np.testing.assert_allclose(a2a.received, share, rtol=1e-12)
    if p & (p - 1) == 0:
        for coll, name in (("reduce_scatter", "recdoub"), ("allgather", "recdoub")):
            rep = verify(build(coll, name, p))
            assert rep.num_steps == logp
            np.testing.assert_allclose(rep.sent, share, rtol=1e-12)
            # halving sends n/2, n/4, …; doubling the reverse
            sizes = [s.max_sent for s in rep.steps]
            expect = [2.0 ** -(k + 1) for k in range(logp)]
            assert sizes == (expect if coll == "reduce_scatter" else expect[::-1])


def _replace_step(sched: Schedule, i: int, keep) -> Schedule:
    """``sched`` with step ``i`` keeping only the flows where ``keep``."""
    steps = list(sched.steps)
    tr = steps[i].traffic
    f = np.flatnonzero(keep)
    lens = np.diff(tr.block_ptr)[f]
    idx = np.concatenate([tr.block_idx[tr.block_ptr[g]:tr.block_ptr[g + 1]] for g in f])
    new = Traffic(tr.src[f], tr.dst[f], tr.share[f], None,
                  np.concatenate([[0], np.cumsum(lens)]).astype(np.int64), idx, tr.op[f])
    steps[i] = Step(new, steps[i].reduction, steps[i].label)
    return dataclasses.replace(sched, steps=steps)


def test_a_missing_flow_is_named():
    sched = build("allgather", "ring", 5, ports=1)
    last = sched.steps[-1].traffic
    broken = _replace_step(sched, 3, last.src != 2)        # rank 2 → 3 dropped
    with pytest.raises(ScheduleError, match=r"rank 3 block \d lacks the data of rank \d; 1 "
                                            r"\(rank, block\) pair\(s\) of the allgather"):
        verify(broken)


def test_a_reduce_in_an_allgather_is_refused():
    sched = build("allgather", "ring", 4)
    steps = list(sched.steps)
    tr = steps[0].traffic
    steps[0] = Step(dataclasses.replace(tr, op=np.full(tr.num_flows, REDUCE, np.int8)),
                    steps[0].reduction, steps[0].label)
    with pytest.raises(ScheduleError, match="is a REDUCE; a allgather reduces nothing"):
        verify(dataclasses.replace(sched, steps=steps))


def test_the_wrong_root_or_owner_fails():
    bc = build("broadcast", "binomial", 6, root=2)
    with pytest.raises(ScheduleError, match="rank 0 block 0 lacks the data of rank 0; 6 "):
        verify(dataclasses.replace(bc, root=0))
    rs = build("reduce_scatter", "ring", 4, ports=1)
    shifted = np.roll(rs.block_owner, 1)
    with pytest.raises(ScheduleError, match="not fully reduced"):
        verify(dataclasses.replace(rs, block_owner=shifted))
    uneven = np.array([0, 0, 1, 2])
    with pytest.raises(ScheduleError, match=r"the blocks of rank 0 are worth 0.5 of n, not 1/p = 0.25"):
        verify(dataclasses.replace(rs, block_owner=uneven))
    with pytest.raises(ScheduleError, match=r"block 3 belongs to rank 4, outside 0..3"):
        verify(dataclasses.replace(rs, block_owner=np.array([0, 1, 2, 4])))
    with pytest.raises(ScheduleError, match=r"5 blocks cannot be split evenly among 4 ranks"):
        verify(dataclasses.replace(rs, num_blocks=5, block_share=np.full(5, 0.2),
                                   block_owner=None))
    a2a = build("alltoall", "linear", 3)
    dest = (np.arange(9) % 3).copy()
    dest[[1, 2]] = dest[[2, 1]]                           # (0→1) and (0→2) swapped
    with pytest.raises(ScheduleError, match=r"rank 2 block 1 lacks the data of rank 0; 2 "):
        verify(dataclasses.replace(a2a, block_dest=dest))


def test_an_allreduce_is_not_a_reduce_scatter_the_other_way_round():
    """A reduce-scatter leaves the other blocks partial: it is no allreduce;
    a ring allreduce ends with every block everywhere, so it is also a
    reduce-scatter once its blocks are labelled by the rank that ends with them."""
    rs = build("reduce_scatter", "ring", 5)
    with pytest.raises(ScheduleError, match="not fully reduced"):
        verify(rs, "allreduce")
    ar = get_algorithm("ring").build(5, None, True, ports=1)
    assert verify(ar, "reduce_scatter").collective == "reduce_scatter"


def test_bad_arguments():
    with pytest.raises(ConfigError, match="collective: 'bcast' is not one of allreduce"):
        verify(build("allgather", "ring", 4), "bcast")
    with pytest.raises(ConfigError, match="'recdoub' is not an algorithm of broadcast; known: "
                                          "bine, binomial, bintree, chain, dbtree, mpich, "
                                          "nccl, vandegeijn"):
        get_algorithm("recdoub", "broadcast")
    with pytest.raises(ConfigError, match=r"root=7 must be a rank of the 4 ranks \(0..3\)"):
        build("broadcast", "binomial", 4, 7)
    with pytest.raises(ConfigError, match=r"recdoub \(allgather\): p=6 ranks must be a power of two"):
        build("allgather", "recdoub", 6)


def test_verify_command_and_api(capsys):
    ver = flowemu.verify("binomial:root=2", 7, collective="scatter")
    (v,) = ver.variants
    assert v.report.collective == "scatter" and v.report.num_steps == 3
    code, out, err = run(capsys, ["verify", "-c", "scatter", "-a", "binomial:root=2",
                                  "--ranks", "7"])
    assert code == 0 and err == ""
    assert out.rstrip("\n") == ver.text()
    assert "proved (scatter): 3 steps, 7 blocks; after the last step rank r holds its " \
           "blocks of the root's buffer, exactly once" in out
    code, out, err = run(capsys, ["verify", "-c", "bcast", "-a", "binomial", "--ranks", "7"])
    assert code == 2 and one_error_line(err) == (
        "flowemu: error: --collective: 'bcast' is not one of allreduce, reduce_scatter, "
        "allgather, broadcast, reduce, gather, scatter, alltoall (did you mean 'broadcast'?); "
        "reduce-scatter is read as reduce_scatter")
    code, _, err = run(capsys, ["verify", "-c", "nothing", "-a", "binomial", "--ranks", "7"])
    assert code == 2 and one_error_line(err) == (
        "flowemu: error: --collective: 'nothing' is not one of allreduce, reduce_scatter, "
        "allgather, broadcast, reduce, gather, scatter, alltoall (reduce-scatter is read as "
        "reduce_scatter)")
    # allreduce output is unchanged
    code, out, _ = run(capsys, ["verify", "-a", "ring:ports=1", "--ranks", "4"])
    assert code == 0 and "proved: 6 steps, 4 blocks" in out


def test_bus_bandwidth_factors_are_nccl_tests():
    p = 8
    f = {c: COLLECTIVES[c].busbw_factor(p) for c in COLLECTIVES}
    assert f["allreduce"] == 2 * 7 / 8
    assert f["broadcast"] == f["reduce"] == 1.0
    for c in ("reduce_scatter", "allgather", "gather", "scatter", "alltoall"):
        assert f[c] == 7 / 8


def test_copy_ops_are_copy():
    """The builders mark every flow of a combining-free collective COPY; a
    reduce-scatter or reduce has REDUCE flows (Rabenseifner's reduce then
    gathers with COPY)."""
    for coll, name in ALGORITHMS:
        sched = build(coll, name, 8, 0 if COLLECTIVES[coll].rooted else None)
        ops = np.concatenate([step.traffic.op for step in sched.steps])
        if COLLECTIVES[coll].reduces:
            assert np.any(ops == REDUCE), (coll, name)
        else:
            assert np.all(ops == COPY), (coll, name)


def test_list_names_each_collectives_algorithms(capsys):
    code, out, _ = run(capsys, ["list"])
    assert code == 0
    section = out[out.index("collectives ("):out.index("your own traffic")]
    for coll in OTHERS:
        line = next(x for x in section.splitlines() if x.startswith(f"  {coll} "))
        assert COLLECTIVES[coll].size in line
        for name in algorithm_names(coll):
            assert any(x.startswith(f"      {name}") for x in section.splitlines()), (coll, name)
    assert "      ina [root=0]" in section
    assert "      binomial [root=0]  Binomial tree" in section


HALVES = [(c, n) for c in ("reduce_scatter", "allgather") for n in algorithm_names(c)]


@pytest.mark.parametrize("collective, name", HALVES)
@pytest.mark.parametrize("spec", ["torus:4x4", "torus:8x8", "torus:6x6", "torus:4x4x4",
                                  "torus:8x4", "mesh:4x4"])
def test_halves_prove_their_collective_on_tori(collective, name, spec):
    """The halves keep the allreduce's torus forms (Hamiltonian cycles and
    ports, Swing's and bucket's multiport collectives, recdoub's layout)."""
    from flowemu.topology import parse_topology
    topo = parse_topology(spec)
    p = topo.num_endpoints
    spec_ = get_algorithm(name, collective)
    if name == "recdoub" and p & (p - 1):
        with pytest.raises(ConfigError, match="ranks must be a power of two"):
            spec_.build(p, topo, True)
        return
    try:
        sched = spec_.build(p, topo, True)
    except ConfigError as exc:   # an allreduce that does not run there refuses its halves too
        with pytest.raises(ConfigError, match=str(exc)[:40].replace("(", r"\(")
                           .replace(")", r"\)")):
            get_algorithm(name).build(p, topo, True)
        return
    rep = verify(sched)
    assert rep.collective == collective
    np.testing.assert_allclose(rep.sent.sum(), (p - 1), rtol=1e-12)   # (p−1)/p of n a rank


@pytest.mark.parametrize("collective, name", ALGORITHMS)
def test_block_and_plain_builds_are_the_same_traffic(collective, name):
    from flowemu.algorithms.verify import equivalent_traffic
    for p in (2, 7, 8, 12):
        if pow2_only(collective, name) and p & (p - 1):
            continue
        root = 1 if COLLECTIVES[collective].rooted else None
        equivalent_traffic(build(collective, name, p, root, blocks=False),
                           build(collective, name, p, root, blocks=True))


BINE = [c for c in OTHERS if "bine" in algorithm_names(c)]


def test_bine_serves_every_other_collective():
    assert sorted(BINE) == sorted(OTHERS)


@pytest.mark.parametrize("collective", BINE)
def test_bine_proves_its_collective(collective):
    """On p = 2..64, 100, 101 and 128 where Bine defines the collective
    (gather, scatter and all-to-all: powers of two; tests/algorithms/
    test_bine_any_p.py holds broadcast and reduce to the MPICH port's C)."""
    spec = get_algorithm("bine", collective)
    for p in P_VALUES + [128]:
        if pow2_only(collective, "bine") and p & (p - 1):
            with pytest.raises(ConfigError, match=f"p={p} ranks must be a power of two"):
                spec.build(p, None, False, **spec.parse_options({}))
            continue
        for root in roots(collective, p):
            opts = spec.parse_options({} if root is None else {"root": root})
            assert verify(spec.build(p, None, True, **opts)).collective == collective


def test_bine_peers_and_subtrees():
    """π(r, k) = r ± ρ_k with ρ = 1, −1, 3, −5, 11 (even +, odd −), and the
    subtrees halve at every step (R(r, k) = R(r, k+1) ∪ R(π(r, k), k+1))."""
    from flowemu.algorithms.bine import bine_peer, bine_subtrees
    r = np.arange(32)
    for k, rho in enumerate((1, -1, 3, -5, 11)):
        np.testing.assert_array_equal(bine_peer(r, k, 32),
                                      np.where(r % 2 == 0, r + rho, r - rho) % 32)
    label = bine_subtrees(32)
    for k in range(6):
        sizes = np.bincount(np.unique(label[k], return_inverse=True)[1])
        assert set(sizes) == {32 >> k}
    for k in range(5):
        peer = bine_peer(r, k, 32)
        assert np.all(label[k + 1] != label[k + 1][peer])    # the two halves differ
        assert np.all(label[k] == label[k][peer])            # and make one subtree


def test_bine_tree_sends_far_first():
    """Bine's broadcast tree takes its peers from the far one down (libbine's
    bcast_bine_lat_new): on 256 ranks step j's edges have distance
    |ρ_{7−j}| = 85, 43, 21, 11, 5, 3, 1, 1, and step j has 2^j of them."""
    sched = get_algorithm("bine", "broadcast").build(256, None, False)
    for j, step in enumerate(sched.steps):
        tr = step.traffic
        d = np.abs((tr.dst.astype(int) - tr.src.astype(int) + 128) % 256 - 128)
        assert len(tr.src) == 2 ** j
        assert set(d) == {(85, 43, 21, 11, 5, 3, 1, 1)[j]}


@pytest.mark.slow
@pytest.mark.parametrize("collective, name", [(c, n) for c, n in ALGORITHMS
                                              if not pow2_only(c, n)])
def test_every_algorithm_proves_its_collective_on_1000_ranks(collective, name):
    """The acceptance's p = 1000 for every algorithm defined there (a
    reduce-scatter keeps every origin: ~2 GB and most of a minute each; make
    test-all runs these)."""
    for root in ([0, 999] if COLLECTIVES[collective].rooted else [None]):
        assert verify(build(collective, name, 1000, root)).p == 1000


def _sparbit_oracle(p):
    """Open MPI's ``ompi_coll_base_allgather_intra_sparbit``, loop for loop:
    per step, every (rank, sendto, block sent)."""
    comm_log = math.ceil(math.log(p) / math.log(2))
    distance = 1 << (comm_log - 1)
    last_ignore = (p & -p).bit_length() - 1                   # __builtin_ctz
    ignore_steps = ((~(p >> last_ignore) | 1) << last_ignore) & 0xFFFFFFFF
    data_expected, steps = 1, []
    for _ in range(comm_log):
        exclusion = 1 if (distance & ignore_steps) == distance else 0
        sent = set()
        for rank in range(p):
            sendto = (rank + distance) % p
            for transfer_count in range(data_expected - exclusion):
                sent.add((rank, sendto, (rank - 2 * transfer_count * distance + p) % p))
        steps.append(sent)
        distance >>= 1
        data_expected = (data_expected << 1) - exclusion
    return steps


@pytest.mark.parametrize("p", [2, 3, 5, 6, 7, 8, 12, 13, 16, 100])
def test_sparbit_follows_open_mpi(p):
    """Sparbit's flows are Open MPI's sends (one block a message there, a
    flow of all of them here), and the block counts are 1, then doubling,
    one fewer where Open MPI excludes a step (p = 6: 1, 1, 3)."""
    sched = build("allgather", "sparbit", p)
    want = _sparbit_oracle(p)
    assert len(sched.steps) == len(want)
    for step, sent in zip(sched.steps, want):
        tr = step.traffic
        got = {(int(tr.src[f]), int(tr.dst[f]), int(b)) for f in range(tr.num_flows)
               for b in tr.block_idx[tr.block_ptr[f]:tr.block_ptr[f + 1]]}
        assert got == sent
        np.testing.assert_allclose(tr.share, len(sent) / p / p)
    if p == 6:
        assert [len(s) // p for s in want] == [1, 1, 3]


@pytest.mark.parametrize("collective, name", ALGORITHMS)
def test_memory_shape_bounds_the_schedule(collective, name):
    """The memory check's shape (most flows a step, distinct steps) is an
    upper bound of what the builder makes, so no run is refused for a
    wrong estimate, nor let through (chain and bintree at 16,384 ranks
    were estimated at p(p − 1) flows a step and refused)."""
    from flowemu.algorithms.shapes import schedule_shape
    from flowemu.topology import parse_topology
    for p in (7, 16, 100, 101):
        if pow2_only(collective, name) and p & (p - 1):
            continue
        topo = parse_topology(f"tree:{p}")
        for options in ({}, {"segments": 5}):
            if options and name not in ("chain", "bintree", "dbtree"):
                continue
            sched = build(collective, name, p, 1 if COLLECTIVES[collective].rooted else None,
                          blocks=False, **options)
            flows, distinct = schedule_shape(name, options, p, topo, collective)
            most = max(s.traffic.num_flows for s in sched.steps)
            assert most <= flows, (p, options)
            steps = len({id(s.traffic) for s in sched.steps})
            assert most * steps <= flows * distinct, (p, options)
    if name in ("chain", "bintree", "dbtree"):   # linear in p, not quadratic
        flows, distinct = schedule_shape(name, {"segments": 64}, 16384,
                                         parse_topology("tree:4"), collective)
        assert flows * distinct < 2 * 16384 * (64 + 16384)
