"""Bucket allreduce (Swing paper §2.3.4, §5.2 Fig. 9): proven allreduce on
1-D to 4-D tori, block-free == block builds, 2D concurrent collectives with
at most one ring per link direction, synchronized phases on non-square tori."""

from __future__ import annotations

import math

import numpy as np
import pytest

import flowemu.algorithms.bucket  # noqa: F401  (registers "bucket")
from flowemu.algorithms import get_algorithm, ring
from flowemu.algorithms.base import COPY, REDUCE
from flowemu.algorithms.verify import equivalent_traffic, verify_allreduce
from flowemu.core.errors import ConfigError
from flowemu.core.network import Network
from flowemu.engine.profiles import profile
from flowemu.topology.torus import Torus

bucket = get_algorithm("bucket")

SHAPES = [(4, 4), (8, 8), (2, 4), (4, 8), (16, 4), (6, 6), (3, 5), (4, 4, 4), (2, 4, 8),
          (4, 4, 4, 4)]


def shape_id(dims):
    return "x".join(map(str, dims))


def axis_of(dims, src, dst):
    """The one axis along which each flow moves (−1 if not a neighbour)."""
    a = np.array(np.unravel_index(src, dims))
    b = np.array(np.unravel_index(dst, dims))
    d = np.array(dims)[:, None]
    step = (b - a) % d
    moved = step != 0
    ok = (moved.sum(0) == 1) & np.all((step == 0) | (step == 1) | (step == d - 1), axis=0)
    return np.where(ok, np.argmax(moved, axis=0), -1)


def check_verified(p, topo, **opts):
    with_blocks = bucket.build(p, topo, True, **opts)
    report = verify_allreduce(with_blocks)
    without = bucket.build(p, topo, False, **opts)
    assert without.num_blocks is None and all(not s.traffic.has_blocks for s in without.steps)
    assert without.info == with_blocks.info and without.variant == with_blocks.variant
    equivalent_traffic(with_blocks, without)
    return with_blocks, without, report


def expected_steps(dims, ports):
    if ports == 1:
        return 2 * sum(d - 1 for d in dims)
    return 2 * len(dims) * (max(dims) - 1)


# ------------------------------------------------------------------ correctness

#: the 4-D torus on every port is the slow proof (~8 s): make test-all runs it
PROOF_CASES = [pytest.param(dims, ports, id=f"{shape_id(dims)}-{ports}",
                            marks=[pytest.mark.slow] if len(dims) == 4 and ports == "max" else [])
               for dims in SHAPES for ports in ("max", 1)]


@pytest.mark.parametrize("dims, ports", PROOF_CASES)
def test_bucket_torus_is_allreduce(dims, ports):
    topo = Torus(dims)
    p = topo.num_nodes
    sched, _without, report = check_verified(p, topo, ports=ports)
    num = 2 * len(dims) if ports == "max" else 1
    assert sched.info == {"p_eff": p, "collectives": num, "dims": dims}
    assert sched.variant == f"ports={num}" and sched.num_blocks == num * p
    assert sched.num_steps == expected_steps(dims, ports)
    # minimal bytes (Ψ = 1): 2(p−1)/p sent and received, (p−1)/p reduced at fan-in 2
    np.testing.assert_allclose(report.sent, 2 * (p - 1) / p, rtol=1e-12)
    np.testing.assert_allclose(report.received, 2 * (p - 1) / p, rtol=1e-12)
    np.testing.assert_allclose(report.reduced, (p - 1) / p, rtol=1e-12)
    for step in sched.steps:
        tr = step.traffic
        assert np.all(axis_of(dims, tr.src, tr.dst) >= 0), "every flow is a neighbour exchange"
        assert np.all(tr.op == (REDUCE if step.label.startswith("rs") else COPY))


@pytest.mark.parametrize("p", range(2, 65))
@pytest.mark.parametrize("ports", ["max", 1])
def test_bucket_on_1d_torus(p, ports):
    """D = 1: one ring (ports=1) or the bidirectional ring (2 collectives)."""
    sched, without, _ = check_verified(p, Torus((p,)), ports=ports)
    assert sched.num_steps == 2 * (p - 1)
    assert len({id(s.traffic) for s in without.steps}) == 1
    # same flows as ring allreduce with as many ports
    twin = ring.build(p, None, False, ports=2 if ports == "max" else 1)
    a, b = without.steps[0].traffic, twin.steps[0].traffic
    for x, y in ((a.src, b.src), (a.dst, b.dst), (a.share, b.share), (a.tag, b.tag)):
        np.testing.assert_array_equal(x, y)


