"""The block-level allreduce verifier rejects broken schedules with a message
naming the step, and accepts hand-written correct ones."""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import pytest

from flowemu.algorithms import recdoub, ring
from flowemu.algorithms.base import COPY, REDUCE, Reduction, Schedule, Step, Traffic
from flowemu.algorithms.verify import equivalent_traffic, verify_allreduce
from flowemu.core.errors import ScheduleError

# ------------------------------------------------------------------ helpers

def flows_of(tr: Traffic):
    """Python lists of one step's flows: (src, dst, share, tag, blocks, op)."""
    return [(int(tr.src[f]), int(tr.dst[f]), float(tr.share[f]), int(tr.tag[f]),
             [int(b) for b in tr.block_idx[tr.block_ptr[f]:tr.block_ptr[f + 1]]], int(tr.op[f]))
            for f in range(tr.num_flows)]


def traffic_of(flows) -> Traffic:
    src, dst, share, tag, blocks, op = zip(*flows) if flows else ([],) * 6
    ptr = np.concatenate([[0], np.cumsum([len(b) for b in blocks])]).astype(np.int64)
    idx = np.array([b for bl in blocks for b in bl], dtype=np.int32)
    return Traffic(np.array(src), np.array(dst), np.array(share, float),
                   np.array(tag, np.int16), ptr, idx, np.array(op, np.int8))


def with_step(sched: Schedule, i: int, flows=None, reduction=None, consistent=True) -> Schedule:
    """Replace step ``i``'s flows (and, if ``consistent``, derive its Reduction
    from the REDUCE flows as independent fan-in-2 combinations)."""
    old = sched.steps[i]
    tr = traffic_of(flows) if flows is not None else old.traffic
    if reduction is None:
        reduction = Reduction.from_reduce_flows(tr) if consistent else old.reduction
    steps = list(sched.steps)
    steps[i] = Step(tr, reduction, old.label)
    return dataclasses.replace(sched, steps=tuple(steps))


def step_name(sched: Schedule, i: int) -> str:
    return f"step {i} {sched.steps[i].label!r}"


# ------------------------------------------------------------------ broken schedules

def test_dropped_block_wrong_share():
    sched = recdoub.build(8, None, True, variant="bandwidth")
    flows = flows_of(sched.steps[1].traffic)
    flows[0] = flows[0][:4] + (flows[0][4][1:],) + flows[0][5:]    # drop a block, keep share
    bad = with_step(sched, 1, flows, consistent=False)
    with pytest.raises(ScheduleError, match="step 1 'rs1'.*share") as err:
        verify_allreduce(bad)
    assert "flow 0 (0→2)" in str(err.value)


def test_dropped_block_consistent_share_is_missing_at_end():
    sched = recdoub.build(8, None, True, variant="bandwidth")
    flows = flows_of(sched.steps[0].traffic)
    src, dst, share, tag, blocks, op = flows[0]           # rank 0 → 1, blocks 1, 3, 5, 7
    flows[0] = (src, dst, share * 3 / 4, tag, blocks[1:], op)   # block 1 never reaches rank 1
    bad = with_step(sched, 0, flows)
    with pytest.raises(ScheduleError) as err:
        verify_allreduce(bad)
    msg = str(err.value)
    assert step_name(sched, sched.num_steps - 1) in msg and "end of schedule" in msg
    assert "block 1 lacks the contribution of origin(s) [0]" in msg


def test_ring_dropped_only_block():
    sched = ring.build(5, None, True, ports=1)
    flows = flows_of(sched.steps[2].traffic)
    flows[3] = flows[3][:4] + ([],) + flows[3][5:]
    with pytest.raises(ScheduleError, match="step 2 'rs2'.*share"):
        verify_allreduce(with_step(sched, 2, flows, consistent=False))


def test_duplicated_reduce_flow():
    sched = ring.build(6, None, True, ports=1)
    flows = flows_of(sched.steps[2].traffic)
    flows.append(flows[4])
    with pytest.raises(ScheduleError, match="step 2 'rs2'.*reduced twice") as err:
        verify_allreduce(with_step(sched, 2, flows))
    msg = str(err.value)
    src, dst, _, _, blocks, _ = flows[4]
    assert f"REDUCE into rank {dst} block {blocks[0]}" in msg
    assert f"received it from rank(s) [{src}, {src}]" in msg


