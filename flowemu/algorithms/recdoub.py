"""Recursive doubling allreduce (Swing paper, De Sensi et al., §2.3.2–2.3.3,
§4, §5.1; GenModel paper, Xiong et al., Tables 1–2 "RHD").

Variants
--------
``latency`` (§2.3.2)
    ``log2 p'`` steps; at step ``s`` rank ``r`` exchanges its whole vector with
    its peer (``r XOR 2^s`` in the linear layout) and adds the received one to
    its own (fan-in 2).
``bandwidth`` (§2.3.3, Rabenseifner; GenModel "recursive halving and doubling")
    The vector is cut into ``p'`` blocks of ``n/p'`` (per collective). Step
    ``s`` flips rank bit ``b_s`` (``b_s = s`` in the linear layout). Reduce-
    scatter step ``s``: rank ``r`` holds the blocks whose bits
    ``b_0 … b_{s−1}`` equal those of ``r`` and sends the half whose bit
    ``b_s`` equals the peer's (``p'/2^(s+1)`` blocks: the data halves each
    step while the distance doubles), reducing what it receives. Rank ``r``
    ends up with block ``r``. The allgather reverses the pattern (bits
    ``b_{L−1} … b_0``, data doubling, COPY). ``2 log2 p'`` steps,
    ``2(p'−1)/p' · n`` bytes sent per rank; reduction ``(p'−1)/p' · n``
    bytes at fan-in 2, i.e. the γ coefficient ``(p'−1)/p'`` and δ coefficient
    ``3(p'−1)/p'`` of GenModel Table 2.
``auto``
    Expanded by the engine (both variants are timed, the faster one per size
    wins); the builder itself refuses it.

Layouts (option ``layout``)
---------------------------
``linear``
    Peers by XOR of rank ids: step ``s`` pairs ``r`` with ``r XOR 2^s``.
``torus`` (§2.3.2 Fig. 2; for the bandwidth variant Sack et al., §2.3.3)
    On a torus whose every dimension is a power of two, step ``s`` works on
    one dimension at a time, cycling through them: at the ``k``-th visit of a
    dimension the peer differs in that coordinate only, by ``XOR 2^k``
    (distance ``2^k``). A dimension whose ``log2 d`` levels are exhausted
    drops out of the rotation (non-square tori, as Swing does in §4.2), so
    the schedule still has ``log2 p`` steps. With row-major ids and
    power-of-two sizes this is XOR on one rank bit per step, i.e. a
    permutation of the linear bit order. The bandwidth variant keeps the
    halving/doubling rule on that bit order.

    *Dimension order.* The paper's node ids are row-major with the
    horizontal neighbour of node 0 being node 1, and its Fig. 2 footnote has
    node 0 talking to node 2 (horizontally, distance 2) at step 2 on the
    4x4 torus; its first dimension is therefore the horizontal one, i.e. the
    fastest-varying coordinate. Paper dimension ``j`` is torus axis
    ``D − 1 − j`` here, so node 0's peers on 4x4 are 1, 4, 2, 8 as in Fig. 2.
``auto`` (default)
    ``torus`` when the logical shape (:func:`~.base.torus_dims`) has
    ``D >= 2`` dimensions, all powers of two; ``linear`` otherwise. An
    explicit ``torus`` on a shape with a non-power-of-two dimension is a
    :class:`ConfigError`: the torus pattern XORs coordinates, and the paper
    knows no torus adaptation of the non-power-of-two fold (§2.3.2, §2.3.3
    "we found no reference of adaptations to torus networks").

Mirrored (option ``mirrored``; §4 "plain" and "mirrored" collectives, §5.1
"Mirrored Recursive Doubling")
-------------------------------------------------------------------------
Off: one collective (the single-port algorithm of §2.3.2/§2.3.3). On: the
vector in ``2D`` parts (``D`` = number of dimensions of the layout; 1 for
``linear``), ``D`` *plain* collectives (tags ``0..D−1``), collective ``t``
starting at paper dimension ``t`` and rotating from there, and ``D``
*mirrored* ones (tags ``D..2D−1``), mirrored ``t`` using the same dimension
sequence as plain ``t`` but the opposite direction.

*Interpretation.* Swing (§4, Fig. 4) mirrors by flipping the sign of the
step: a plain collective sends node 0 to node 1, the mirrored one to node 3
(= −1 on the ring). Recursive doubling's XOR peer ``c XOR 2^k`` of a
coordinate ``c`` is ``c + 2^k`` when bit ``k`` of ``c`` is 0 and ``c − 2^k``
when it is 1; the mirrored peer goes the other way round: ``c − 2^k`` when
bit ``k`` is 0 and ``c + 2^k`` when it is 1 (mod the dimension size). So at
the first step of a dimension the mirrored collective uses the opposite
port, exactly like Swing (0 ↔ 3 and 0 ↔ 12 on 4x4), and at every level the
traffic of a plain and its mirrored collective crosses the ring in opposite
directions; only at distance ``d/2`` (the last level of a dimension) both
reach the same node, which minimal routing splits over both ways anyway
(§2.3.2 footnote). The mirrored pattern is still a recursive doubling: after
``k`` levels of a dimension each node has reduced a window of ``2^k``
consecutive coordinates (plain: aligned windows; mirrored: windows reaching
the other way), the two partners' windows are adjacent and disjoint, and the
block bookkeeping of the bandwidth variant is unchanged (the peer's low
``k + 1`` bits of the coordinate are the same as the XOR peer's). The
verifier proves every case.

Non-power-of-two ``p`` (``linear`` only; §2.3.2 "Non-power-of-two"; GenModel χ
term ``2Sβ + Sγ + 3Sδ``): ``p'`` is the largest power of two ``<= p``. A
``pre`` step sends the whole vector of each rank ``r >= p'`` to ``r − p'``,
which reduces it (fan-in 2, share 1); the first ``p'`` ranks run the
algorithm; a ``post`` step copies the whole result from ``r − p'`` back to
``r``. ``Schedule.info["p_eff"]`` is ``p'``.
"""

