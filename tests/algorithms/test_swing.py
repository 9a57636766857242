"""Swing allreduce (Swing paper, De Sensi et al., §3, §4, Appendix A): every
schedule is proven an allreduce by the block-level verifier, block-free builds
equal block builds, the paper's worked examples (Fig. 1, 3, 4, 5) and the
§4.1 link-load claim hold, and closed-form byte/step counts match."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flowemu.algorithms import get_algorithm, swing  # importing swing registers it
from flowemu.algorithms.base import COPY, REDUCE
from flowemu.algorithms.verify import equivalent_traffic, verify_allreduce
from flowemu.core.errors import ConfigError, ScheduleError
from flowemu.core.network import Network
from flowemu.engine.profiles import profile
from flowemu.topology.torus import Torus

VARIANTS = ["bandwidth", "latency"]
PORTS = ["max", 1]
RING_P = list(range(2, 65))
SHAPES = [(4, 4), (8, 8), (2, 4), (4, 8), (16, 4), (6, 6), (3, 5), (4, 4, 4), (2, 4, 8),
          (4, 4, 4, 4)]
SHAPE_IDS = ["x".join(map(str, s)) for s in SHAPES]


def build(shape, variant, ports, blocks):
    """``shape`` is a rank count (1-D torus of p) or a tuple of torus dims."""
    if isinstance(shape, tuple):
        topo = Torus(shape)
        return swing.build(topo.num_nodes, topo, blocks, variant=variant, ports=ports)
    return swing.build(shape, None, blocks, variant=variant, ports=ports)


def is_pow2(n):
    return n & (n - 1) == 0


def log2(n):
    return n.bit_length() - 1


def flows_of(traffic, node, tag=None):
    """{tag: dst} of the flows ``node`` sends in one step."""
    mask = traffic.src == node
    if tag is not None:
        mask &= traffic.tag == tag
    return dict(zip(traffic.tag[mask].tolist(), traffic.dst[mask].tolist()))


def flows_per_link(topo, traffic):
    routes = topo.route(traffic.src, traffic.dst, ecmp="split")
    return np.bincount(routes.link, minlength=topo.num_links)


# ------------------------------------------------------------------ correctness

@pytest.mark.parametrize("ports", PORTS)
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("p", RING_P)
def test_ring_schedule_is_allreduce(p, variant, ports):
    sched = build(p, variant, ports, True)
    report = verify_allreduce(sched)
    assert report.num_steps == sched.num_steps
    assert sched.info["dims"] == (p,)
    assert sched.info["collectives"] == (2 if ports == "max" else 1)


#: the proof of the 4-D torus's bandwidth variant on every port is the slow one
#: (~11 s): make test-all runs it, make test the other 4-D cases
PROOF_CASES = [pytest.param(shape, variant, ports, id=f"{sid}-{variant}-{ports}",
                            marks=[pytest.mark.slow] if (len(shape) == 4 and variant == "bandwidth"
                                                         and ports == "max") else [])
               for shape, sid in zip(SHAPES, SHAPE_IDS) for variant in VARIANTS for ports in PORTS]


@pytest.mark.parametrize("shape, variant, ports", PROOF_CASES)
def test_torus_schedule_is_allreduce(shape, variant, ports):
    sched = build(shape, variant, ports, True)
    verify_allreduce(sched)
    assert sched.info["dims"] == shape
    assert sched.info["collectives"] == (2 * len(shape) if ports == "max" else 1)
    assert set(np.unique(sched.steps[0].traffic.tag)) <= set(range(sched.info["collectives"]))


@pytest.mark.parametrize("ports", PORTS)
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("shape", RING_P + SHAPES, ids=[str(p) for p in RING_P] + SHAPE_IDS)
def test_blockless_equals_block_build(shape, variant, ports):
    with_blocks = build(shape, variant, ports, True)
    without = build(shape, variant, ports, False)
    assert without.num_blocks is None and without.block_share is None
    assert all(not s.traffic.has_blocks for s in without.steps)
    assert without.info == with_blocks.info and without.variant == with_blocks.variant
    equivalent_traffic(with_blocks, without)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(2, 7), min_size=1, max_size=3).filter(lambda d: np.prod(d) <= 96),
       st.sampled_from(VARIANTS), st.sampled_from(PORTS))
def test_random_shapes_are_allreduces(dims, variant, ports):
    shape = tuple(dims)
    sched = build(shape, variant, ports, True)
    verify_allreduce(sched)
    equivalent_traffic(sched, build(shape, variant, ports, False))


# ------------------------------------------------------------------ peers (eq. 2)

def test_rho_and_delta():
    assert [swing.rho(s) for s in range(7)] == [1, -1, 3, -5, 11, -21, 43]
    for s in range(20):
        assert swing.rho(s) == sum((-2) ** i for i in range(s + 1))
        assert swing.delta(s) == (2 ** (s + 1) - (-1) ** (s + 1)) // 3 <= 2 ** s


def test_fig1_peers_and_link_sharing_16_nodes():
    """Fig. 1 (16-node 1-D torus): node 0 talks to 1, then 15 (−1), then 3,
    sending n/2, n/4, n/8; with one port every link carries at most one
    message per direction in step 1 and two in step 2, where Rabenseifner's
    recursive doubling puts two messages on link 1→2 and four on 3→4."""
    topo = Torus((16,))
    sched = build(16, "bandwidth", 1, False)
    steps = sched.steps
    assert [flows_of(steps[s].traffic, 0)[0] for s in range(4)] == [1, 15, 3, 11]
    assert [flows_of(steps[s].traffic, 1)[0] for s in range(3)] == [0, 2, 14]
    for s in range(4):
        np.testing.assert_array_equal(steps[s].traffic.share, 1 / 2 ** (s + 1))
    swing_load = [flows_per_link(topo, steps[s].traffic).max() for s in range(3)]
    assert swing_load == [1, 1, 2]
    recdoub = get_algorithm("recdoub").build(16, topo, False, variant="bandwidth")
    rd_load = [flows_per_link(topo, recdoub.steps[s].traffic) for s in range(3)]
    assert [int(x.max()) for x in rd_load] == [1, 2, 4]
    assert rd_load[1][topo.link_id(1, 0, 1)] == 2 and rd_load[2][topo.link_id(3, 0, 1)] == 4


def test_fig3_odd_node_on_7_nodes():
    """Fig. 3 / §3.2: nodes 0–5 run Swing on a ring of 6; node 6 exchanges n/7
    with nodes 0, 1, 2 at step 0, with 3, 4 at step 1 and with 5 at the last
    step (and the reverse order in the allgather)."""
    sched = build(7, "bandwidth", 1, True)
    assert sched.num_steps == 6
    groups = [[0, 1, 2], [3, 4], [5]]
    for s, group in enumerate(groups):
        tr, red = sched.steps[s].traffic, sched.steps[s].reduction
        out = tr.src == 6
        into = tr.dst == 6
        assert sorted(tr.dst[out]) == group and sorted(tr.src[into]) == group
        np.testing.assert_allclose(tr.share[out | into], 1 / 7, rtol=1e-15)
        # node 6 sends each partner that partner's own block, gets back block 6
        for f in np.flatnonzero(out):
            assert tr.block_idx[tr.block_ptr[f]:tr.block_ptr[f + 1]].tolist() == [tr.dst[f]]
        for f in np.flatnonzero(into):
            assert tr.block_idx[tr.block_ptr[f]:tr.block_ptr[f + 1]].tolist() == [6]
        # one combination of all contributions received in the step (fan-in 1+k)
        assert red.fanin[red.node == 6].tolist() == [1 + len(group)]
        # the other six run eq. 2 on a ring of 6
        swing_flows = ~(out | into)
        np.testing.assert_array_equal(tr.dst[swing_flows],
                                      swing.peer(tr.src[swing_flows], s, 6))
    for j, group in enumerate(reversed(groups)):
        tr = sched.steps[3 + j].traffic
        assert sorted(tr.dst[tr.src == 6]) == group
        assert np.all(tr.op == COPY)
    report = verify_allreduce(sched)
    np.testing.assert_allclose(report.sent, 2 * 6 / 7, rtol=1e-12)


def test_fig4_first_step_4x4():
    """Fig. 4: in the first step node 0 exchanges with 1 (plain, horizontal),
    4 (plain, vertical), 3 and 12 (the mirrored ones), n/8 each."""
    sched = build((4, 4), "bandwidth", "max", False)
    tr = sched.steps[0].traffic
    # tag k: plain collective starting at dimension k (dim 0 vertical, stride 4);
    # tag 2 + k: its mirror
    assert flows_of(tr, 0) == {0: 4, 1: 1, 2: 12, 3: 3}
    assert flows_of(tr, 5) == {0: 1, 1: 4, 2: 9, 3: 6}    # odd coordinates swing back
    np.testing.assert_array_equal(tr.share, 1 / 8)
    np.testing.assert_array_equal(np.bincount(tr.tag), [16] * 4)


def test_fig5_dimension_exhaustion_2x4():
    """Fig. 5 / §4.2: on 2x4 the size-2 dimension is done after one step; the
    collectives skip it and all four run their last step horizontally."""
    assert swing.collective_dim_orders([1, 2], 0) == [0, 1, 1]
    assert swing.collective_dim_orders([1, 2], 1) == [1, 0, 1]
    sched = build((2, 4), "bandwidth", "max", False)
    assert sched.num_steps == 6
    same_row = [np.all(s.traffic.src // 4 == s.traffic.dst // 4) for s in sched.steps[:3]]
    assert same_row == [False, False, True]
    assert flows_of(sched.steps[0].traffic, 0) == {0: 4, 1: 1, 2: 4, 3: 3}
    assert flows_of(sched.steps[1].traffic, 0) == {0: 1, 1: 4, 2: 3, 3: 4}
    assert flows_of(sched.steps[2].traffic, 0) == {0: 3, 1: 3, 2: 1, 3: 1}
    np.testing.assert_array_equal(sched.steps[2].traffic.share, 1 / 32)


def test_steps_per_dim_matches_schedule():
    for d in range(2, 40):
        for variant in VARIANTS:
            sched = build(d, variant, 1, False)
            assert sched.info["steps_per_dim"] == (swing.steps_per_dim(d, variant),)
    assert swing.steps_per_dim(7, "bandwidth") == 3 and swing.steps_per_dim(7, "latency") == 4
    assert swing.steps_per_dim(16, "bandwidth") == swing.steps_per_dim(16, "latency") == 4
    assert swing.peer(0, 0, 4, mirrored=True) == 3 and swing.peer(1, 1, 4, mirrored=True) == 0


def test_dimension_orders_square_and_rectangular():
    assert swing.collective_dim_orders([2, 2, 2], 1) == [1, 2, 0, 1, 2, 0]
    assert swing.collective_dim_orders([2, 4], 0) == [0, 1, 0, 1, 1, 1]
    assert swing.collective_dim_orders([3, 1], 1) == [1, 0, 0, 0]


@pytest.mark.parametrize("dims", [(8, 8), (16, 16), (8, 8, 8)], ids=["8x8", "16x16", "8x8x8"])
def test_square_torus_link_load_is_delta(dims):
    """§4.1: with all 2D collectives running, a bandwidth step s puts δ(σ(s))
    flows on the busiest link direction (the ρ offsets of plain and mirrored
    collectives cover each link once per unit of distance)."""
    topo = Torus(dims)
    sched = build(dims, "bandwidth", "max", False)
    half = sched.num_steps // 2
    for s in range(half):
        bound = swing.delta(s // len(dims))
        load = flows_per_link(topo, sched.steps[s].traffic)
        assert load.max() == bound, (s, load.max(), bound)
        assert flows_per_link(topo, sched.steps[2 * half - 1 - s].traffic).max() == bound


# ------------------------------------------------------------------ closed forms

POW2_SHAPES = [4, 16, 64, (4, 4), (8, 8), (2, 4), (16, 4), (4, 4, 4), (2, 4, 8)]


@pytest.mark.parametrize("ports", PORTS)
@pytest.mark.parametrize("shape", POW2_SHAPES, ids=str)
def test_power_of_two_closed_forms(shape, ports):
    bw = build(shape, "bandwidth", ports, True)
    lat = build(shape, "latency", ports, True)
    p = bw.p
    assert bw.num_steps == 2 * log2(p) and lat.num_steps == log2(p)
    assert [s.label for s in bw.steps] == \
        [f"rs{s}" for s in range(log2(p))] + [f"ag{s}" for s in range(log2(p))]
    report = verify_allreduce(bw)
    np.testing.assert_allclose(report.sent, 2 * (p - 1) / p, rtol=1e-12)
    np.testing.assert_allclose(report.received, 2 * (p - 1) / p, rtol=1e-12)
    np.testing.assert_allclose(report.reduced, (p - 1) / p, rtol=1e-12)
    assert report.gamma_path == pytest.approx((p - 1) / p, rel=1e-12)
    # data halves every reduce-scatter step and doubles every allgather step
    for s in range(log2(p)):
        assert report.steps[s].max_sent == pytest.approx(2.0 ** -(s + 1), rel=1e-12)
        assert report.steps[-1 - s].max_sent == pytest.approx(2.0 ** -(s + 1), rel=1e-12)
    lat_report = verify_allreduce(lat)
    np.testing.assert_allclose(lat_report.sent, log2(p), rtol=1e-12)
    np.testing.assert_allclose(lat_report.reduced, log2(p), rtol=1e-12)


@pytest.mark.parametrize("shape", [6, 7, 10, 12, 24, 33, 63, (6, 6), (3, 5), (6, 4), (5, 3, 2)],
                         ids=str)
def test_no_block_sent_twice_any_count(shape):
    """§3.2 / A.2: for any node count each rank sends each block other than
    its own exactly once in the reduce-scatter, so every rank sends
    2(p−1)/p of the vector in all (no extra data) and folds p−1 foreign
    contributions into its block (Σ(f−1)·share = (p−1)/p; with odd p some of
    them arrive together, at fan-in 3 or more), and a rank never gives away
    its own block."""
    sched = build(shape, "bandwidth", "max", True)
    p = sched.p
    report = verify_allreduce(sched)
    np.testing.assert_allclose(report.sent, 2 * (p - 1) / p, rtol=1e-12)
    gamma = sum(np.bincount(s.reduction.node, weights=(s.reduction.fanin - 1) * s.reduction.share,
                            minlength=p) for s in sched.steps)
    np.testing.assert_allclose(gamma, (p - 1) / p, rtol=1e-12)
    if all(d % 2 == 0 for d in sched.info["dims"]):
        np.testing.assert_allclose(report.reduced, (p - 1) / p, rtol=1e-12)
    num_coll = sched.info["collectives"]
    half = sched.num_steps // 2
    sent_blocks = [[] for _ in range(p)]
    for step in sched.steps[:half]:
        tr = step.traffic
        for f in range(tr.num_flows):
            sent_blocks[tr.src[f]] += tr.block_idx[tr.block_ptr[f]:tr.block_ptr[f + 1]].tolist()
    for r in range(p):
        assert len(sent_blocks[r]) == len(set(sent_blocks[r])) == num_coll * (p - 1)
    assert sched.num_steps == 2 * sum(sched.info["steps_per_dim"])


def test_even_non_power_of_two_keeps_last_occurrence():
    """A.2 on 10 nodes: Listing 1's sets overlap (2^4 − 1 = 15 > 9 blocks);
    sending each block only at the last step that lists it leaves 2, 4, 2, 1
    blocks per step, the same for every rank."""
    sched = build(10, "bandwidth", 1, False)
    counts = [np.unique(np.round(s.traffic.share * 10)).tolist() for s in sched.steps[:4]]
    assert counts == [[2.0], [4.0], [2.0], [1.0]]
    assert [len(e) for e in swing._send_offsets(10)] == [2, 4, 2, 1]


def test_latency_fold_non_power_of_two():
    """latency on 6 nodes: 0→1 and 2→3 fold in (pre), 4 ranks swing, the
    result is copied back (post)."""
    sched = build(6, "latency", 1, True)
    assert sched.num_steps == 2 + 2
    pre, post = sched.steps[0].traffic, sched.steps[-1].traffic
    assert list(zip(pre.src, pre.dst)) == [(0, 1), (2, 3)] and np.all(pre.op == REDUCE)
    assert list(zip(post.src, post.dst)) == [(1, 0), (3, 2)] and np.all(post.op == COPY)
    np.testing.assert_array_equal(pre.share, 1.0)
    # the swing steps run eq. 2 on the virtual ranks 0..3 = nodes 1, 3, 4, 5
    swing_nodes = {int(x) for s in sched.steps[1:3] for x in s.traffic.src}
    assert swing_nodes == {1, 3, 4, 5}
    verify_allreduce(sched)


def test_remapped_blocks_are_contiguous():
    """§3.1.1: with the logical remapping every message (reduce-scatter and
    allgather) carries one contiguous range of block ids."""
    for shape in [16, 64, (4, 4), (2, 4, 8), (8, 4)]:
        sched = build(shape, "bandwidth", "max", True)
        for step in sched.steps:
            tr = step.traffic
            for f in range(tr.num_flows):
                blk = np.sort(tr.block_idx[tr.block_ptr[f]:tr.block_ptr[f + 1]])
                assert blk[-1] - blk[0] + 1 == len(blk), (shape, step.label, f)


def test_allgather_reuses_reduce_scatter_traffic():
    sched = build((8, 8), "bandwidth", "max", False)
    half = sched.num_steps // 2
    for s in range(half):
        assert sched.steps[half * 2 - 1 - s].traffic is sched.steps[s].traffic
    assert len({id(s.reduction) for s in sched.steps[half:]}) == 1
    assert len({id(s.traffic) for s in build(7, "bandwidth", "max", False).steps}) == 3


# ------------------------------------------------------------------ scale

@pytest.mark.parametrize("dims", [(16384,), (128, 128), (32, 32, 16), (16383,), (100, 100)],
                         ids=["16384", "128x128", "32x32x16", "16383", "100x100"])
def test_blockless_build_at_scale(dims):
    topo = Torus(dims)
    p = topo.num_nodes
    sched = swing.build(p, topo, False, variant="bandwidth")
    sent = np.zeros(p)
    for step in sched.steps:
        tr = step.traffic
        assert tr.src.dtype == np.int32 and np.all(tr.src != tr.dst)
        sent += np.bincount(tr.src, weights=tr.share, minlength=p)
    np.testing.assert_allclose(sent, 2 * (p - 1) / p, rtol=1e-9)
    lat = swing.build(p, topo, False, variant="latency")
    assert lat.num_steps == sum(lat.info["steps_per_dim"])


def test_profile_runs_on_torus():
    topo = Torus((8, 8))
    for variant in VARIANTS:
        prof = profile(build((8, 8), variant, "max", False), topo, Network())
        assert prof.num_steps == (12 if variant == "bandwidth" else 6)
        assert np.all(prof.times([1.0, 2.0 ** 20]) > 0)


# ------------------------------------------------------------------ options and errors

@pytest.mark.parametrize("raw,value", [("max", "max"), ("MAX", "max"), (" max ", "max"),
                                       ("1", 1), (1, 1), (np.int64(1), 1)])
def test_ports_option_accepts(raw, value):
    assert get_algorithm("swing").parse_options({"ports": raw})["ports"] == value


@pytest.mark.parametrize("raw", [2, "2", "two", True, 1.0, 0])
def test_ports_option_rejects(raw):
    with pytest.raises(ConfigError, match="ports"):
        get_algorithm("swing").parse_options({"ports": raw})


def test_defaults_and_errors():
    spec = get_algorithm("swing")
    assert spec.parse_options({}) == {"variant": "auto", "ports": "max"}
    assert spec.auto_choices() == ("latency", "bandwidth")
    with pytest.raises(ScheduleError, match="auto"):
        swing.build(16, None, False)
    with pytest.raises(ConfigError, match="variant"):
        swing.build(16, None, False, variant="fast")
    with pytest.raises(ConfigError, match="unknown option"):
        swing.build(16, None, False, variant="latency", pipeline=2)
    for bad in (1, 0, -4, 2.5, True):
        with pytest.raises(ConfigError, match="ranks"):
            swing.build(bad, None, False, variant="latency")


def test_misspelt_options_and_values_get_a_suggestion():
    """A misspelt option name or choice names the closest allowed one; a
    name close to none gets no guess, and every error lists what is
    allowed."""
    spec = get_algorithm("swing")
    with pytest.raises(ConfigError, match=r"unknown option\(s\) varaint \(did you mean "
                                          r"'variant'\?\); allowed: ports, variant"):
        spec.parse_options({"varaint": "bandwidth"})
    with pytest.raises(ConfigError, match=r"variant='bandwith' is not allowed \(did you mean "
                                          r"'bandwidth'\?\); allowed: auto, latency"):
        spec.parse_options({"variant": "bandwith"})
    with pytest.raises(ConfigError) as err:
        spec.parse_options({"xyz": "1"})
    assert "did you mean" not in str(err.value) and "allowed: ports, variant" in str(err.value)


def test_unsupported_shape_is_explained():
    """Every torus with dimensions >= 2 is supported; a logical shape with a
    dimension of 1 (only a hand-made topology can give one) is refused."""
    fake = SimpleNamespace(grid=(1, 8))
    with pytest.raises(ConfigError, match=r"1x8.*size 1.*>= 2"):
        swing.build(8, fake, False, variant="bandwidth")


def test_shape_follows_topology():
    """A topology whose node count differs from p gives a 1-D torus of p; a
    mesh (no wraparound) too."""
    assert build(16, "bandwidth", "max", False).info["dims"] == (16,)
    sched = swing.build(12, Torus((4, 4)), False, variant="bandwidth")
    assert sched.info["dims"] == (12,)
    sched = swing.build(16, Torus((4, 4), wrap=False), False, variant="bandwidth")
    assert sched.info["dims"] == (16,)