def test_latency_wrong_partner_reduces_twice():
    sched = recdoub.build(8, None, True, variant="latency")
    flows = [(r, r ^ 1, 1.0, 0, [0], REDUCE) for r in range(8)]   # step 1 repeats XOR 1
    with pytest.raises(ScheduleError, match="step 1 'x1'.*reduced twice"):
        verify_allreduce(with_step(sched, 1, flows))


def test_wrong_share():
    sched = ring.build(6, None, True, ports=1)
    i = 5 + 3                                          # ag3
    flows = flows_of(sched.steps[i].traffic)
    flows[2] = flows[2][:2] + (2 * flows[2][2],) + flows[2][3:]
    with pytest.raises(ScheduleError, match=r"step 8 'ag3'.*flow 2 \(2→3\) has share"):
        verify_allreduce(with_step(sched, i, flows))


def test_copy_conflict():
    sched = ring.build(6, None, True, ports=1)
    i = 5 + 1                                          # ag1
    flows = flows_of(sched.steps[i].traffic)
    _, dst, share, tag, blocks, _ = flows[1]           # rank 1 → 2
    flows.append((4, dst, share, tag, blocks, COPY))
    with pytest.raises(ScheduleError,
                       match=rf"step 6 'ag1'.*COPY conflict: rank 2 block {blocks[0]}.*\[1, 4\]"):
        verify_allreduce(with_step(sched, i, flows))


def test_copy_and_reduce_into_same_block():
    sched = ring.build(6, None, True, ports=1)
    i = 5 + 1
    flows = flows_of(sched.steps[i].traffic)
    _, dst, share, tag, blocks, _ = flows[1]
    flows.append((4, dst, share, tag, blocks, REDUCE))
    with pytest.raises(ScheduleError, match="step 6 'ag1'.*both copied and reduced"):
        verify_allreduce(with_step(sched, i, flows))


@pytest.mark.parametrize("name,opts,p", [
    ("ring", {"ports": 1}, 6),
    ("ring", {"ports": 2}, 7),
    ("recdoub", {"variant": "bandwidth"}, 6),
    ("recdoub", {"variant": "latency"}, 8),
])
def test_missing_final_step(name, opts, p):
    module = ring if name == "ring" else recdoub
    sched = module.build(p, None, True, **opts)
    cut = dataclasses.replace(sched, steps=sched.steps[:-1])
    with pytest.raises(ScheduleError, match="lacks the contribution") as err:
        verify_allreduce(cut)
    assert step_name(cut, cut.num_steps - 1) in str(err.value)
    assert "after the last step" in str(err.value)


def test_missing_reduction():
    sched = ring.build(6, None, True, ports=1)
    bad = with_step(sched, 0, reduction=Reduction.none())
    with pytest.raises(ScheduleError,
                       match=r"step 0 'rs0'.*declared Reduction of rank 0 .*\(0, 0, 0\) but "):
        verify_allreduce(bad)


def test_reduction_declared_on_copy_step():
    sched = ring.build(6, None, True, ports=1)
    bad = with_step(sched, 5, reduction=Reduction.from_reduce_flows(
        dataclasses.replace(sched.steps[5].traffic, op=np.zeros(6, np.int8))))
    with pytest.raises(ScheduleError, match="step 5 'ag0'.*declared Reduction"):
        verify_allreduce(bad)


def test_reduction_wrong_fanin():
    sched = recdoub.build(8, None, True, variant="latency")
    red = sched.steps[0].reduction
    bad = with_step(sched, 0, reduction=Reduction(red.node, red.share, red.fanin + 1))
    with pytest.raises(ScheduleError, match="step 0 'x0'.*declared Reduction"):
        verify_allreduce(bad)


@pytest.mark.parametrize("mutate,pattern", [
    (lambda f: (f[0], f[0], *f[2:]), "to itself"),
    (lambda f: (f[0], 9, *f[2:]), "dst=9 outside ranks 0..5"),
    (lambda f: (-1, *f[1:]), "src=-1 outside"),
    (lambda f: (*f[:4], [17], f[5]), "block 17 outside 0..5"),
    (lambda f: (f[0], f[1], 2 * f[2], f[3], f[4] * 2, f[5]), "lists block .* more than once"),
])
def test_malformed_flow(mutate, pattern):
    sched = ring.build(6, None, True, ports=1)
    flows = flows_of(sched.steps[3].traffic)
    flows[2] = mutate(flows[2])
    with pytest.raises(ScheduleError, match="step 3 'rs3'.*" + pattern):
        verify_allreduce(with_step(sched, 3, flows, consistent=False))


