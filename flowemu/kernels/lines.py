"""Expansion of a 1-D step over every line of a torus dimension (numba).

Torus algorithms (Swing, bucket) describe a step on the coordinates
``0..d-1`` of one dimension and repeat it on every line of that dimension:
the line through base node ``b`` maps coordinate ``c`` to node ``b + c *
stride``. These kernels write the repeated arrays straight into the step's
output at ``offset`` (line-major: line ``i``, then entry ``j`` of the 1-D
step), one pass, no temporaries of the step's size.
"""

from __future__ import annotations

import numpy as np

from .jit import njit


@njit
def expand_nodes(bases, stride, coord, out, offset):
    """``out[offset + i·F + j] = bases[i] + coord[j]·stride``.

    Parameters
    ----------
    bases : int32[L]
        First node of each line.
    stride : int
        Node-id stride of the dimension.
    coord : int64[F]
        Coordinates of the 1-D step's entries.
    out : int32[>= offset + L·F]
    offset : int
    """
    nf = coord.shape[0]
    k = offset
    for i in range(bases.shape[0]):
        b = bases[i]
        for j in range(nf):
            out[k] = b + coord[j] * stride
            k += 1


@njit
def expand_shares(unit, count, out, offset):
    """``out[offset + i·F + j] = unit[i]·count[j]`` (float64)."""
    nf = count.shape[0]
    k = offset
    for i in range(unit.shape[0]):
        u = unit[i]
        for j in range(nf):
            out[k] = u * count[j]
            k += 1


@njit
def expand_flows(bases, stride, src_coord, dst_coord, unit, count, src, dst, share, offset):
    """:func:`expand_nodes` of the senders and of the receivers and
    :func:`expand_shares` of the shares in one pass: ``src[offset + i·F +
    j] = bases[i] + src_coord[j]·stride``, ``dst`` likewise, ``share[...] =
    unit[i]·count[j]``. The coordinates become node-id steps once, not per
    line."""
    nf = src_coord.shape[0]
    ds = np.empty(nf, dtype=src.dtype)
    dd = np.empty(nf, dtype=dst.dtype)
    for j in range(nf):
        ds[j] = src_coord[j] * stride
        dd[j] = dst_coord[j] * stride
    k = offset
    for i in range(bases.shape[0]):
        b = bases[i]
        u = unit[i]
        for j in range(nf):
            src[k + j] = b + ds[j]
            dst[k + j] = b + dd[j]
            share[k + j] = u * count[j]
        k += nf
