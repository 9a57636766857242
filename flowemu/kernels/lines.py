"""Expansion of a 1-D step over every line of a torus dimension (numba).

Torus algorithms (Swing, bucket) describe a step on the coordinates
``0..d-1`` of one dimension and repeat it on every line of that dimension:
the line through base node ``b`` maps coordinate ``c`` to node ``b + c *
stride``. These kernels write the repeated arrays straight into the step's
output at ``offset`` (line-major, entries of the 1-D step in order), one pass
and no temporaries; the share of entry ``j`` on line ``i`` is ``unit[i] *
count[j]``.
"""

from __future__ import annotations

from .jit import njit


@njit
def expand_pairs(bases, stride, unit, src, dst, count, out_src, out_dst, out_share, offset):
    """Flows ``b + src[j]·stride -> b + dst[j]·stride`` with share
    ``unit[i]·count[j]`` for every line ``i`` (base ``bases[i]``).

    Parameters
    ----------
    bases : int32[L]
    stride : int
    unit : float64[L]
    src, dst, count : int64[F]
    out_src, out_dst : int32[>= offset + L·F]
    out_share : float64[>= offset + L·F]
    offset : int
        First output index written.
    """
    nf = src.shape[0]
    k = offset
    for i in range(bases.shape[0]):
        b = bases[i]
        u = unit[i]
        for j in range(nf):
            out_src[k] = b + src[j] * stride
            out_dst[k] = b + dst[j] * stride
            out_share[k] = u * count[j]
            k += 1


@njit
def expand_points(bases, stride, unit, coord, count, out_node, out_share, offset):
    """Nodes ``b + coord[j]·stride`` with share ``unit[i]·count[j]`` for
    every line ``i`` (see :func:`expand_pairs`)."""
    nf = coord.shape[0]
    k = offset
    for i in range(bases.shape[0]):
        b = bases[i]
        u = unit[i]
        for j in range(nf):
            out_node[k] = b + coord[j] * stride
            out_share[k] = u * count[j]
            k += 1
