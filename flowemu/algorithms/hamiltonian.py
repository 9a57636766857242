"""Hamiltonian cycles of tori, for ring allreduce that only talks to torus
neighbours (Swing paper, De Sensi et al., §2.3.1 "Hamiltonian Rings"; the
edge-disjoint pair follows HammingMesh, Hoefler et al., Appendix D,
Listing 1).

A cycle is returned as ``int64[p]``: the node ids (row-major over ``dims``,
last dimension fastest, as :class:`~flowemu.topology.torus.Torus`) in cycle
order; consecutive entries, and the last and the first, are torus
neighbours (they differ by ±1 modulo the size in exactly one coordinate).

:func:`snake_cycle` works for every shape (every dimension >= 2).
:func:`disjoint_cycles` builds two edge-disjoint Hamiltonian cycles of an
``r × c`` 2-D torus when ``r = c·k`` and ``gcd(r, c − 1) = 1`` (or the same
with the two dimensions swapped).
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import ConfigError

__all__ = ["disjoint_cycles", "disjoint_cycles_support", "snake_cycle"]


def _int_dims(dims) -> tuple[int, ...]:
    dims = tuple(int(d) for d in dims)
    if not dims or any(d < 2 for d in dims):
        raise ConfigError(f"dims: {dims!r} is not allowed; every dimension must be >= 2")
    return dims


def _direction_plan(outer: int, inner: int) -> np.ndarray:
    """Directions ``e[i] = ±1`` in which row ``i`` of ``outer`` rows runs
    around an ``inner``-node cycle, such that the cycle closes: row ``i``
    starts at position ``a[i]`` and ends at ``a[i] − e[i]`` (after visiting all
    ``inner`` positions), row ``i + 1`` starts where row ``i`` ended, and
    ``Σ e ≡ 0 (mod inner)`` brings the last row back above the first start.

    ``outer`` even: alternate (+, −, +, −, …), the boustrophedon.
    ``outer`` and ``inner`` odd with ``inner <= outer``: ``inner`` rows +, then
    alternate (Σ e = inner). The caller never asks for other cases."""
    e = np.where(np.arange(outer) % 2 == 0, 1, -1).astype(np.int64)
    if outer % 2:
        if inner % 2 == 0 or inner > outer:
            raise AssertionError("no closing direction plan")  # caller picks the orientation
        e[:inner] = 1
        e[inner:] = np.where(np.arange(outer - inner) % 2 == 0, -1, 1)
    return e


def _rows_around_cycle(outer: int, inner: int) -> tuple[np.ndarray, np.ndarray]:
    """``(row, position)`` of every step of a Hamiltonian cycle of
    ``C_outer × C_inner`` that walks each row all the way round the inner
    cycle and steps to the next row keeping the inner position."""
    e = _direction_plan(outer, inner)
    start = np.concatenate([[0], -np.cumsum(e)[:-1]])           # a[i+1] = a[i] − e[i]
    k = np.arange(inner, dtype=np.int64)
    pos = (start[:, None] + e[:, None] * k[None, :]) % inner
    row = np.broadcast_to(np.arange(outer, dtype=np.int64)[:, None], pos.shape)
    return row.reshape(-1), pos.reshape(-1)


def _product_cycle(a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
    """Hamiltonian cycle of ``C_a × C_b`` (``a, b >= 2``) as ``(i, j)`` index
    arrays. The outer loop runs over the factor that makes the cycle close:
    an even one (boustrophedon), or, when both are odd, the larger one."""
    if a % 2 == 0 or (b % 2 == 1 and a >= b):
        return _rows_around_cycle(a, b)
    j, i = _rows_around_cycle(b, a)
    return i, j


def snake_cycle(dims) -> np.ndarray:
    """A Hamiltonian cycle of the torus ``dims`` (any shape, every dimension
    >= 2) in which consecutive nodes are torus neighbours.

    Built recursively: ``H(d_1, …, d_{D−1})`` is a cycle of the sub-torus of
    the last ``D − 1`` dimensions; the torus is ``C_{d_0} × H`` and
    :func:`_product_cycle` threads it. When ``d_0`` is even (the common case)
    this is the reflected (boustrophedon) Gray code: for each index of
    dimension 0 the sub-torus path is walked forwards, then backwards, and
    the wrap-around link of dimension 0 closes the cycle. With every
    dimension odd the rows also run around the sub-cycle (modular Gray code)
    so the total shift is a multiple of its length.

    Returns
    -------
    int64[prod(dims)]
        Node ids (row-major) in cycle order, starting at node 0.
    """
    dims = _int_dims(dims)
    cycle = np.arange(dims[-1], dtype=np.int64)
    for axis in range(len(dims) - 2, -1, -1):
        d = dims[axis]
        stride = math.prod(dims[axis + 1:])
        i, j = _product_cycle(d, len(cycle))
        cycle = i * stride + cycle[j]
    start = int(np.flatnonzero(cycle == 0)[0])
    return np.roll(cycle, -start)


# ---------------------------------------------------------------- edge-disjoint pair

def disjoint_cycles_support(dims) -> tuple[bool, str]:
    """Whether :func:`disjoint_cycles` can build two edge-disjoint Hamiltonian
    cycles on ``dims``, and if not, why (a sentence for an error message)."""
    dims = _int_dims(dims)
    shape = "x".join(map(str, dims))
    if len(dims) != 2:
        return False, (f"two edge-disjoint Hamiltonian cycles are built only on 2-D tori "
                       f"(Swing paper §2.3.1: the 4-ring algorithm does not work for D > 2); "
                       f"the logical shape is {shape} (D = {len(dims)})")
    if _orientation(dims) is None:
        return False, (f"an r x c torus has the two edge-disjoint Hamiltonian cycles of "
                       f"HammingMesh Appendix D only when r = c*k (k >= 1) and "
                       f"gcd(r, c - 1) = 1 (Swing paper §2.3.1), with either dimension as r; "
                       f"{shape} satisfies neither orientation (e.g. 4x4, 8x4, 8x8, 9x3, 16x8 "
                       f"work; 12x4, 3x5 do not)")
    return True, ""


def _orientation(dims) -> tuple[int, int, bool] | None:
    """``(r, c, swapped)`` with ``r = c·k`` and ``gcd(r, c − 1) = 1``; rows are
    axis 0 unless ``swapped``."""
    d0, d1 = dims
    for r, c, swapped in ((d0, d1, False), (d1, d0, True)):
        if r % c == 0 and math.gcd(r, c - 1) == 1:
            return r, c, swapped
    return None


def disjoint_cycles(dims) -> tuple[np.ndarray, np.ndarray]:
    """Two edge-disjoint Hamiltonian cycles ("red" and "green") of a 2-D
    torus (HammingMesh Appendix D, Listing 1; Swing paper §2.3.1).

    With ``X = x1·c + x0`` (``0 <= x1 < r``, ``0 <= x0 < c``) the cycles visit,
    in order of ``X``,

    - red:   ``(row, col) = (x1, (x0 − x1) mod c)`` — each row walked left to
      right from a start shifted by one per row, one row step between rows;
      it closes because ``c`` divides ``r``;
    - green: ``(row, col) = ((x0 + (c − 1)·x1) mod r, x1 mod c)`` — the
      transposed walk; it visits every node once because
      ``gcd(r/c, c − 1) = 1``, and it takes exactly the one column link per
      row that red leaves unused (row ``(c − 1)(x1 + 1) mod r``, a bijection
      of the rows because ``gcd(r, c − 1) = 1``), so the two cycles share no
      link. (Listing 1 as printed lost the text after each ``%``; the formulas
      above are the ones that satisfy the paper's conditions exactly.)

    ``r`` is the number of rows (axis 0) and ``c`` of columns (axis 1); when
    only the transposed shape qualifies the roles of the axes are swapped.

    Returns
    -------
    (int64[p], int64[p])
        Node ids in cycle order, each starting at node 0.

    Raises
    ------
    ConfigError
        When the shape does not qualify (see :func:`disjoint_cycles_support`).
    """
    dims = _int_dims(dims)
    ok, why = disjoint_cycles_support(dims)
    if not ok:
        raise ConfigError(why)
    r, c, swapped = _orientation(dims)
    x = np.arange(r * c, dtype=np.int64)
    x1, x0 = x // c, x % c
    red = (x1 % r, (x0 - x1) % c)
    green = ((x0 + (c - 1) * x1) % r, x1 % c)
    out = []
    for row, col in (red, green):
        node = col * r + row if swapped else row * c + col
        out.append(np.roll(node, -int(np.flatnonzero(node == 0)[0])))
    return out[0], out[1]