def test_needs_blocks():
    with pytest.raises(ScheduleError, match="blocks=True"):
        verify_allreduce(ring.build(4, None, False, ports=1))
    sched = ring.build(4, None, True, ports=1)
    tr = sched.steps[2].traffic
    steps = list(sched.steps)
    steps[2] = Step(Traffic(tr.src, tr.dst, tr.share, tr.tag), steps[2].reduction, "rs2")
    with pytest.raises(ScheduleError, match="step 2 'rs2'.*no block content"):
        verify_allreduce(dataclasses.replace(sched, steps=tuple(steps)))


def test_bad_block_partition():
    sched = ring.build(4, None, True, ports=1)
    with pytest.raises(ScheduleError, match="sum to"):
        verify_allreduce(dataclasses.replace(sched, block_share=np.full(4, 0.3)))
    with pytest.raises(ScheduleError, match="shape"):
        verify_allreduce(dataclasses.replace(sched, block_share=np.full(5, 0.2)))


def test_empty_schedule():
    sched = ring.build(4, None, True, ports=1)
    with pytest.raises(ScheduleError, match="no steps"):
        verify_allreduce(dataclasses.replace(sched, steps=()))


# ------------------------------------------------------------------ correct hand-written schedules

def reduce_broadcast(p: int, aggregated: bool) -> Schedule:
    """Rank 0 reduces every vector in one step (fan-in p), then copies the
    result to all: a correct allreduce whose Reduction must be aggregated."""
    gather = traffic_of([(r, 0, 1.0, 0, [0], REDUCE) for r in range(1, p)])
    red = (Reduction(np.array([0]), np.array([1.0]), np.array([p])) if aggregated
           else Reduction.from_reduce_flows(gather))
    bcast = traffic_of([(0, r, 1.0, 0, [0], COPY) for r in range(1, p)])
    return Schedule("test", "reduce-bcast", p,
                    (Step(gather, red, "gather"), Step(bcast, Reduction.none(), "bcast")),
                    1, np.array([1.0]))


def test_aggregated_fanin_is_required():
    report = verify_allreduce(reduce_broadcast(5, aggregated=True))
    assert report.steps[0].max_gamma == 4.0 and report.steps[0].max_delta == 6.0
    assert report.steps[0].max_received == 4.0 and report.steps[1].max_sent == 4.0
    with pytest.raises(ScheduleError, match="step 0 'gather'.*declared Reduction of rank 0"):
        verify_allreduce(reduce_broadcast(5, aggregated=False))


def test_unequal_blocks():
    """Blocks of different sizes: shares are checked against the partition."""
    p, block_share = 2, np.array([0.25, 0.75])
    rs = traffic_of([(0, 1, 0.75, 0, [1], REDUCE), (1, 0, 0.25, 0, [0], REDUCE)])
    ag = traffic_of([(0, 1, 0.25, 0, [0], COPY), (1, 0, 0.75, 0, [1], COPY)])
    sched = Schedule("test", "halves", p, (Step(rs, Reduction.from_reduce_flows(rs), "rs0"),
                                           Step(ag, Reduction.none(), "ag0")), 2, block_share)
    report = verify_allreduce(sched)
    np.testing.assert_allclose(report.sent, [1.0, 1.0])
    np.testing.assert_allclose(report.reduced, [0.25, 0.75])


def test_report_stats():
    sched = ring.build(8, None, True, ports=2)
    report = verify_allreduce(sched)
    assert report.num_blocks == 16 and report.num_steps == 14
    first = report.steps[0]
    assert first.label == "rs0" and first.flows == 16
    assert first.max_sent == pytest.approx(2 / 16) and first.max_reduced == pytest.approx(2 / 16)
    assert report.steps[-1].max_reduced == 0.0


def test_verify_is_fast():
    sched = ring.build(64, None, True, ports=2)
    verify_allreduce(sched)                    # warm-up
    start = time.perf_counter()
    verify_allreduce(sched)
    elapsed = time.perf_counter() - start
    assert elapsed < 1.0, f"verify p=64 with 128 blocks took {elapsed:.2f}s"


# ------------------------------------------------------------------ equivalent_traffic