def test_bucket_without_topology_is_one_dimensional():
    sched = bucket.build(10, None, True)
    verify_allreduce(sched)
    assert sched.info["dims"] == (10,) and sched.info["collectives"] == 2


# ------------------------------------------------------------------ paper examples

def test_fig9_bucket_2x4():
    """Fig. 9 / §5.2 on the 2x4 torus (2 rows, 4 columns): four collectives,
    tag 0 starts horizontally (+), tag 1 vertically (+), tags 2 and 3 the
    same in the − direction. The vertical rings need one step, the
    horizontal ones three; the collectives move to the next dimension
    together, so after step 0 the vertical bidirectional ring waits while
    the horizontal one finishes, then they swap dimensions."""
    dims = (2, 4)
    sched = bucket.build(8, Torus(dims), False)
    assert sched.num_steps == 12                         # 2D(d_max − 1)
    labels = [s.label for s in sched.steps]
    assert labels == ["rs0.0", "rs0.1", "rs0.2", "rs1.0", "rs1.1", "rs1.2",
                      "ag1.0", "ag1.1", "ag1.2", "ag0.0", "ag0.1", "ag0.2"]
    horizontal, vertical = 1, 0                          # axes of the row-major ids
    expected = [  # per step: {tag: axis}
        {0: horizontal, 2: horizontal, 1: vertical, 3: vertical},
        {0: horizontal, 2: horizontal},
        {0: horizontal, 2: horizontal},
        {0: vertical, 2: vertical, 1: horizontal, 3: horizontal},
        {1: horizontal, 3: horizontal},
        {1: horizontal, 3: horizontal},
    ]
    expected = expected + expected[3:] + expected[:3]    # allgather: reverse phase order
    for step, want in zip(sched.steps, expected):
        tr = step.traffic
        got = {}
        for t in np.unique(tr.tag):
            axes = np.unique(axis_of(dims, tr.src[tr.tag == t], tr.dst[tr.tag == t]))
            assert len(axes) == 1
            got[int(t)] = int(axes[0])
        assert got == want, step.label
    # node 0's first step: right (1), left (3), down (4) twice (size-2 ring)
    tr = sched.steps[0].traffic
    first = {int(t): int(d) for t, s, d in zip(tr.tag, tr.src, tr.dst) if s == 0}
    assert first == {0: 1, 1: 4, 2: 3, 3: 4}
    # shares: 1/(2D·d) in the first phase, 1/(2D·p) in the second
    assert np.all(tr.share[tr.tag == 0] == 1 / (4 * 4))
    assert np.all(tr.share[tr.tag == 1] == 1 / (4 * 2))
    assert np.all(sched.steps[3].traffic.share == 1 / (4 * 8))


