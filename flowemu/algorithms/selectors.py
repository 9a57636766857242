"""What MPICH would pick: ``mpich``, for every collective, chooses among
flowemu's algorithms by the size and rank-count thresholds of MPICH's
selection logic (its default ``MPIR_CVAR_*`` values and MPICH's own
comparisons, as R. Thakur, R. Rabenseifner and W. Gropp describe the logic in
"Optimization of Collective Communication Operations in MPICH", IJHPCA 2005;
SimGrid's ``smpi_mpich_selector.cpp`` quotes the same logic with a few
boundaries the other way, e.g. broadcast's ``p <= 8``), for a flat
communicator (no shared-memory two-level variants). The chosen algorithm is
the row's ``variant``.

Sizes are in bytes of n (:mod:`.collectives`); MPICH's element counts are
read as 4-byte elements (``count = n / 4``). ``pof2`` is the largest power
of two <= p.

==============  =====================================================  ==============================
collective      condition                                              flowemu's algorithm
==============  =====================================================  ==============================
allreduce       n > 2048 and count >= pof2                             recdoub:variant=bandwidth (Rabenseifner)
allreduce       otherwise                                              recdoub:variant=latency
broadcast       n < 12288 or p < 8                                     binomial
broadcast       n < 524288 and p a power of two                        vandegeijn:allgather=recdoub
broadcast       otherwise                                              vandegeijn (ring allgather)
reduce          count < pof2 or n <= 2048, or p not a power of two      binomial
reduce          otherwise                                              rabenseifner
reduce_scatter  n >= 524288                                            pairwise
reduce_scatter  otherwise, p a power of two                            recdoub (recursive halving)
reduce_scatter  otherwise                                              ring
allgather       n < 524288 and p a power of two                        recdoub (recursive doubling)
allgather       n < 81920                                              bruck
allgather       otherwise                                              ring
gather,scatter  always                                                 binomial
alltoall        n/p <= 256 and p >= 8                                  bruck
alltoall        n/p <= 32768                                           linear (every isend at once)
alltoall        otherwise                                              pairwise
==============  =====================================================  ==============================

Where MPICH folds the ranks above ``pof2`` into a power of two (reduce
and reduce-scatter on other p), flowemu has no folded form and takes the
algorithm in the table's next row; the row's ``note`` says so. MPICH's
pairwise all-to-all pairs ranks by XOR when p is a power of two; flowemu's
``pairwise`` sends to r + s for every p (the same steps and bytes).

What NCCL would run: ``nccl``, for every collective, is what NCCL 2.30.7
(``makefiles/version.mk`` of NVIDIA/nccl at 5067397c, June 2026) runs for
flowemu's setting as NCCL sees it: ``p`` nodes of one GPU and one NIC each
(``nNodes = nRanks = p``), the NIC as fast as the slowest link leaving a
rank's endpoint (:func:`nic_bandwidth`; without a topology the network's
bandwidth, and the default network's 400 Gb/s where a door gives none: the
builder, ``verify`` without ``--network``). For allreduce, allgather, reduce-scatter, broadcast
and reduce it evaluates NCCL's own time estimate of every algorithm and
protocol NCCL weighs (``src/graph/tuning.cc`` ``ncclTopoTuneModel`` fills
the latencies and bandwidths, ``ncclTopoGetAlgoTime`` times a size,
``src/enqueue.cc`` ``topoGetAlgoInfo`` takes the minimum, algorithms in
NCCL's order tree, ring, PAT and protocols LL, LL128, Simple) and maps the
winner to flowemu's algorithm; the row's note names NCCL's algorithm and
protocol.

==============  =====================  ==================================================
collective      NCCL's choice          flowemu's algorithm
==============  =====================  ==================================================
allreduce       tree (any protocol)    dbtree:segments=K (NCCL's double binary tree)
allreduce       ring                   ring:ports=1 (every channel runs one ring direction)
allgather       ring                   ring:ports=1
allgather       PAT (Simple)           sparbit (PAT: Bruck's, far distances first)
reduce_scatter  ring                   ring:ports=1
reduce_scatter  PAT (Simple)           ring:ports=1, the note says NCCL runs PAT
broadcast       ring (the only one)    chain:segments=K from the root along the ring
reduce          ring (the only one)    chain:segments=K ending at the root
alltoall        send/recv to all       linear (ncclAlltoAll, enqueue.cc taskAppend: one
gather,scatter  send/recv to all       linear  send and receive per peer, all in one group)
==============  =====================  ==================================================

Left out: NVLS and NVLS-tree (NVSwitch multicast; across nodes only with
CollNet, tuning.cc:504-506), CollNet (in-network reduction, ``collnetEnable``
off by default), symmetric-memory and copy-engine kernels (registered
windows only), a tuner plug-in; PAT serves allgather and reduce-scatter only
at one GPU a node (``ncclPatEnable``, tuning.cc:216-223), which is flowemu's
setting, so it is weighed. PAT is Bruck's allgather with the dimensions
reversed, far distances first, and its aggregation bounded by a buffer
(S. Jeaugey, "PAT: a new algorithm for all-gather and reduce-scatter
operations at scale", arXiv:2506.20252, 2025): the same ⌈log2 p⌉ steps and
bytes as flowemu's ``bruck`` while the buffer holds the aggregate, in
Sparbit's order (far distances first, one block first and about half the
vector last): flowemu runs ``sparbit``; its
reduce-scatter is the mirror image, which flowemu does not have.

The estimate, µs for ``n`` bytes (allgather and reduce-scatter: the whole
gathered vector, as NCCL's ``nBytes``), ``C`` the graph's channels at ``s``
GB/s each, ``L(proto)`` the network latency ``hwLatencies[NET][TREE]`` (at
one rank a node every algorithm uses the tree's, tuning.cc:387):

* bus bandwidth ``C·s``; ring LL: ``min(llMaxBw, C·s/2)``; ring LL128:
  ``min(0.92·C·s, C·36.7)``; tree: ``min(0.92·C·s, C·36.0)``, then LL
  ``min(·/3.8, llMaxBw)``, LL128 ``min(·120/128, C·29.0)``, then ×0.85 (one
  GPU: the tree pattern is TREE, search.cc:1133); PAT ``0.75·C·s``
  (tuning.cc:324-337). To algorithm bandwidth: ring ×``p/nsteps``
  (``nsteps`` 2(p−1), p−1 for allgather/reduce-scatter, p for
  broadcast/reduce), tree ×0.5, PAT as it is (tuning.cc:377-382).
* latency: ring ``base + nsteps·L`` (broadcast/reduce ``base +
  hwLatencies[NET][RING]``, the ring graph's channels being alike:
  ``sameChannels``); tree
  ``base + 2·log2(p)·L``; PAT ``8 + log2(p)·L/3.5 + 2.8·p``
  (tuning.cc:384-435).
* time ``lat + n / (1000·bw)``; the tree's bandwidth × its correction
  factor for ``log2(n/64)`` (tuning.cc:623-627), the ring's Simple latency
  ×1.4 once ``n / (2C·p) >= 64`` (tuning.cc:647-650).

======================================  =============================  ==================================
number (NCCL's name)                    value                          source (2.30.7)
======================================  =============================  ==================================
baseLatencies tree (LL, LL128, Simple)  6.8, 14, 8.4 µs                tuning.cc:151
baseLatencies ring / PAT                6.6, 14, 8.4 / 8 µs            tuning.cc:151, 154
hwLatencies[NET] tree / ring            5, 8.5, 14 / 2.7, 4, 14 µs     tuning.cc:171
latencyInter of the NIC                 0                              net_ib/init.cc:558 (IB plug-in)
GPU                                     Hopper (sm90)                  assumed: H100 beside 400 Gb/s
CPU                                     Intel x86                      assumed: llMaxBws row 0
llMaxBw (2 nodes / more)                39.0 / 20.4 GB/s               tuning.cc:179
perChMaxRingLL128Bw                     36.7 GB/s                      tuning.cc:188
perChMaxTreeBw (2 nodes / more)         41.4 / 36.0 GB/s               tuning.cc:202
perChMaxTreeLL128Bw (2 / more)          36.7 / 29.0 GB/s               tuning.cc:195
LL128 enabled                           yes (NIC on the GPU's switch)  tuning.cc:518-536 (Hopper, ≤ PXN)
GPU–NIC path                            PCIe Gen5 x16: 48 GB/s         topo.cc:657 (16 · 240 / 80)
NIC                                     link bandwidth in GB/s         topo.cc:418 (Mb/s / 8000)
channel speeds tried                    48, 45, 42, 40, 30, 24, …      search.cc:1058 sm90SpeedArrayInter
graph channels C at s GB/s              400 Gb/s: 1 × 48 → 2 × 24      search.cc:1170-1250, 1036-1049
comm->nChannels                         2C (4 at 400 Gb/s)             connect.cc:460
tree pattern at one GPU                 TREE (busBw × 0.85)            search.cc:1133, tuning.cc:336
======================================  =============================  ==================================

:func:`nccl_channels` repeats the search for this node: the speeds at most
the path's bandwidth, as many channels of a speed as the path holds, the
best ``C·s``, stopping at the PCIe link's 48 GB/s or when the next speed is
below 0.49 of the best; a speed of 25 GB/s or more is doubled into twice
the channels at half the speed.

Segments ``K`` (trees and the broadcast/reduce chain): NCCL cuts the
vector over its channels and every channel pipelines its part in chunks
(``device/all_reduce.h`` runTreeUpDown/runTreeSplit,
``device/broadcast.h`` runRing), so a pipeline has as many stages as the
largest part has chunks: ``K = ⌈part / chunk⌉`` (1..65536). The channels
are ``comm->nChannels`` less one while ``n < channels · threads ·
threshold`` (enqueue.cc topoGetAlgoInfo; 512 threads, LL128 640;
threshold 8, LL128 8, Simple 64, the ring's LL 8p; comm.h:49-51); the
part is that of enqueue.cc scheduleCollTasksToPlan (cells of 32 KiB of
traffic, ×2 for allreduce, ×4 on LL); the chunk is a buffer step
(init.cc:810-813 over NCCL_STEPS = 8): 32 KiB on LL (half of the 64 KiB
step), 576000 B on LL128 (15/16 of 614400 B), 512 KiB on Simple
(broadcast/reduce: 1 step, collectives.h:27-34); the tree on LL128 halves
it while the part holds too few chunks, to 16-32 KiB at least
(enqueue.cc:2286-2294); a multiple of
the protocol's grain (device.h:328). Elements are nccl-tests' 4-byte floats.

On LL and LL128 NCCL forwards every 8-byte (128-byte) line as soon as it
lands, so a chunk is no store-and-forward unit there; flowemu's steps pay
their latency each, so a door with a network (run, simulate, sweep) gives
those pipelines the segment count a step schedule comes closest with:
``K* = √((D − 1)·n / (ℓ·B))`` minimises ``(K + D − 1)(ℓ + n/(KB))``, ``D``
the pipeline's depth (``p − 1`` for the chain, ``⌈log2 p⌉ + 1`` for the
trees), ``ℓ`` the network's α and one switch's two links and hop
(:func:`nccl_step_latency`), at most 65536 and n / 4 KiB
(:func:`line_segments`). Simple keeps NCCL's chunks (its slices are
store-and-forward units); :func:`nccl_choice` without a latency gives
NCCL's chunks for every protocol.

Not modelled: the protocols' own costs (LL's flag words halve its
bandwidth, LL128 loses 1/16; flowemu moves the bytes at the links' speed:
the protocol enters only through the choice and the segments), NVLink
and several GPUs a node, NCCL's two channels a tree on small sizes (up to
two channels NCCL runs the first tree only; ``dbtree`` always splits the
vector over both), the reduce's direction on the ring (NCCL's partial sums
go root+1 → … → root, ``chain`` reduces up relative ranks p−1 → … → 0).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from ..core.network import Network
from ._blocks import MAX_SEGMENTS, check_root, pof2
from .base import DEFAULT_AT, AlgorithmSpec, Param, parse_algorithm_spec
from .collectives import COLLECTIVES
from .registry import get_algorithm, register

__all__ = ["line_segments", "mpich_choice", "nccl_choice", "nccl_segments", "nccl_step_latency",
           "nccl_times", "nic_bandwidth"]

#: bytes of an element (MPICH thresholds on counts read n / ELEMENT elements)
ELEMENT = 4


def mpich_choice(collective: str, p: int, n: float) -> tuple[str, str]:
    """``(algorithm spec, note)``: what MPICH picks for ``collective`` on
    ``p`` ranks and ``n`` bytes (module table); the note says where flowemu
    departs from it."""
    pow2 = p & (p - 1) == 0
    count = n / ELEMENT
    if collective == "allreduce":
        if n > 2048 and count >= pof2(p):
            return "recdoub:variant=bandwidth", ""
        return "recdoub:variant=latency", ""
    if collective == "broadcast":
        if n < 12288 or p < 8:
            return "binomial", ""
        if n < 524288 and pow2:
            return "vandegeijn:allgather=recdoub", ""
        return "vandegeijn", ""
    if collective == "reduce":
        if count < pof2(p) or n <= 2048:
            return "binomial", ""
        if not pow2:
            return "binomial", ("MPICH folds the ranks above a power of two into "
                                "Rabenseifner's reduce here; flowemu has no folded form and "
                                "runs the binomial tree")
        return "rabenseifner", ""
    if collective == "reduce_scatter":
        if n >= 524288:
            return "pairwise", ""
        if pow2:
            return "recdoub", ""
        return "ring", ("MPICH folds the ranks above a power of two into recursive halving "
                        "here; flowemu has no folded form and runs the ring")
    if collective == "allgather":
        if n < 524288 and pow2:
            return "recdoub", ""
        if n < 81920:
            return "bruck", ""
        return "ring", ""
    if collective in ("gather", "scatter"):
        return "binomial", ""
    if collective == "alltoall":
        block = n / p
        if block <= 256 and p >= 8:
            return "bruck", ""
        if block <= 32768:
            return "linear", ""
        return "pairwise", ""
    raise AssertionError(collective)


# ------------------------------------------------------------------ NCCL

#: the NCCL release whose tuning model ``nccl`` follows (makefiles/version.mk)
NCCL_VERSION = "2.30.7"
#: NCCL's protocols, in its order (an index is NCCL_PROTO_LL, _LL128, _SIMPLE)
NCCL_PROTOCOLS = ("LL", "LL128", "Simple")
_LL, _LL128, _SIMPLE = 0, 1, 2
#: NCCL's algorithms ``nccl`` weighs, in NCCL's order (the first of equal times wins)
_NCCL_ALGORITHMS = {"allreduce": ("tree", "ring"), "allgather": ("ring", "pat"),
                    "reduce_scatter": ("ring", "pat"), "broadcast": ("ring",),
                    "reduce": ("ring",)}

# tuning.cc ncclTunerConstantsDefaults (µs and GB/s), indexed by protocol or by
# node count (one node, two, more)
_BASE_LATENCY = {"tree": (6.8, 14.0, 8.4), "ring": (6.6, 14.0, 8.4), "pat": (8.0, 8.0, 8.0)}
_NET_LATENCY = {"tree": (5.0, 8.5, 14.0), "ring": (2.7, 4.0, 14.0)}
_LL_MAX_BW = (39.0, 39.0, 20.4)            # llMaxBws, an Intel CPU's row
_TREE_MAX_BW = (38.7, 41.4, 36.0)          # perChMaxTreeBws, Hopper
_TREE_LL128_MAX_BW = (36.7, 36.7, 29.0)    # perChMaxTreeLL128Bws, Hopper
_RING_LL128_MAX_BW = 36.7                  # perChMaxRingLL128Bws, Hopper
#: tuning.cc treeCorrectionFactor[protocol][log2(n / 64)]
_TREE_CORRECTION = (
    (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0,
     1.0, 1.0, 1.0),
    (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9,
     1.0, 1.0, 1.0),
    (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9,
     .9, .9),
)
#: search.cc sm90SpeedArrayInter: the GB/s a channel may take, tried in order
_SPEEDS = (48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2,
           0.24, 0.12)
#: GB/s of the GPU's PCIe Gen5 x16 link (topo.cc: 16 lanes x 240 / 80)
_PCI_BW = 48.0
#: bytes of one step of each protocol's buffer (init.cc DEFAULT_*BUFFSIZE / NCCL_STEPS)
_STEP_BYTES = (65536, 614400, 524288)
#: device.h ncclProtoGrainSize
_GRAIN = (16, 3840, 512)
#: collectives.h *_CHUNKSTEPS of a ring on Simple
_CHUNK_STEPS = {"allreduce": 4, "allgather": 4, "reduce_scatter": 4, "broadcast": 1, "reduce": 1}


def _log2i(x: int) -> int:
    return int(x).bit_length() - 1


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def nic_bandwidth(topology, network) -> float:
    """Bytes/s of the NIC NCCL sees: the slowest link leaving a rank's
    endpoint on ``topology`` (one NIC a GPU), else the network's
    bandwidth; the default network (400 Gb/s) where none is given."""
    network = Network() if network is None else network
    if topology is None:
        return float(network.bandwidth)
    cap = topology.link_capacity(network)
    # (a link of no capacity is one that does not exist: a mesh's edges, a failure)
    own = (np.asarray(topology.link_src) < topology.num_endpoints) & (cap > 0)
    return float(cap[own].min()) if own.any() else float(network.bandwidth)


def nccl_channels(bandwidth: float) -> tuple[int, float]:
    """``(channels, GB/s each)`` of the ring graph NCCL's search finds for
    one GPU with a NIC of ``bandwidth`` bytes/s behind PCIe Gen5 x16
    (search.cc ncclTopoCompute, pass 1, then ncclTopoDupChannels); the tree
    graph gets as many channels at the same speed."""
    path = min(bandwidth / 1e9, _PCI_BW)     # GB/s of the GPU -> NIC path
    i = 0
    while i < len(_SPEEDS) - 1 and _SPEEDS[i] > path:
        i += 1
    best = None
    while True:
        speed = _SPEEDS[i]
        channels = min(int(path / speed + 1e-9), 32)   # each channel takes its speed of the path
        if channels and (best is None or channels * speed > best[0] * best[1]):
            best = (channels, speed)
        if best is not None and best[0] * best[1] >= _PCI_BW:
            break
        if i < len(_SPEEDS) - 1 and (best is None or _SPEEDS[i + 1] / best[1] > .49):
            i += 1
            continue
        break
    if best is None:                          # no speed fits: NCCL's simple-order fallback
        return 1, 0.1
    channels, speed = best
    if speed >= 25.0 and not (speed < 50.0 and channels > 4):
        dup = min(2 * channels, 32)
        speed /= _cdiv(dup, channels)
        channels = dup
    return channels, speed


def _comm_channels(channels: int, speed: float) -> int:
    """comm->nChannels: every graph channel twice (connect.cc ncclTopoPostset;
    the copy takes the double binary tree's second tree), again on Hopper
    above 45 GB/s a channel."""
    n = 2 * channels
    return 2 * n if speed > 45.0 and n < 16 else n


def nccl_times(collective: str, p: int, n: float, bandwidth: float) -> dict:
    """``{(algorithm, protocol): µs}``: NCCL's estimate of every algorithm
    and protocol it weighs for ``collective`` of ``n`` bytes on ``p`` nodes
    of one GPU each (tuning.cc ncclTopoTuneModel and ncclTopoGetAlgoTime;
    module table)."""
    channels, speed = nccl_channels(bandwidth)
    nbytes = int(n)
    nodes = 1 if p <= 2 else 2                          # index of 2 nodes or more
    ll_max = _LL_MAX_BW[nodes]
    nsteps = (2 * (p - 1) if collective == "allreduce"
              else p - 1 if collective in ("allgather", "reduce_scatter") else p)
    out = {}
    for algo in _NCCL_ALGORITHMS[collective]:
        for proto in (_SIMPLE,) if algo == "pat" else (_LL, _LL128, _SIMPLE):
            bw = channels * speed
            if algo == "ring" and proto == _LL:
                bw = min(ll_max, bw * .5)
            if algo == "ring" and proto == _LL128:
                bw = min(bw * .92, channels * _RING_LL128_MAX_BW)
            if algo == "tree":
                bw = min(bw * .92, channels * _TREE_MAX_BW[nodes])
                if proto == _LL:
                    bw = min(bw / 3.8, ll_max)
                if proto == _LL128:
                    bw = min(bw * 120 / 128, channels * _TREE_LL128_MAX_BW[nodes])
                bw *= .85                                # one GPU: the tree pattern is TREE
            if algo == "pat":
                bw *= .75
            if algo == "ring":
                bw *= p / nsteps                         # bus to algorithm bandwidth
            elif algo == "tree":
                bw *= .5
            net = _NET_LATENCY["tree"][proto]           # one rank a node: the tree's
            if algo == "ring" and collective in ("broadcast", "reduce"):
                lat = _BASE_LATENCY["ring"][proto] + _NET_LATENCY["ring"][proto]
            elif algo == "ring":
                lat = _BASE_LATENCY["ring"][proto] + nsteps * net
            elif algo == "tree":
                lat = _BASE_LATENCY["tree"][proto] + 2 * _log2i(p) * net
            else:
                lat = _BASE_LATENCY["pat"][proto] + _log2i(p) * net / 3.5 + p * 2.8
            size_log = _log2i(nbytes >> 6)
            if algo == "tree" and 0 <= size_log < 23:
                bw *= _TREE_CORRECTION[proto][size_log]
            if (algo == "ring" and proto == _SIMPLE and collective == "allreduce" and p > 1
                    and nbytes // (_comm_channels(channels, speed) * p) >= 64):
                lat *= 1.4                               # the ring's plateau (Hopper)
            out[(algo, NCCL_PROTOCOLS[proto])] = lat + nbytes / (1000 * bw)
    return out


def _active_channels(algo: str, proto: int, p: int, nbytes: int, channels: int,
                     speed: float) -> int:
    """The channels topoGetAlgoInfo gives ``nbytes`` (enqueue.cc: fewer while
    the bytes are below channels x threads x the protocol's threshold)."""
    nc = _comm_channels(channels, speed)
    threads = 640 if proto == _LL128 else 512
    if algo == "ring" and proto == _SIMPLE and channels * speed <= 12.0:
        threads = 256
    threshold = (8, 8, 64)[proto] * (p if algo == "ring" and proto == _LL else 1)
    while nbytes < nc * threads * threshold and nc >= 2:
        nc -= 1
    return nc


def _largest_part(collective: str, proto: int, nbytes: int, nc: int, most: int) -> int:
    """Bytes of the largest channel's part of a collective of ``nbytes``
    (enqueue.cc scheduleCollTasksToPlan: cells of 32 KiB of traffic shared
    over ``nc`` channels, at most ``most``)."""
    per_byte = (2 if collective == "allreduce" else 1) * (4 if proto == _LL else 1)
    least = 32 << 10
    per_channel = _cdiv(max(least, nbytes * per_byte) // nc, 16) * 16
    cell = _cdiv(_cdiv(least, per_byte), 16) * 16
    cells = _cdiv(nbytes, cell)
    cells_per = min(cells, _cdiv(per_channel, cell * per_byte))
    lo = cells if most == 1 else cells_per
    mid, hi = divmod(cells - lo, cells_per)
    if (lo > 0) + mid + (hi > 0) > most:
        mid = most - 2
        cells_per, rest = divmod(cells - lo, mid + 1)
        hi = cells_per + rest
    if hi == 0 and mid:
        hi, mid = cells_per, mid - 1
    return min(nbytes, max(lo, hi, cells_per if mid else 0) * cell)


def _chunk(collective: str, algo: str, proto: int, p: int, part: int) -> int:
    """Bytes of NCCL's chunk (enqueue.cc calcCollChunking)."""
    chunk = _STEP_BYTES[proto] * (_CHUNK_STEPS[collective]
                                  if algo == "ring" and proto == _SIMPLE else 1)
    if proto == _LL:
        chunk //= 2
    if proto == _LL128:
        chunk = chunk // 16 * 15
    if algo == "tree" and proto == _LL128:
        depth = 1 + _log2i(p) + 0.1                    # one rank a node
        while part // chunk < depth * 64 and chunk > 131072:
            chunk //= 2
        while part // chunk < depth * 16 and chunk > 32768:
            chunk //= 2
    return max(chunk // _GRAIN[proto] * _GRAIN[proto], _GRAIN[proto])


def nccl_segments(collective: str, algo: str, protocol: str, p: int, n: float,
                  bandwidth: float) -> int:
    """Pipeline segments of NCCL's tree or ring broadcast/reduce: the chunks
    of the largest channel's part, which every channel pipelines at once
    (1..65536)."""
    proto = NCCL_PROTOCOLS.index(protocol)
    channels, speed = nccl_channels(bandwidth)
    nbytes = max(int(n), 1)
    nc = _active_channels(algo, proto, p, nbytes, channels, speed)
    part = _largest_part(collective, proto, nbytes, nc, _comm_channels(channels, speed))
    chunk = _chunk(collective, algo, proto, p, part)
    return min(max(_cdiv(part, chunk), 1), MAX_SEGMENTS)


def line_segments(depth: int, n: float, bandwidth: float, step_latency: float) -> int:
    """Segments of a pipeline of ``depth`` stages that an LL or LL128
    protocol, which forwards every line as it lands, comes closest to in
    flowemu's steps: the ``K`` minimising ``(K + depth − 1)(ℓ + n/(KB))``,
    ``K* = √((depth − 1)·n / (ℓ·B))`` (``ℓ`` a step's latency), rounded, at
    least 1 and at most 65536 and ``n`` / 4 KiB."""
    if depth <= 1 or n <= 0 or not bandwidth > 0:
        return 1
    most = max(1, min(MAX_SEGMENTS, int(n) // 4096))
    if step_latency <= 0:
        return most
    best = math.sqrt((depth - 1) * n / (step_latency * bandwidth))
    return int(min(most, max(1, round(best))))


def nccl_step_latency(network) -> float:
    """Seconds a step of a pipeline pays before its bytes flow, as
    :func:`line_segments` counts it: the network's α and one switch's two
    links and hop."""
    network = Network() if network is None else network
    return float(network.alpha + 2 * network.link_latency + network.hop_latency)


def nccl_choice(collective: str, p: int, n: float, bandwidth: float = 50e9,
                step_latency: float | None = None) -> tuple[str, str]:
    """``(algorithm spec, note)``: what NCCL runs for ``collective`` of ``n``
    bytes on ``p`` nodes of one GPU and one NIC of ``bandwidth`` bytes/s
    (module table); the note names NCCL's algorithm and protocol and where
    flowemu departs from it. With ``step_latency`` (seconds) the pipelines
    of the LL and LL128 protocols take :func:`line_segments` (NCCL forwards
    their lines as they land; a chunk is no store-and-forward unit there),
    else NCCL's chunks (:func:`nccl_segments`)."""
    if collective not in _NCCL_ALGORITHMS:   # (all-to-all, gather, scatter)
        return "linear", (f"NCCL {NCCL_VERSION} posts a send and a receive to every peer "
                          "in one group")
    times = nccl_times(collective, p, n, bandwidth)
    algo, protocol = min(times, key=times.get)
    note = f"NCCL {NCCL_VERSION}: {'PAT' if algo == 'pat' else algo} {protocol}"
    if algo == "tree" or collective in ("broadcast", "reduce"):
        if protocol != "Simple" and step_latency is not None:
            depth = p - 1 if algo == "ring" else (p - 1).bit_length() + 1
            k = line_segments(depth, n, bandwidth, step_latency)
            note += f" (lines forwarded as they land: {k} segment{'s' if k > 1 else ''})"
        else:
            k = nccl_segments(collective, algo, protocol, p, n, bandwidth)
        return f"{'dbtree' if algo == 'tree' else 'chain'}:segments={k}", note
    if algo == "pat" and collective == "allgather":
        return "sparbit", note + (" (PAT: Bruck's allgather with the far distances first, "
                                  "as Sparbit's)")
    if algo == "pat":
        return "ring:ports=1", (note + " (PAT, log2 p steps); flowemu has no Bruck-like "
                                "reduce-scatter and runs the ring")
    return "ring:ports=1", note


def _spec(name: str, collective: str, choose, doc: str) -> AlgorithmSpec:
    """A selector for ``collective``: ``choose(p, topology, network, sizes)``
    gives the ``(algorithm spec, note)`` of every size; each distinct choice
    is built once and labelled ``name`` with the choice as its variant."""
    rooted = COLLECTIVES[collective].rooted

    def plan(p, topology, network, sizes, options, blocks=False):
        """One schedule per algorithm the selector picks, with the sizes it serves."""
        groups: dict = {}
        sizes = np.asarray(sizes, dtype=float)
        for i, choice in enumerate(choose(p, topology, network, sizes)):
            groups.setdefault(choice, []).append(i)
        out = []
        for (text, why), idx in groups.items():
            alg, raw = parse_algorithm_spec(text)
            spec = get_algorithm(alg, collective)
            opts = spec.parse_options({**raw, **({"root": options["root"]} if rooted else {})})
            sched = spec.build(p, topology, blocks, **opts)
            note = "; ".join(filter(None, (sched.note, why)))
            out.append((replace(sched, algorithm=name, variant=text, note=note), np.array(idx)))
        return out

    def build(p, topology=None, blocks=False, **options):
        return plan(p, topology, None, [DEFAULT_AT], options, blocks)[0][0]

    params = (Param("root", int, 0, None, "the root rank"),) if rooted else ()
    def check(p, options):
        if rooted:
            check_root(name, p, options.get("root", 0))

    return AlgorithmSpec(name=name, build=build, params=params, sized=plan,
                         collective=collective, check=check, doc=doc)


def _mpich(collective: str):
    return lambda p, topology, network, sizes: [mpich_choice(collective, p, float(n))
                                                for n in sizes]


def _nccl_doc(collective: str) -> str:
    if collective not in _NCCL_ALGORITHMS:
        how = "a send and a receive to every peer at once (linear)"
    else:
        how = ("by NCCL's tuning model for one GPU and one NIC a node at the network's "
               "bandwidth")
    return (f"What NCCL {NCCL_VERSION} runs for {collective}: {how} "
            "(flowemu.algorithms.selectors); the choice is the variant")


def _nccl(collective: str):
    def choose(p, topology, network, sizes):
        bandwidth = nic_bandwidth(topology, network)
        latency = nccl_step_latency(network)
        return [nccl_choice(collective, p, float(n), bandwidth, latency) for n in sizes]
    return choose


for _collective in COLLECTIVES:
    register(_spec("mpich", _collective, _mpich(_collective),
                   f"What MPICH picks for {_collective} by its size and rank-count thresholds "
                   "(flowemu.algorithms.selectors); the choice is the variant"))
    register(_spec("nccl", _collective, _nccl(_collective), _nccl_doc(_collective)))