def test_equivalent_traffic_detects_differences():
    a = ring.build(6, None, True, ports=1)
    equivalent_traffic(a, ring.build(6, None, False, ports=1))
    flows = flows_of(a.steps[1].traffic)
    flows[0] = flows[0][:2] + (flows[0][2] * (1 + 1e-15),) + flows[0][3:]
    with pytest.raises(ScheduleError, match="step 1 'rs1'.*share"):
        equivalent_traffic(a, with_step(a, 1, flows))
    with pytest.raises(ScheduleError, match="step 1 'rs1'.*Reduction"):
        equivalent_traffic(a, with_step(a, 1, reduction=Reduction.none()))
    with pytest.raises(ScheduleError, match="steps 10 vs 9"):
        equivalent_traffic(a, dataclasses.replace(a, steps=a.steps[:-1]))
    b = ring.build(6, None, False, ports=2)
    with pytest.raises(ScheduleError):
        equivalent_traffic(a, b)


# ------------------------------------------------------------------ buffers

def two_buffer_schedule(bufs_step0, copy_back=True) -> Schedule:
    """p = 2, one block, two buffers. Step 0: rank 1 keeps its own value in
    buffer 0 and writes own + rank 0's into buffer 1 (entry buffers
    ``bufs_step0``); rank 0 reduces rank 1's into buffer 0. Step 1: rank 0
    copies its result into rank 1's buffer 0."""
    tr0 = Traffic(np.array([0, 1]), np.array([1, 0]), np.array([1.0, 1.0]), None,
                  np.array([0, 1, 2]), np.array([0, 0], np.int32),
                  np.array([REDUCE, REDUCE], np.int8),
                  np.array([bufs_step0, (0, 0, 0)], np.int8))
    red0 = Reduction(np.array([1, 0]), np.array([1.0, 1.0]), np.array([2, 2]))
    steps = [Step(tr0, red0, "fork")]
    if copy_back:
        tr1 = Traffic(np.array([0]), np.array([1]), np.array([1.0]), None, np.array([0, 1]),
                      np.array([0], np.int32), np.array([COPY], np.int8))
        steps.append(Step(tr1, Reduction.none(), "copy"))
    return Schedule("hand", "", 2, tuple(steps), 1, np.array([1.0]), num_buffers=2)


def test_two_buffers_hand_written():
    """A REDUCE may write base + data into another buffer; the result must be
    in buffer 0 (buffer 1 holding the full sum does not count)."""
    rep = verify_allreduce(two_buffer_schedule((0, 1, 0)))
    assert rep.num_steps == 2
    with pytest.raises(ScheduleError, match=r"after the last step 0 'fork'.*rank 1 block 0 "
                                            r"lacks the contribution of origin\(s\) \[0\]"):
        verify_allreduce(two_buffer_schedule((0, 1, 0), copy_back=False))


def test_two_buffers_bad_entries_named():
    with pytest.raises(ScheduleError, match=r"step 0 'fork': block entry 0 names buffers "
                                            r"\[0, 2, 0\]; the schedule has buffers 0..1"):
        verify_allreduce(two_buffer_schedule((0, 2, 0)))
    # reducing straight into buffer 0 needs no copy back; reading rank 0's
    # empty buffer 1 instead delivers nothing
    assert verify_allreduce(two_buffer_schedule((0, 0, 0), copy_back=False)).num_steps == 1
    with pytest.raises(ScheduleError, match=r"rank 1 block 0 lacks the contribution of "
                                            r"origin\(s\) \[0\]"):
        verify_allreduce(two_buffer_schedule((1, 0, 0), copy_back=False))
    one = dataclasses.replace(two_buffer_schedule((0, 1, 0)), num_buffers=1)
    with pytest.raises(ScheduleError, match="buffers 0..0"):
        verify_allreduce(one)


def test_two_buffers_base_must_agree():
    tr = Traffic(np.array([0, 2]), np.array([1, 1]), np.array([1.0, 1.0]), None,
                 np.array([0, 1, 2]), np.array([0, 0], np.int32),
                 np.array([REDUCE, REDUCE], np.int8), np.array([(0, 1, 0), (0, 1, 1)], np.int8))
    red = Reduction(np.array([1]), np.array([1.0]), np.array([3]))
    sched = Schedule("hand", "", 3, (Step(tr, red, "s"),), 1, np.array([1.0]), num_buffers=2)
    with pytest.raises(ScheduleError, match=r"step 0 's': REDUCEs into rank 1 block 0 buffer 1 "
                                            "add to different base buffers"):
        verify_allreduce(sched)