def test_square_bucket_row_then_column():
    """§2.3.4 on a×a, one collective: reduce-scatter along rows (a−1 steps of
    n(a−1)/a in all), then columns on n/a; allgather columns, then rows."""
    a = 4
    sched = bucket.build(16, Torus((a, a)), True, ports=1)
    axes = [int(np.unique(axis_of((a, a), s.traffic.src, s.traffic.dst))[0]) for s in sched.steps]
    assert axes == [1] * 3 + [0] * 3 + [0] * 3 + [1] * 3
    assert [float(s.traffic.share[0]) for s in sched.steps] == \
        [1 / 4] * 3 + [1 / 16] * 3 + [1 / 16] * 3 + [1 / 4] * 3
    r = np.arange(16)
    np.testing.assert_array_equal(sched.steps[0].traffic.dst, (r // 4) * 4 + (r % 4 + 1) % 4)


@pytest.mark.parametrize("dims,ports,steps", [
    ((2, 4), 1, 8), ((16, 4), "max", 60), ((16, 4), 1, 36), ((3, 5), "max", 16),
    ((2, 4, 8), "max", 42), ((2, 4, 8), 1, 22), ((8, 8), "max", 28), ((4, 4, 4, 4), "max", 24),
], ids=lambda x: shape_id(x) if isinstance(x, tuple) else str(x))
def test_step_counts(dims, ports, steps):
    """§5.2: with 2D collectives every phase lasts d_max − 1 steps (latency
    deficiency of a d_max^D torus); one collective needs 2Σ(d_i − 1)."""
    topo = Torus(dims)
    assert bucket.build(topo.num_nodes, topo, False, ports=ports).num_steps == steps


# ------------------------------------------------------------------ congestion

def flows_per_link(topo, traffic):
    routes = topo.route(traffic.src, traffic.dst, ecmp="split")
    flow_of = np.repeat(np.arange(traffic.num_flows), np.diff(routes.flow_ptr))
    count = np.bincount(routes.link, minlength=topo.num_links)
    load = np.bincount(routes.link, weights=routes.frac * traffic.share[flow_of],
                       minlength=topo.num_links)
    return count, load


@pytest.mark.parametrize("dims", [(4, 4), (8, 8), (3, 5), (16, 4), (3, 4, 5), (4, 4, 4, 4)],
                         ids=shape_id)
def test_one_ring_per_link_direction(dims):
    """§2.3.4: each of the 2D collectives uses its own (dimension, direction)
    in every step, so with ecmp=split every link direction carries at most
    one flow (Ξ = 1); in the full steps every port is busy."""
    topo = Torus(dims)
    sched = bucket.build(topo.num_nodes, topo, False)
    seen = set()
    for step in sched.steps:
        if id(step.traffic) in seen:
            continue
        seen.add(id(step.traffic))
        count, _load = flows_per_link(topo, step.traffic)
        assert count.max() == 1
        if step.traffic.num_flows == 2 * len(dims) * topo.num_nodes:
            assert np.all(count == 1)


def test_size_two_dimension_load():
    """2x4: the + and − vertical rings both go 0 → 4; split routing puts
    half of each on each cable, one flow's worth per link direction."""
    topo = Torus((2, 4))
    sched = bucket.build(8, topo, False)
    _, load = flows_per_link(topo, sched.steps[0].traffic)
    assert load.max() == pytest.approx(1 / 8, rel=1e-12)


def test_engine_closed_form_square():
    """8x8, 4 collectives, split: every step is one hop with one flow per
    link direction, so step time = link+hop latency + share·n/B."""
    topo = Torus((8, 8))
    sched = bucket.build(64, topo, False)
    n = np.array([32.0, 2.0**20, 2.0**28])
    B, LAT = 50e9, 400e-9
    expected = 2 * 7 * (LAT + n / (4 * 8) / B) + 2 * 7 * (LAT + n / (4 * 64) / B)
    np.testing.assert_allclose(profile(sched, topo, Network()).times(n), expected, rtol=1e-9)


# ------------------------------------------------------------------ options and scale

def test_ports_option():
    assert bucket.parse_options({}) == {"ports": "max"}
    for raw, value in [("max", "max"), ("1", 1), (1, 1), (" MAX ", "max")]:
        assert bucket.parse_options({"ports": raw}) == {"ports": value}
    for raw in (2, "4", "many", True):
        with pytest.raises(ConfigError, match="ports"):
            bucket.parse_options({"ports": raw})
    with pytest.raises(ConfigError, match="p="):
        bucket.build(1, None, False)


@pytest.mark.parametrize("dims", [(128, 128), (256, 64), (16, 32, 32), (8, 8, 16, 16),
                                  (16384,)], ids=shape_id)
def test_large_builds_share_traffic(dims):
    topo = Torus(dims)
    p = topo.num_nodes
    sched = bucket.build(p, topo, False)
    assert sched.num_steps == 2 * len(dims) * (max(dims) - 1)
    distinct = {id(s.traffic) for s in sched.steps}
    # one Traffic per (phase, set of active collectives); allgathers reuse them
    assert len(distinct) <= len(dims) * len(set(dims))
    assert sum(s.traffic.num_flows for s in sched.steps[:1]) == 2 * len(dims) * p
    assert math.isclose(sum(float(s.traffic.share[0]) for s in sched.steps
                            if s.label.startswith("rs") and s.traffic.tag[0] == 0),
                        (p - 1) / p / (2 * len(dims)), rel_tol=1e-12)
