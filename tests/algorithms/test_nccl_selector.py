"""``nccl``: what NCCL 2.30.7 runs, by NCCL's own tuning model (tuning.cc
ncclTopoTuneModel / ncclTopoGetAlgoTime) for p nodes of one H100 and one
NIC: the allreduce's tree/ring crossover worked out here by hand from
NCCL's formula, every collective's choice, the segments of a pipeline from
NCCL's chunks, a run with ``nccl`` is the chosen algorithm's run (named in
``variant``), and every choice verifies."""

from __future__ import annotations

import numpy as np
import pytest

import flowemu
from flowemu.algorithms import get_algorithm
from flowemu.algorithms.collectives import COLLECTIVES
from flowemu.algorithms.selectors import (
    line_segments,
    nccl_channels,
    nccl_choice,
    nccl_segments,
    nccl_step_latency,
    nccl_times,
    nic_bandwidth,
)
from flowemu.algorithms.verify import verify
from flowemu.core.network import Network
from flowemu.topology import parse_topology
from tests.helpers.selectors import assert_runs_are_the_choices

GBPS400 = 50e9          # bytes/s of a 400 Gb/s NIC


def test_channels_of_one_gpu_and_one_nic():
    # 400 Gb/s = 50 GB/s, behind PCIe Gen5 x16 (48 GB/s): one channel of
    # 48 GB/s (sm90SpeedArrayInter[0]) fills the PCIe link, then
    # ncclTopoDupChannels doubles it into 2 x 24
    assert nccl_channels(GBPS400) == (2, 24.0)
    # 200 Gb/s = 25 GB/s: one channel of 24 (12 x 2 is no better), not doubled (< 25)
    assert nccl_channels(25e9) == (1, 24.0)
    # 800 Gb/s: still the PCIe link's 48 GB/s
    assert nccl_channels(100e9) == (2, 24.0)


@pytest.mark.parametrize("p, log_bucket, factor", [(8, 14, 0.6), (16, 17, 0.9)])
def test_allreduce_tree_to_ring_crossover(p, log_bucket, factor):
    """Tree LL128 against ring LL128, the pair that meets in NCCL's model
    at these p, written out from tuning.cc: C = 2 channels of s = 24 GB/s,
    a Hopper and an Intel CPU, more than two nodes."""
    C, s = 2, 24.0
    bus = C * s
    # ring: busBw = min(0.92 busBw, C * perChMaxRingLL128Bw), x nRanks / nsteps
    ring_bw = min(0.92 * bus, C * 36.7) * p / (2 * (p - 1))
    # ring: baseLatency 14.0 + 2(p-1) network steps of hwLatencies[NET][TREE][LL128] = 8.5
    ring_lat = 14.0 + 2 * (p - 1) * 8.5
    # tree: min(0.92 busBw, C * perChMaxTreeBw 36.0), LL128: x120/128 capped at
    # C * 29.0; x0.85 (one GPU a node: pattern TREE); x0.5 to algorithm bandwidth;
    # x treeCorrectionFactor[LL128][log2(n / 64)]
    tree_bw = min(min(0.92 * bus, C * 36.0) * 120 / 128, C * 29.0) * 0.85 * 0.5 * factor
    tree_lat = 14.0 + 2 * int(np.log2(p)) * 8.5
    # lat_t + n / (1000 bw_t) = lat_r + n / (1000 bw_r)
    n_star = (ring_lat - tree_lat) * 1000 / (1 / tree_bw - 1 / ring_bw)
    assert 2 ** (log_bucket + 6) <= 0.99 * n_star < 1.01 * n_star < 2 ** (log_bucket + 7)
    below, above = int(0.99 * n_star), int(1.01 * n_star)
    text, note = nccl_choice("allreduce", p, below, GBPS400)
    assert text.startswith("dbtree:segments=") and note.endswith("tree LL128")
    assert nccl_choice("allreduce", p, above, GBPS400) == ("ring:ports=1",
                                                          "NCCL 2.30.7: ring LL128")
    # the model's own times agree with the hand-written ones at the crossover
    t = nccl_times("allreduce", p, n_star, GBPS400)
    assert t[("tree", "LL128")] == pytest.approx(tree_lat + int(n_star) / (1000 * tree_bw))
    assert t[("ring", "LL128")] == pytest.approx(ring_lat + int(n_star) / (1000 * ring_bw))
    assert min(t.values()) == pytest.approx(t[("ring", "LL128")], rel=1e-3)