from __future__ import annotations

import numpy as np

from ..core.errors import ConfigError
from ._blocks import (
    COPY,
    REDUCE,
    check_ranks,
    equal_block_share,
    make_traffic,
    pof2,
    reduce_step_reduction,
    whole_vector_blocks,
)
from .base import AlgorithmSpec, Param, Schedule, Step, shape_note, torus_dims
from .registry import register

NAME = "recdoub"
VARIANTS = ("auto", "latency", "bandwidth")
LAYOUTS = ("auto", "torus", "linear")


def largest_power_of_two(p: int) -> int:
    """Largest power of two ``<= p`` (``p >= 1``; :func:`._blocks.pof2`)."""
    return pof2(p)


def _is_pow2(x: int) -> bool:
    return x > 0 and x & (x - 1) == 0


def resolve_layout(p: int, topology, layout: str) -> tuple[str, tuple[int, ...]]:
    """``(layout, dims)``: ``auto`` resolved against the logical shape."""
    dims = torus_dims(topology, p)
    all_pow2 = all(_is_pow2(d) for d in dims)
    if layout == "auto":
        layout = "torus" if len(dims) >= 2 and all_pow2 else "linear"
    elif layout == "torus" and not all_pow2:
        shape = "x".join(map(str, dims))
        bad = ", ".join(str(d) for d in dims if not _is_pow2(d))
        raise ConfigError(
            f"algorithm {NAME}: layout=torus needs every dimension of the logical torus to be "
            f"a power of two (Swing paper §2.3.2: the torus pattern XORs one coordinate per "
            f"step; §2.3.3: no torus adaptation of the non-power-of-two fold is known); "
            f"{shape} has dimension(s) {bad}; use layout=linear or layout=auto")
    return layout, dims


def bit_fields(layout: str, dims: tuple[int, ...], p_eff: int) -> list[tuple[int, int]]:
    """Rank-id bit fields ``(offset, width)`` in paper-dimension order: one
    field per torus dimension (paper dimension ``j`` = axis ``D − 1 − j``, the
    fastest-varying coordinate first), or the whole id for ``linear``."""
    if layout == "linear":
        return [(0, p_eff.bit_length() - 1)]
    fields, offset = [], 0
    for d in reversed(dims):               # last axis = lowest bits = paper dimension 0
        width = d.bit_length() - 1
        fields.append((offset, width))
        offset += width
    return fields


def level_sequence(fields: list[tuple[int, int]], start: int) -> list[tuple[int, int]]:
    """``(field, level)`` of every step of a collective starting at field
    ``start``: rounds ``k = 0, 1, …`` visit the fields ``start, start+1, …``
    (cyclically) at level ``k``, skipping fields with fewer than ``k + 1``
    levels (exhausted dimensions drop out)."""
    num = len(fields)
    rotation = [(start + i) % num for i in range(num)]
    seq = []
    for k in range(max(w for _, w in fields)):
        seq += [(f, k) for f in rotation if k < fields[f][1]]
    return seq


