"""Helpers shared by the schedule builders: rank-count checks and Traffic with
(optional) block content.

Builders compute ``src``/``dst``/``share``/``tag`` the same way whether or not
block content is requested and only *add* the block lists when
``blocks=True``; this keeps the two kinds of schedule identical by
construction (the tests still prove it).
"""

from __future__ import annotations

import operator

import numpy as np

from ..core.errors import ConfigError
from .base import COPY, REDUCE, Reduction, Traffic

__all__ = [
    "COPY",
    "MAX_SEGMENTS",
    "REDUCE",
    "check_ranks",
    "check_root",
    "check_segments",
    "equal_block_share",
    "make_traffic",
    "pof2",
    "ragged_traffic",
    "reduce_step_reduction",
    "uniform_block_lists",
    "whole_vector_blocks",
]


def check_ranks(algorithm: str, p) -> int:
    """Return ``p`` as an int; raise :class:`ConfigError` unless it is an
    integer >= 2 (an allreduce needs two ranks)."""
    if isinstance(p, bool):
        raise ConfigError(f"algorithm {algorithm}: ranks p={p!r} must be an integer >= 2")
    try:
        value = operator.index(p)
    except TypeError:
        raise ConfigError(
            f"algorithm {algorithm}: ranks p={p!r} must be an integer >= 2") from None
    if value < 2:
        raise ConfigError(f"algorithm {algorithm}: ranks p={value} must be >= 2")
    return value


def check_root(algorithm: str, p: int, root) -> int:
    """``root`` as an int; a ConfigError unless it is one of the ``p`` ranks."""
    if isinstance(root, bool) or not isinstance(root, (int, np.integer)) \
            or not 0 <= root < p:
        raise ConfigError(f"algorithm {algorithm}: root={root!r} must be a rank of the {p} "
                          f"ranks (0..{p - 1})")
    return int(root)


#: most segments a pipelined schedule (chain, trees) may cut the vector into
MAX_SEGMENTS = 1 << 16


def check_segments(algorithm: str, segments) -> int:
    """``segments`` as an int; a ConfigError unless it is an integer
    1..:data:`MAX_SEGMENTS`."""
    if isinstance(segments, (bool, np.bool_)) or not isinstance(segments, (int, np.integer)) \
            or not 1 <= segments <= MAX_SEGMENTS:
        raise ConfigError(f"algorithm {algorithm}: segments={segments!r} must be an integer "
                          f"1..{MAX_SEGMENTS}")
    return int(segments)


def pof2(p: int) -> int:
    """2^⌊log₂p⌋, the largest power of two <= ``p``."""
    return 1 << (int(p).bit_length() - 1)


def equal_block_share(num_blocks: int) -> np.ndarray:
    """``float64[num_blocks]`` of equal blocks (each ``1/num_blocks``)."""
    return np.full(num_blocks, 1.0 / num_blocks)


def uniform_block_lists(blocks2d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CSR (``block_ptr``, ``block_idx``) for flows that all carry the same
    number ``k`` of blocks: row ``f`` of the ``(F, k)`` array lists flow
    ``f``'s blocks."""
    blocks2d = np.asarray(blocks2d)
    num_flows, k = blocks2d.shape
    block_ptr = np.arange(num_flows + 1, dtype=np.int64) * k
    return block_ptr, blocks2d.reshape(-1).astype(np.int32)


def whole_vector_blocks(num_flows: int, num_blocks: int) -> np.ndarray:
    """``(num_flows, num_blocks)`` block lists of flows carrying every block."""
    return np.broadcast_to(np.arange(num_blocks, dtype=np.int32), (num_flows, num_blocks))


def make_traffic(src, dst, share, tag=None, blocks2d=None, op=None) -> Traffic:
    """Traffic from flow arrays; with ``blocks2d`` (one row of block ids per
    flow) and ``op`` (a scalar :data:`REDUCE`/:data:`COPY` or an array) it
    also carries block content. ``share`` is given, never derived from the
    blocks, so that block and non-block schedules are bit-identical."""
    if blocks2d is None:
        return Traffic(src, dst, share, tag)
    block_ptr, block_idx = uniform_block_lists(blocks2d)
    op_arr = np.broadcast_to(np.asarray(op, dtype=np.int8), (len(src),))
    return Traffic(src, dst, share, tag, block_ptr, block_idx, op_arr)


def ragged_traffic(src, dst, share, lists=None, op=COPY) -> Traffic:
    """Traffic from flow arrays; with ``lists`` (one sequence of block ids a
    flow, of any lengths) it also carries block content, every flow ``op``."""
    src = np.asarray(src, np.int32)
    dst = np.asarray(dst, np.int32)
    share = np.asarray(share, np.float64)
    if lists is None:
        return Traffic(src, dst, share)
    if isinstance(lists, np.ndarray) and lists.ndim == 2:   # every flow as many blocks
        ptr, idx = uniform_block_lists(lists)
    else:
        ptr = np.zeros(len(src) + 1, np.int64)
        ptr[1:] = np.cumsum([len(x) for x in lists])
        idx = (np.concatenate([np.asarray(x, np.int64) for x in lists]) if len(lists)
               else np.zeros(0, np.int64)).astype(np.int32)
    return Traffic(src, dst, share, None, ptr, idx, np.full(len(src), op, np.int8))


def reduce_step_reduction(traffic: Traffic, reduces: bool) -> Reduction:
    """Reduction after a step whose flows are all REDUCE (``reduces``) or all
    COPY: every REDUCE flow carries distinct blocks into its receiver, so each
    is an independent fan-in-2 combination."""
    if not reduces:
        return Reduction.none()
    return Reduction(traffic.dst, traffic.share, np.full(traffic.num_flows, 2, np.int32))