CASES = [
    # collective, p, n bytes, flowemu's algorithm, NCCL's algorithm and protocol
    ("allreduce", 16, 1024, "dbtree:segments=1", "tree LL"),
    ("allreduce", 16, 2**20, "dbtree:segments=18", "tree LL128"),
    ("allreduce", 16, 2**26, "ring:ports=1", "ring LL128"),
    ("allreduce", 16, 2**28, "ring:ports=1", "ring Simple"),
    ("allreduce", 2, 1024, "ring:ports=1", "ring LL"),
    ("allgather", 8, 1024, "ring:ports=1", "ring LL"),
    ("allgather", 16, 2**20, "sparbit", "PAT Simple"),
    ("allgather", 16, 2**28, "ring:ports=1", "ring Simple"),
    ("reduce_scatter", 16, 2**20, "ring:ports=1", "PAT Simple"),
    ("reduce_scatter", 16, 2**28, "ring:ports=1", "ring Simple"),
    ("broadcast", 16, 1024, "chain:segments=1", "ring LL"),
    ("broadcast", 16, 2**20, "chain:segments=1", "ring LL128"),
    ("broadcast", 16, 2**26, "chain:segments=32", "ring Simple"),
    ("reduce", 12, 2**26, "chain:segments=32", "ring Simple"),
    ("alltoall", 16, 2**20, "linear", ""),
    ("gather", 16, 2**20, "linear", ""),
    ("scatter", 16, 2**20, "linear", ""),
]


@pytest.mark.parametrize("collective, p, n, want, nccl", CASES)
def test_every_collectives_choice(collective, p, n, want, nccl):
    text, note = nccl_choice(collective, p, n, GBPS400)
    assert text == want
    assert note.startswith("NCCL 2.30.7")
    assert nccl in note


def test_reduce_scatter_pat_says_flowemu_runs_the_ring():
    _, note = nccl_choice("reduce_scatter", 16, 2**20, GBPS400)
    assert "PAT" in note and "runs the ring" in note


def test_segments_are_ncclss_chunks_per_channel():
    # broadcast 64 MiB on Simple: 4 channels (2^26 >= 4 x 512 threads x 64), a part
    # of 16 MiB each, chunks of one 512 KiB step: 32
    assert nccl_segments("broadcast", "ring", "Simple", 16, 2**26, GBPS400) == 32
    # allreduce 1 MiB on the tree with LL128: 4 channels of 256 KiB; the chunk
    # (15/16 of 614400 B = 576000 B) halves while 256 KiB holds fewer than
    # (1 + log2 16 + 0.1) x 64 chunks, down to 72000 B (not above 128 KiB), then
    # while fewer than 5.1 x 16, down to 18000 B (not above 32 KiB): 15360 B in
    # 3840 B grains, 18 chunks
    assert nccl_segments("allreduce", "tree", "LL128", 16, 2**20, GBPS400) == 18
    # at least 1, at most 65536
    assert nccl_segments("broadcast", "ring", "LL", 16, 1, GBPS400) == 1
    assert nccl_segments("broadcast", "ring", "Simple", 16, 2**48, GBPS400) == 65536


def test_the_nic_is_the_slowest_link_leaving_an_endpoint():
    assert nic_bandwidth(None, None) == Network().bandwidth
    assert nic_bandwidth(None, Network(bandwidth="200Gb/s")) == 25e9
    topo = parse_topology("tree:4x4,bw=100Gb/s:25Gb/s")
    assert nic_bandwidth(topo, Network()) == pytest.approx(25e9 / 8)
    # a mesh's missing edge links (capacity 0) are not the NIC
    assert nic_bandwidth(parse_topology("mesh:4x4"), Network()) == Network().bandwidth
    assert line_segments(5, 2**20, 0.0, 1e-6) == 1