def peers(ranks: np.ndarray, field: tuple[int, int], level: int, mirrored: bool) -> np.ndarray:
    """Peer of each rank at ``level`` of a bit field: XOR (plain) or the same
    distance the other way round (mirrored; see the module docstring)."""
    offset, width = field
    size = 1 << width
    c = (ranks >> offset) & (size - 1)
    step = 1 << level
    up = (c & step) == 0
    if mirrored:
        new = np.where(up, c - step, c + step) % size
    else:
        new = c ^ step
    return ranks + ((new - c) << offset)


def build(p: int, topology=None, blocks: bool = False, **options) -> Schedule:
    """Recursive doubling allreduce on ``p`` ranks (§2.3.2 / §2.3.3).

    Parameters
    ----------
    p : int
        Number of ranks (>= 2).
    topology : Topology or None
        Its logical torus shape (:func:`~.base.torus_dims`) drives
        ``layout=auto``/``torus``.
    blocks : bool
        Attach block content (``C`` blocks for ``latency``, ``C·p'`` for
        ``bandwidth``, ``C`` collectives) for verification.
    variant : {"latency", "bandwidth"}
        ``"auto"`` is rejected here: the engine expands it.
    layout : {"auto", "torus", "linear"}
    mirrored : bool
        ``2D`` collectives (D plain, D mirrored) on ``1/(2D)`` of the vector.

    Returns
    -------
    Schedule
        Steps ``[pre,] x0..x{L−1} [,post]`` (latency) or
        ``[pre,] rs0..rs{L−1}, ag0..ag{L−1} [,post]`` (bandwidth), with
        ``L = log2 p'``; ``info = {"p_eff": p', "extra_ranks": p − p',
        "layout": ..., "collectives": C}``.
    """
    opts = SPEC.parse_options(options)
    variant = opts["variant"]
    p = check_ranks(NAME, p)
    SPEC.require_concrete(opts)
    layout, dims = resolve_layout(p, topology, opts["layout"])
    p_eff = pof2(p)
    fields = bit_fields(layout, dims, p_eff)
    if opts["mirrored"]:
        collectives = [(level_sequence(fields, t), False) for t in range(len(fields))]
        collectives += [(seq, True) for seq, _ in collectives]
    else:
        collectives = [(level_sequence(fields, 0), False)]
    per = p_eff if variant == "bandwidth" else 1
    num_blocks = len(collectives) * per

    steps: list[Step] = []
    if p_eff < p:
        steps.append(_fold_step(p, p_eff, num_blocks, blocks, post=False))
    if variant == "latency":
        steps += _latency_steps(p_eff, fields, collectives, blocks)
    else:
        steps += _bandwidth_steps(p_eff, fields, collectives, blocks)
    if p_eff < p:
        steps.append(_fold_step(p, p_eff, num_blocks, blocks, post=True))
    return Schedule(NAME, variant, p, tuple(steps),
                    num_blocks if blocks else None,
                    equal_block_share(num_blocks) if blocks else None,
                    {"p_eff": p_eff, "extra_ranks": p - p_eff, "layout": layout,
                     "collectives": len(collectives)},
                    note="" if opts["layout"] == "linear"
                    else shape_note(topology, p, gridless=opts["layout"] == "torus"))


def _fold_step(p: int, p_eff: int, num_blocks: int, blocks: bool, post: bool) -> Step:
    """Whole-vector exchange between ranks ``r >= p'`` and ``r − p'``:
    ``pre`` reduces the extra ranks' vectors in, ``post`` copies the result
    back out."""
    high = np.arange(p_eff, p, dtype=np.int64)
    low = high - p_eff
    src, dst = (low, high) if post else (high, low)
    share = np.ones(len(src))
    tag = np.zeros(len(src), np.int16)
    blocks2d = whole_vector_blocks(len(src), num_blocks) if blocks else None
    traffic = make_traffic(src, dst, share, tag, blocks2d, COPY if post else REDUCE)
    return Step(traffic, reduce_step_reduction(traffic, not post), "post" if post else "pre")


def _step_flows(p_eff: int, fields, collectives, s: int):
    """``src, dst, tag`` of step ``s`` (all collectives)."""
    ranks = np.arange(p_eff, dtype=np.int64)
    dst = []
    for seq, mirrored in collectives:
        f, level = seq[s]
        dst.append(peers(ranks, fields[f], level, mirrored))
    num = len(collectives)
    return (np.tile(ranks, num), np.concatenate(dst),
            np.repeat(np.arange(num, dtype=np.int16), p_eff))


