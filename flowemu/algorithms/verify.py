"""Block-level proof that a schedule computes its collective.

:func:`verify` replays a schedule built with ``blocks=True`` and proves the
postcondition of the collective it declares (``Schedule.collective``; the
collectives and their blocks are in :mod:`.collectives`);
:func:`verify_allreduce` proves an allreduce. For an allreduce the
state is ``count[rank, block, origin]``: how many times the contribution of
rank ``origin`` to ``block`` is contained in ``rank``'s copy of that block.
Initially every rank holds only its own contribution to every block
(``count[r, b, r] = 1``). Steps are bulk synchronous, so every flow of a step
reads its sender's state as it was when the step started. A REDUCE flow adds
the sender's counts into the receiver's (a count above 1 means a contribution
was reduced twice); a COPY flow overwrites them. At the end every rank must
hold every block with every origin exactly once.

The other collectives start and end elsewhere (``owner(b)`` is the rank
block ``b`` belongs to, ``dest(b)`` an all-to-all block's receiver):

==============  ===============================  ================================
collective      initially                        finally (exactly once)
==============  ===============================  ================================
reduce_scatter  every rank, every block, own      rank owner(b): block b, every origin
reduce          every rank, every block, own      the root: every block, every origin
allgather       owner(b) holds block b            every rank: block b from owner(b)
gather          owner(b) holds block b            the root: block b from owner(b)
broadcast       the root holds every block        every rank: block b from the root
scatter         the root holds every block        rank owner(b): block b from the root
alltoall        owner(b) holds block b            rank dest(b): block b from owner(b)
==============  ===============================  ================================

A collective that does not reduce (allgather, gather, broadcast, scatter,
all-to-all) may not send a REDUCE flow.

A schedule whose ranks keep several partial sums of one block at once
(``Schedule.num_buffers`` K > 1) addresses them by buffer: the state is
``count[rank, block, buffer, origin]``, a block entry names the sender's
buffer it reads and the receiver's buffer it writes (a REDUCE writes
``base + data``, its base buffer usually the written one), and at the end
buffer 0 must hold the allreduce; the other buffers are scratch.

The replay also checks each step's declared :class:`~.base.Reduction` against
the work the REDUCE flows imply: a rank that receives ``k`` REDUCE flows into
the same block in one step combines ``1 + k`` vectors of that block's size
(fan-in ``1 + k``; ``k = 1`` is the usual fan-in 2). Per rank and step the
total reduced share and the GenModel coefficients Σ(f−1)·share (γ) and
Σ(f+1)·share (δ) must agree to a relative 1e-12.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.errors import ConfigError, ScheduleError
from .base import COPY, REDUCE, Reduction, Schedule, Step, Traffic
from .collectives import Collective, get_collective

__all__ = ["StepStats", "VerifyReport", "equivalent_traffic", "verify", "verify_allreduce"]

#: relative tolerance of share comparisons
RTOL = 1e-12
#: absolute floor of share comparisons (a 1e-15 fraction of the vector)
ATOL = 1e-15


@dataclass(frozen=True)
class StepStats:
    """Per-step facts of a verified schedule (shares are fractions of n)."""

    label: str
    flows: int
    max_sent: float       #: max over ranks of the share a rank sends in the step
    max_received: float   #: max over ranks of the share a rank receives
    max_reduced: float    #: max over ranks of the share a rank reduces
    max_gamma: float      #: max over ranks of Σ(f−1)·share (GenModel γ coefficient)
    max_delta: float      #: max over ranks of Σ(f+1)·share (GenModel δ coefficient)


@dataclass(frozen=True)
class VerifyReport:
    """Result of :func:`verify_allreduce`.

    ``sent``/``received``/``reduced`` are per-rank totals over the schedule
    (float64[p], fractions of n); the ``*_path`` values sum each step's
    maximum over ranks (the bulk-synchronous critical path).
    """

    p: int
    num_blocks: int
    steps: tuple[StepStats, ...]
    sent: np.ndarray
    received: np.ndarray
    reduced: np.ndarray
    num_buffers: int = 1   #: partial sums a rank may keep of one block
    collective: str = "allreduce"   #: the collective proved

    @property
    def num_steps(self) -> int:
        return len(self.steps)

    @property
    def sent_path(self) -> float:
        return float(sum(s.max_sent for s in self.steps))

    @property
    def received_path(self) -> float:
        return float(sum(s.max_received for s in self.steps))

    @property
    def gamma_path(self) -> float:
        return float(sum(s.max_gamma for s in self.steps))

    @property
    def delta_path(self) -> float:
        return float(sum(s.max_delta for s in self.steps))


def _close(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return np.abs(a - b) <= RTOL * np.maximum(np.abs(a), np.abs(b)) + ATOL


def _list(values, limit: int = 8) -> str:
    values = [int(v) for v in values]
    text = ", ".join(str(v) for v in values[:limit])
    return text + (f", … ({len(values)} in all)" if len(values) > limit else "")


class _Checker:
    """Replays one schedule; :meth:`fail` raises with the step named."""

    def __init__(self, schedule: Schedule):
        self.schedule = schedule
        self.p = int(schedule.p)
        self.name = f"{schedule.algorithm}/{schedule.variant} p={schedule.p}"
        self.num_buffers = int(getattr(schedule, "num_buffers", 1))

    def fail(self, msg: str, i: int | None = None, label: str = ""):
        if i is None:
            raise ScheduleError(f"{self.name}: {msg}")
        raise ScheduleError(f"{self.name}: step {i} {label!r}: {msg}")

    # -------------------------------------------------------------- partition
    def block_partition(self, total_share: float = 1.0) -> np.ndarray:
        sched = self.schedule
        if self.p < 1:
            self.fail(f"p={self.p} must be >= 1")
        if sched.num_blocks is None or sched.block_share is None:
            self.fail("no block partition (num_blocks/block_share); build the schedule "
                      "with blocks=True to verify it")
        block_share = np.asarray(sched.block_share, np.float64)
        if block_share.shape != (sched.num_blocks,):
            self.fail(f"block_share has shape {block_share.shape}, expected "
                      f"({sched.num_blocks},) for num_blocks={sched.num_blocks}")
        if sched.num_blocks < 1 or np.any(~(block_share > 0)):
            self.fail("every block must have a positive share")
        total = block_share.sum()
        if not _close(total, total_share):
            self.fail(f"block shares sum to {total:.17g}, not {total_share:g}")
        return block_share

    # -------------------------------------------------------------- one step
    def entries(self, i: int, step: Step, block_share: np.ndarray):
        """Validate a step's traffic; return its (flow, block, buffers)
        entries: ``(flow, block, src_buf, dst_buf, base_buf)``."""
        tr, label, p, num_blocks = step.traffic, step.label, self.p, len(block_share)
        if not isinstance(tr, Traffic) or not isinstance(step.reduction, Reduction):
            self.fail("a step needs a Traffic and a Reduction", i, label)
        if not tr.has_blocks:
            self.fail("traffic has no block content; build with blocks=True", i, label)
        num_flows = tr.num_flows
        src, dst, ptr, idx, op = tr.src, tr.dst, tr.block_ptr, tr.block_idx, tr.op
        for name, arr in (("src", src), ("dst", dst)):
            bad = np.flatnonzero((arr < 0) | (arr >= p))
            if len(bad):
                f = bad[0]
                self.fail(f"flow {f} ({src[f]}→{dst[f]}) has {name}={arr[f]} outside ranks "
                          f"0..{p - 1}", i, label)
        loop = np.flatnonzero(src == dst)
        if len(loop):
            self.fail(f"flow {loop[0]} sends from rank {src[loop[0]]} to itself", i, label)
        if ptr.shape != (num_flows + 1,) or ptr[0] != 0 or ptr[-1] != len(idx) \
                or np.any(np.diff(ptr) < 0):
            self.fail(f"block_ptr is not a CSR pointer over {num_flows} flows and "
                      f"{len(idx)} block entries", i, label)
        if op is None or op.shape != (num_flows,) or np.any((op != REDUCE) & (op != COPY)):
            self.fail("op must hold REDUCE or COPY for every flow", i, label)
        flow = np.repeat(np.arange(num_flows), np.diff(ptr))
        bad = np.flatnonzero((idx < 0) | (idx >= num_blocks))
        if len(bad):
            f = flow[bad[0]]
            self.fail(f"flow {f} ({src[f]}→{dst[f]}) carries block {idx[bad[0]]} outside "
                      f"0..{num_blocks - 1}", i, label)
        sbuf, dbuf, bbuf = self.buffers(i, label, tr, len(idx))
        # a flow reads a (block, sender's buffer) once and may deliver it into
        # several of the receiver's buffers (each a target of its own)
        target = (flow.astype(np.int64) * num_blocks + idx) * self.num_buffers + dbuf
        uniq, counts = np.unique(target, return_counts=True)
        if len(uniq) != len(target):
            key = int(uniq[np.argmax(counts > 1)]) // self.num_buffers
            f, b = divmod(key, num_blocks)
            self.fail(f"flow {f} ({src[f]}→{dst[f]}) lists block {b} more than once", i, label)
        read = (flow.astype(np.int64) * num_blocks + idx) * self.num_buffers + sbuf
        first = np.unique(read, return_index=True)[1]
        carried = np.bincount(flow[first], weights=block_share[idx[first]], minlength=num_flows)
        bad = np.flatnonzero(~_close(carried, tr.share))
        if len(bad):
            f = bad[0]
            blocks_f = idx[ptr[f]:ptr[f + 1]]
            self.fail(f"flow {f} ({src[f]}→{dst[f]}) has share {tr.share[f]:.17g} but its "
                      f"blocks [{_list(blocks_f)}] sum to {carried[f]:.17g}", i, label)
        return flow, idx, sbuf, dbuf, bbuf

    def buffers(self, i: int, label: str, tr: Traffic, entries: int):
        """``(src_buf, dst_buf, base_buf)`` of every block entry (int64)."""
        bufs = tr.block_buffers
        if bufs is None:
            zero = np.zeros(entries, np.int64)
            return zero, zero, zero
        if bufs.shape != (entries, 3):
            self.fail(f"block_buffers has shape {bufs.shape}, expected ({entries}, 3): the "
                      "sender's, receiver's and base buffer of every block entry", i, label)
        bad = np.flatnonzero(np.any((bufs < 0) | (bufs >= self.num_buffers), axis=1))
        if len(bad):
            self.fail(f"block entry {bad[0]} names buffers {bufs[bad[0]].tolist()}; the "
                      f"schedule has buffers 0..{self.num_buffers - 1} (num_buffers)", i, label)
        bufs = bufs.astype(np.int64)
        return bufs[:, 0], bufs[:, 1], bufs[:, 2]

    def where(self, key: int, num_blocks: int) -> str:
        """``rank R block B`` (plus ``buffer K`` when there are several) of a state row."""
        row, buf = divmod(int(key), self.num_buffers)
        node, b = divmod(row, num_blocks)
        return f"rank {node} block {b}" + (f" buffer {buf}" if self.num_buffers > 1 else "")

    def replay(self, i: int, step: Step, state: np.ndarray, entries, num_blocks: int):
        """Apply one step to ``state`` (int16[p·B·K, p] for B blocks and K
        buffers); return the REDUCE targets (row keys) and how many REDUCE
        entries hit each. Every read sees the start-of-step state."""
        flow, block, sbuf, dbuf, bbuf = entries
        tr, label, nbuf = step.traffic, step.label, self.num_buffers
        e_src, e_dst = tr.src[flow].astype(np.int64), tr.dst[flow].astype(np.int64)
        src_key = (e_src * num_blocks + block) * nbuf + sbuf
        dst_key = (e_dst * num_blocks + block) * nbuf + dbuf
        base_key = (e_dst * num_blocks + block) * nbuf + bbuf
        data = state[src_key]                 # copy: the senders' start-of-step state
        is_reduce = tr.op[flow] == REDUCE
        copy_keys = dst_key[~is_reduce]
        uniq, counts = np.unique(copy_keys, return_counts=True)
        if np.any(counts > 1):
            key = int(uniq[np.argmax(counts > 1)])
            senders = e_src[~is_reduce][copy_keys == key]
            self.fail(f"COPY conflict: {self.where(key, num_blocks)} is copied from ranks "
                      f"[{_list(senders)}] in the same step", i, label)
        red_keys = dst_key[is_reduce]
        both = np.intersect1d(uniq, red_keys)
        if len(both):
            self.fail(f"{self.where(both[0], num_blocks)} is both copied and reduced into in "
                      f"the same step", i, label)
        red_targets, inverse, red_fanin = np.unique(red_keys, return_inverse=True,
                                                    return_counts=True)
        if len(red_keys):
            bases = np.zeros(len(red_targets), np.int64)
            bases[inverse] = base_key[is_reduce]
            mixed = np.flatnonzero(bases[inverse] != base_key[is_reduce])
            if len(mixed):
                self.fail(f"REDUCEs into {self.where(red_keys[mixed[0]], num_blocks)} add to "
                          "different base buffers in the same step", i, label)
            before = state[bases]
            red_data = data[is_reduce]
            after = before.astype(np.int32)   # the sums in int32: no count can wrap
            np.add.at(after, inverse, red_data)
            over = np.argwhere(after > 1)
            if len(over):
                t, origin = over[0]
                hit = (inverse == t) & (red_data[:, origin] > 0)
                senders = e_src[is_reduce][hit]
                node = int(red_targets[t]) // nbuf // num_blocks
                self.fail(f"REDUCE into {self.where(red_targets[t], num_blocks)} counts origin "
                          f"{origin}'s contribution {after[t, origin]} times (rank {node} held "
                          f"it {before[t, origin]}×, received it from rank(s) "
                          f"[{_list(senders)}]): a contribution reduced twice", i, label)
            state[red_targets] = after
        if len(copy_keys):
            state[copy_keys] = data[~is_reduce]
        return red_targets, red_fanin

    def check_reduction(self, i: int, step: Step, red_targets, red_fanin, block_share):
        """Declared Reduction == the work implied by the REDUCE flows; returns
        per-rank (total, γ, δ) coefficients."""
        p, num_blocks, label = self.p, len(block_share), step.label
        nodes, blocks = np.divmod(red_targets // self.num_buffers, num_blocks)
        w = block_share[blocks]
        k = red_fanin.astype(np.float64)            # incoming flows per block: fan-in 1 + k
        implied = (np.bincount(nodes, weights=w, minlength=p),
                   np.bincount(nodes, weights=k * w, minlength=p),
                   np.bincount(nodes, weights=(k + 2) * w, minlength=p))
        red = step.reduction
        rn, rs, rf = red.node, red.share, red.fanin
        if not (len(rn) == len(rs) == len(rf)):
            self.fail("Reduction node/share/fanin lengths differ", i, label)
        bad = np.flatnonzero((rn < 0) | (rn >= p) | (rf < 2) | ~(rs >= 0))
        if len(bad):
            j = bad[0]
            self.fail(f"Reduction entry {j} (rank {rn[j]}, share {rs[j]:.17g}, fan-in {rf[j]}) "
                      f"needs a rank in 0..{p - 1}, share >= 0 and fan-in >= 2", i, label)
        rf = rf.astype(np.float64)
        declared = (np.bincount(rn, weights=rs, minlength=p),
                    np.bincount(rn, weights=(rf - 1) * rs, minlength=p),
                    np.bincount(rn, weights=(rf + 1) * rs, minlength=p))
        ok = _close(declared[0], implied[0]) & _close(declared[1], implied[1]) \
            & _close(declared[2], implied[2])
        if not ok.all():
            n = int(np.flatnonzero(~ok)[0])
            d = ", ".join(f"{x[n]:.17g}" for x in declared)
            m = ", ".join(f"{x[n]:.17g}" for x in implied)
            self.fail(f"declared Reduction of rank {n} (share, Σ(f−1)·share, Σ(f+1)·share) = "
                      f"({d}) but its REDUCE flows imply ({m})", i, label)
        return implied

    # -------------------------------------------------------------- collectives
    def placement(self, coll: Collective, num_blocks: int, block_share: np.ndarray):
        """``(owner, dest)`` int64[num_blocks] of a personalised collective's
        blocks (``dest`` for all-to-all only, else None), checked: ranks in
        range, and each rank's (each pair's) blocks worth ``1/p``."""
        sched, p = self.schedule, self.p
        per_rank = num_blocks // (p * p if coll.per_rank_total else p)
        if sched.block_owner is None and (
                per_rank < 1 or num_blocks % (p * p if coll.per_rank_total else p)):
            need = "p²·m" if coll.per_rank_total else "p·m"
            self.fail(f"{num_blocks} blocks cannot be split evenly among {p} ranks "
                      f"(a {coll.name} needs {need} blocks or a block_owner)")
        owner = self.ranks_of("block_owner", "belongs to", num_blocks,
                              np.arange(num_blocks) // max(num_blocks // p, 1))
        dest = None
        if coll.per_rank_total:
            dest = self.ranks_of("block_dest", "goes to", num_blocks,
                                 (np.arange(num_blocks) // max(num_blocks // (p * p), 1)) % p)
            part = np.bincount(owner * p + dest, weights=block_share, minlength=p * p)
            what = "pair (sender, receiver)"
        else:
            part = np.bincount(owner, weights=block_share, minlength=p)
            what = "rank"
        bad = np.flatnonzero(~_close(part, 1.0 / p))
        if len(bad):
            who = divmod(int(bad[0]), p) if coll.per_rank_total else int(bad[0])
            self.fail(f"the blocks of {what} {who} are worth {part[bad[0]]:.17g} of n, not "
                      f"1/p = {1.0 / p:.17g} (a {coll.name} gives each {what} an equal part)")
        return owner, dest

    def ranks_of(self, field: str, verb: str, num_blocks: int, default) -> np.ndarray:
        """The schedule's ``field`` (a rank a block; ``default`` when None),
        checked, as int64."""
        given = getattr(self.schedule, field)
        if given is None:
            return np.asarray(default, np.int64)
        arr = np.asarray(given)
        if arr.shape != (num_blocks,) or not np.issubdtype(arr.dtype, np.integer):
            self.fail(f"{field} must be int[{num_blocks}] (a rank for every block), not "
                      f"{arr.dtype}{list(arr.shape)}")
        arr = arr.astype(np.int64)
        bad = np.flatnonzero((arr < 0) | (arr >= self.p))
        if len(bad):
            self.fail(f"block {bad[0]} {verb} rank {arr[bad[0]]}, outside 0..{self.p - 1}")
        return arr

    def initial_state(self, coll: Collective, num_blocks: int, owner) -> np.ndarray:
        """int16[p·B·K, p]: who holds what before the first step."""
        p, root = self.p, int(self.schedule.root)
        blocks = np.arange(num_blocks)
        if coll.reduces:
            state = np.zeros((p, num_blocks, self.num_buffers, p), np.int16)
            ranks = np.arange(p)
            state[ranks[:, None], blocks[None, :], 0, ranks[:, None]] = 1
            return state.reshape(p * num_blocks * self.num_buffers, p)
        # nothing is combined: a block only ever holds its one source's data,
        # so one count a (rank, block, buffer) is the whole state
        state = np.zeros((p, num_blocks, self.num_buffers, 1), np.int16)
        if coll.owned and coll.name != "scatter":
            state[owner, blocks, 0, 0] = 1
        else:                       # broadcast, scatter: the root holds everything
            state[root, blocks, 0, 0] = 1
        return state.reshape(p * num_blocks * self.num_buffers, 1)

    def final_check(self, state: np.ndarray, num_blocks: int, coll: Collective, owner=None,
                    dest=None):
        """Fail unless buffer 0 of the ``(rank, block)`` pairs the collective
        fills holds what it must, each origin exactly once."""
        p, root = self.p, int(self.schedule.root)
        steps = self.schedule.steps
        where = (f"after the last step {len(steps) - 1} {steps[-1].label!r} (end of schedule)"
                 if steps else "the schedule has no steps")
        result = state[::self.num_buffers].reshape(p, num_blocks, -1)   # buffer 0
        blocks = np.arange(num_blocks)
        name = coll.name
        if name in ("allreduce", "allgather", "broadcast"):
            ranks, blk = np.repeat(np.arange(p), num_blocks), np.tile(blocks, p)
        elif name in ("reduce", "gather"):
            ranks, blk = np.full(num_blocks, root), blocks
        elif name in ("reduce_scatter", "scatter"):
            ranks, blk = owner, blocks
        else:                       # alltoall
            ranks, blk = dest, blocks
        got = result[ranks, blk]
        bad = np.flatnonzero(np.any(got != 1, axis=1))
        if not len(bad):
            return
        i = int(bad[0])
        if coll.reduces:
            missing = np.flatnonzero(got[i] == 0)
            extra = np.flatnonzero(got[i] > 1)
            what = []
            if len(missing):
                what.append(f"lacks the contribution of origin(s) [{_list(missing)}]")
            if len(extra):
                what.append(f"holds origin(s) [{_list(extra)}] more than once")
            what, done = " and ".join(what), "fully reduced"
        else:
            source = root if name in ("broadcast", "scatter") else int(owner[blk[i]])
            what = (f"lacks the data of rank {source}" if got[i, 0] == 0
                    else f"holds the data of rank {source} {got[i, 0]} times")
            done = "delivered"
        of = "" if name == "allreduce" else f" of the {name}"
        self.fail(f"{where}: rank {int(ranks[i])} block {int(blk[i])} {what}; {len(bad)} "
                  f"(rank, block) pair(s){of} are not {done}")


def verify_allreduce(schedule: Schedule) -> VerifyReport:
    """Prove that ``schedule`` (built with ``blocks=True``) is an allreduce
    (:func:`verify` with ``collective="allreduce"``, whatever the schedule
    declares)."""
    return verify(schedule, "allreduce")


def verify(schedule: Schedule, collective: str | None = None) -> VerifyReport:
    """Prove that ``schedule`` (built with ``blocks=True``) computes its
    collective (``collective``, default ``schedule.collective``).

    Parameters
    ----------
    schedule : Schedule
        Steps with block content (``block_ptr``/``block_idx``/``op``).
    collective : str, optional
        One of :data:`flowemu.algorithms.collectives.COLLECTIVES`.

    Returns
    -------
    VerifyReport
        Per-step statistics and per-rank byte totals.

    Raises
    ------
    ScheduleError
        Naming the step index and label, the rank, the block and the origin
        of the first violation: malformed flows (rank out of range, src ==
        dst, block out of range or listed twice, share != sum of its blocks'
        shares), a contribution reduced twice, two COPYs (or a COPY and a
        REDUCE) into one block in one step, a REDUCE in a collective that
        does not reduce, a declared Reduction that differs from the REDUCE
        flows' work, blocks that do not give each rank an equal part, or a
        final state that misses the collective's postcondition.
    ConfigError
        An unknown collective.
    """
    coll = get_collective(schedule.collective if collective is None else collective)
    chk = _Checker(schedule)
    p = chk.p
    block_share = chk.block_partition(float(p) if coll.per_rank_total else 1.0)
    num_blocks = len(block_share)
    if chk.num_buffers < 1:
        chk.fail(f"num_buffers={chk.num_buffers} must be >= 1")
    if coll.rooted and not 0 <= int(schedule.root) < p:
        raise ConfigError(f"root: {schedule.root} is not a rank of {p} (0..{p - 1})")
    owner, dest = chk.placement(coll, num_blocks, block_share) if coll.owned else (None, None)
    # int16 counts: every count is 0 or 1 between steps (more fails at once)
    state = chk.initial_state(coll, num_blocks, owner)

    stats, sent, received, reduced = [], np.zeros(p), np.zeros(p), np.zeros(p)
    for i, step in enumerate(schedule.steps):
        entries = chk.entries(i, step, block_share)
        if not coll.reduces and np.any(step.traffic.op == REDUCE):
            f = int(np.flatnonzero(step.traffic.op == REDUCE)[0])
            chk.fail(f"flow {f} ({step.traffic.src[f]}→{step.traffic.dst[f]}) is a REDUCE; a "
                     f"{coll.name} reduces nothing (its flows are COPY)", i, step.label)
        targets, fanin = chk.replay(i, step, state, entries, num_blocks)
        total, gamma, delta = chk.check_reduction(i, step, targets, fanin, block_share)
        tr = step.traffic
        s_node = np.bincount(tr.src, weights=tr.share, minlength=p)
        r_node = np.bincount(tr.dst, weights=tr.share, minlength=p)
        sent += s_node
        received += r_node
        reduced += total
        stats.append(StepStats(step.label, tr.num_flows, float(s_node.max()),
                               float(r_node.max()), float(total.max()), float(gamma.max()),
                               float(delta.max())))
    chk.final_check(state, num_blocks, coll, owner, dest)
    return VerifyReport(p, num_blocks, tuple(stats), sent, received, reduced, chk.num_buffers,
                        coll.name)


def _sorted_flows(tr: Traffic):
    tag = np.zeros(tr.num_flows, np.int16) if tr.tag is None else tr.tag
    order = np.lexsort((tr.share, tag, tr.dst, tr.src))
    return tr.src[order], tr.dst[order], tr.share[order], tag[order]


def _sorted_reduction(red: Reduction):
    order = np.lexsort((red.share, red.fanin, red.node))
    return red.node[order], red.fanin[order], red.share[order]


def equivalent_traffic(sched_a: Schedule, sched_b: Schedule) -> None:
    """Raise :class:`ScheduleError` unless both schedules have the same ranks,
    step labels and, step by step, the same flows (src, dst, share, tag; a
    missing tag counts as 0) and Reduction entries up to order. Comparisons
    are exact: block and non-block builds must be bit-identical."""
    name = f"{sched_a.algorithm}/{sched_a.variant} vs {sched_b.algorithm}/{sched_b.variant}"
    if sched_a.p != sched_b.p or sched_a.num_steps != sched_b.num_steps:
        raise ScheduleError(f"{name}: p {sched_a.p} vs {sched_b.p}, steps "
                            f"{sched_a.num_steps} vs {sched_b.num_steps}")
    for i, (sa, sb) in enumerate(zip(sched_a.steps, sched_b.steps)):
        if sa.label != sb.label:
            raise ScheduleError(f"{name}: step {i} is labelled {sa.label!r} vs {sb.label!r}")
        fa, fb = _sorted_flows(sa.traffic), _sorted_flows(sb.traffic)
        for field, x, y in zip(("src", "dst", "share", "tag"), fa, fb):
            if x.shape != y.shape or not np.array_equal(x, y):
                raise ScheduleError(f"{name}: step {i} {sa.label!r}: flows differ in {field} "
                                    f"({len(x)} vs {len(y)} flows)")
        ra, rb = _sorted_reduction(sa.reduction), _sorted_reduction(sb.reduction)
        for field, x, y in zip(("node", "fanin", "share"), ra, rb):
            if x.shape != y.shape or not np.array_equal(x, y):
                raise ScheduleError(f"{name}: step {i} {sa.label!r}: Reduction differs in "
                                    f"{field} ({len(x)} vs {len(y)} entries)")