def test_the_networks_bandwidth_moves_the_choice():
    # 200 Gb/s: one channel of 24 GB/s; every bandwidth halves, the latencies stay,
    # so the ring wins sooner: 4 MiB on 16 nodes, the tree's at 400 Gb/s
    assert nccl_choice("allreduce", 16, 2**22, GBPS400)[0].startswith("dbtree")
    assert nccl_choice("allreduce", 16, 2**22, 25e9)[0] == "ring:ports=1"
    df = flowemu.simulate("tree:16", "nccl", [2**22], network=Network(bandwidth="200Gb/s"))
    assert df["variant"].iloc[0] == "ring:ports=1"
    topo = "tree:4x4,bw=400Gb/s:200Gb/s"       # the hosts' links decide, not the network's
    df = flowemu.simulate(topo, "nccl", [2**22])
    assert df["variant"].iloc[0] == "ring:ports=1"


@pytest.mark.parametrize("collective", list(COLLECTIVES))
def test_a_run_is_the_chosen_algorithms_run(collective):
    latency = nccl_step_latency(Network())
    assert_runs_are_the_choices(
        "nccl", lambda n: nccl_choice(collective, 16, n, GBPS400, latency), collective)


def test_line_protocols_take_the_best_step_pipeline():
    """LL and LL128 forward lines as they land: the doors give their
    pipelines the segment count that minimises (K + D − 1)(ℓ + n/(KB)),
    checked against a search over K; Simple keeps NCCL's chunks."""
    ell = nccl_step_latency(Network())
    assert ell == pytest.approx(0 + 2 * 100e-9 + 300e-9)     # α + one switch's links and hop
    for depth, n in ((15, 2**20), (63, 2**20), (5, 2**23), (1000, 2**26)):
        cost = [(k + depth - 1) * (ell + n / (k * GBPS400)) for k in range(1, 20000)]
        best = 1 + int(np.argmin(cost))
        k = line_segments(depth, n, GBPS400, ell)
        assert abs(k - best) <= 1
        assert cost[k - 1] <= cost[best - 1] * (1 + 1e-3)
    assert line_segments(15, 2**20, GBPS400, 0.0) == 2**20 // 4096   # no latency: the cap
    assert line_segments(1, 2**20, GBPS400, ell) == 1
    # broadcast 1 MiB on 16 nodes is a ring LL128 (chain): D = 15 with the latency,
    # NCCL's one chunk without it; 64 MiB on Simple keeps its 32 chunks either way
    text, note = nccl_choice("broadcast", 16, 2**20, GBPS400, ell)
    assert text == f"chain:segments={line_segments(15, 2**20, GBPS400, ell)}"
    assert "lines forwarded as they land" in note
    assert nccl_choice("broadcast", 16, 2**26, GBPS400, ell)[0] == "chain:segments=32"
    # the tree's depth is ⌈log2 p⌉ + 1
    text, _ = nccl_choice("allreduce", 16, 2**20, GBPS400, ell)
    assert text == f"dbtree:segments={line_segments(5, 2**20, GBPS400, ell)}"


def test_nccl_times_grow_with_the_size():
    """What NCCL runs takes longer for more bytes (with NCCL's chunks as
    store-and-forward units an 8 MiB tree took longer than a 16 MiB ring)."""
    sizes = 2.0 ** np.arange(10, 29)
    for topo in ("fattree:k=4", "tree:16"):
        t = flowemu.simulate(topo, "nccl", sizes)["time_s"].to_numpy()
        assert (np.diff(t) > 0).all(), topo
    t = flowemu.simulate("fattree:k=4", "nccl", sizes, bandwidth="200Gb/s")["time_s"].to_numpy()
    assert (np.diff(t) > 0).all()


@pytest.mark.parametrize("collective", list(COLLECTIVES))
def test_every_choice_verifies(collective):
    spec = get_algorithm("nccl", collective)
    sizes = np.array([64, 1024, 40_000, 2**20, 2**23, 2**26], dtype=float)
    for p in (8, 12, 16):
        opts = spec.parse_options({"root": 1} if COLLECTIVES[collective].rooted else {})
        latency = nccl_step_latency(None)          # (no network given: the default's)
        chosen = {nccl_choice(collective, p, n, GBPS400, latency)[0] for n in sizes}
        built = spec.sized(p, None, None, sizes, opts, blocks=True)
        assert {sched.variant for sched, _ in built} == chosen
        for sched, _ in built:
            assert verify(sched).collective == collective