def _latency_steps(p_eff: int, fields, collectives, blocks: bool) -> list[Step]:
    num = len(collectives)
    share = np.full(num * p_eff, 1.0 / num)
    blocks2d = np.repeat(np.arange(num, dtype=np.int32), p_eff)[:, None] if blocks else None
    steps = []
    for s in range(p_eff.bit_length() - 1):
        src, dst, tag = _step_flows(p_eff, fields, collectives, s)
        traffic = make_traffic(src, dst, share, tag, blocks2d, REDUCE)
        steps.append(Step(traffic, reduce_step_reduction(traffic, True), f"x{s}"))
    return steps


def _bandwidth_steps(p_eff: int, fields, collectives, blocks: bool) -> list[Step]:
    """Reduce-scatter halving over each collective's bit order, allgather
    doubling in the reverse order. Without blocks a reduce-scatter step and
    its mirror-image allgather step share one Traffic object."""
    num = len(collectives)
    levels = p_eff.bit_length() - 1
    ranks = np.arange(p_eff, dtype=np.int64)
    orders = [[fields[f][0] + k for f, k in seq] for seq, _ in collectives]
    rs, ag = [], []
    for s in range(levels):
        src, dst, tag = _step_flows(p_eff, fields, collectives, s)
        per_flow = p_eff >> (s + 1)                 # p'/2^(s+1) blocks
        share = np.full(num * p_eff, per_flow / (p_eff * num))
        if blocks:
            rs_blocks, ag_blocks = [], []
            for t, order in enumerate(orders):
                fixed = sum(1 << b for b in order[:s + 1])
                free = _free_offsets(order[s + 1:])
                partner = ranks ^ (1 << order[s])
                # reduce-scatter: the half of my blocks that the partner keeps
                rs_blocks.append(t * p_eff + (partner & fixed)[:, None] + free[None, :])
                # allgather: every block I hold
                ag_blocks.append(t * p_eff + (ranks & fixed)[:, None] + free[None, :])
            rs_t = make_traffic(src, dst, share, tag, np.concatenate(rs_blocks), REDUCE)
            ag_t = make_traffic(src, dst, share, tag, np.concatenate(ag_blocks), COPY)
        else:
            rs_t = ag_t = make_traffic(src, dst, share, tag)
        rs.append(Step(rs_t, reduce_step_reduction(rs_t, True), f"rs{s}"))
        ag.append(ag_t)
    ag_steps = [Step(t, reduce_step_reduction(t, False), f"ag{i}")
                for i, t in enumerate(reversed(ag))]
    return rs + ag_steps


def _free_offsets(bits: list[int]) -> np.ndarray:
    """Every sum of a subset of ``2^b`` for ``b`` in ``bits`` (int64)."""
    out = np.zeros(1, np.int64)
    for b in bits:
        out = np.concatenate([out, out + (1 << b)])
    return out


def _convert_bool(raw):
    if isinstance(raw, (bool, np.bool_)):
        return bool(raw)
    if isinstance(raw, str):
        low = raw.strip().lower()
        if low in ("true", "1", "yes"):
            return True
        if low in ("false", "0", "no"):
            return False
    if isinstance(raw, (int, np.integer)) and raw in (0, 1):
        return bool(raw)
    raise ValueError(raw)


SPEC = register(AlgorithmSpec(
    name=NAME,
    build=build,
    params=(Param("variant", str, "auto", VARIANTS,
                  "latency: whole-vector exchanges, log2 p steps (§2.3.2); bandwidth: "
                  "Rabenseifner reduce-scatter + allgather, 2 log2 p steps (§2.3.3); "
                  "auto: the faster per size"),
            Param("layout", str, "auto", LAYOUTS,
                  "torus: one torus dimension per step, XOR on that coordinate (§2.3.2 "
                  "Fig. 2, Sack et al.; every dimension a power of two); linear: XOR on rank "
                  "ids; auto: torus when the torus has D >= 2 power-of-two dimensions"),
            Param("mirrored", bool, False, (False, True),
                  "true: 2D collectives on 1/(2D) of the vector each, D plain ones starting "
                  "from different dimensions and D mirrored ones going the other way round "
                  "(§4, §5.1 Mirrored Recursive Doubling)",
                  convert=_convert_bool)),
    doc="Recursive doubling allreduce, latency-optimal or bandwidth-optimal (Rabenseifner), "
        "torus-optimized (one dimension per step) or on rank ids, optionally mirrored over "
        "2D ports; non-power-of-two p folds the extra ranks in with a pre and a post step "
        "(Swing paper §2.3.2–2.3.3, §4, §5.1; GenModel Table 2 RHD).",
    auto_param="variant",
))
