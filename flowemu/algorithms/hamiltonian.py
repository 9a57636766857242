"""Hamiltonian cycles of tori and meshes, for ring allreduce that only talks
to network neighbours (Swing paper, De Sensi et al., §2.3.1 "Hamiltonian
Rings"; the edge-disjoint pair follows HammingMesh, Hoefler et al., Appendix
D, Listing 1).

A cycle is returned as ``int64[p]``: the node ids (row-major over ``dims``,
last dimension fastest, as :class:`~flowemu.topology.torus.Torus`) in cycle
order; consecutive entries, and the last and the first, are torus
neighbours (they differ by ±1 modulo the size in exactly one coordinate).

:func:`snake_cycle` works for every shape (every dimension >= 2).
:func:`disjoint_cycles` builds two edge-disjoint Hamiltonian cycles of an
``r × c`` 2-D torus when ``r = c·k`` and ``gcd(r, c − 1) = 1`` (or the same
with the two dimensions swapped).

Meshes (no wrap-around links; :func:`mesh_ring`): :func:`mesh_cycle` is a
Hamiltonian cycle of the mesh graph, which exists exactly when ``D >= 2`` and
some side is even (or the mesh is the 2-node path). Otherwise the mesh is
bipartite with an odd node count, or a path, and no ring order avoids
multi-hop steps; :func:`mesh_odd_path` and :func:`path_zigzag` give orders
whose longest step is 2 hops (the least possible) and in which every link
direction still carries one step of a ring.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..core.errors import ConfigError

__all__ = ["MeshRing", "disjoint_cycles", "disjoint_cycles_support", "mesh_cycle",
           "mesh_has_cycle", "mesh_odd_path", "mesh_ring", "path_zigzag", "snake_cycle"]


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


# ---------------------------------------------------------------- meshes

def mesh_has_cycle(dims) -> tuple[bool, str]:
    """Whether the mesh (grid graph, no wrap-around) ``dims`` has a
    Hamiltonian cycle, and if not, why (a phrase for a note or an error).

    A mesh is bipartite (colour a node by the parity of its coordinate sum),
    so a cycle through every node needs an even node count: some side even.
    A 1-D mesh of more than 2 nodes is a path, whose end nodes have one link.
    The 2-node path counts as a cycle: ``0 → 1 → 0`` uses its one link in
    both directions, which a ring needs and which are two links here."""
    dims = _int_dims(dims)
    p = math.prod(dims)
    if len(dims) == 1:
        if p == 2:
            return True, ""
        return False, f"a path of {p} nodes has no Hamiltonian cycle (its end nodes have one link)"
    if p % 2:
        return False, f"{p} nodes, odd"
    return True, ""


def _snake_path_coords(dims: tuple[int, ...]) -> np.ndarray:
    """Coordinates ``int64[len(dims), prod(dims)]`` of the boustrophedon
    Hamiltonian path of the mesh ``dims`` (reflected mixed-radix Gray code):
    the sub-path over the later dimensions is walked forwards for even
    indices of the first dimension and backwards for odd ones, recursively.
    Consecutive entries are mesh neighbours; it starts at the origin."""
    m = math.prod(dims)
    rem = np.arange(m, dtype=np.int64)
    coords = np.empty((len(dims), m), dtype=np.int64)
    for axis, d in enumerate(dims):          # one pass per dimension, vectorized over nodes
        block = m // math.prod(dims[:axis + 1])
        digit = rem // block
        rem = rem % block
        coords[axis] = digit
        rem = np.where(digit % 2 == 1, block - 1 - rem, rem)   # odd digit: walk backwards
    return coords


def _embed(dims: tuple[int, ...], row_axis: int, row: np.ndarray, col: np.ndarray) -> np.ndarray:
    """Node ids of points ``(row, col)`` of the 2-D grid ``dims[row_axis] ×
    prod(other dims)`` whose column index runs along the snake path of the
    other dimensions. The grid's links are mesh links, so any walk over
    grid neighbours is a walk over mesh neighbours."""
    rest = tuple(d for i, d in enumerate(dims) if i != row_axis)
    snake = _snake_path_coords(rest)[:, col]
    coords = np.insert(snake, row_axis, row, axis=0)
    return np.ravel_multi_index(tuple(coords), dims).astype(np.int64)


def _comb(rows: int, cols: int) -> tuple[np.ndarray, np.ndarray]:
    """``(row, col)`` of the comb cycle of a ``rows × cols`` grid, ``rows``
    even, ``cols >= 2``: along row 0, snake rows ``1 … rows−1`` back and
    forth over columns ``cols−1 … 1`` (an odd number of rows, so the snake
    ends in column 1 of the last row), then up column 0 to row 1; row 1 to
    row 0 in column 0 closes the cycle."""
    top_c = np.arange(cols, dtype=np.int64)
    body_r = np.repeat(np.arange(1, rows, dtype=np.int64), cols - 1)
    k = np.tile(np.arange(cols - 1, dtype=np.int64), rows - 1)
    body_c = np.where(body_r % 2 == 1, cols - 1 - k, 1 + k)     # odd rows leftwards
    back_r = np.arange(rows - 1, 0, -1, dtype=np.int64)
    row = np.concatenate([np.zeros(cols, np.int64), body_r, back_r])
    col = np.concatenate([top_c, body_c, np.zeros(rows - 1, np.int64)])
    return row, col


def mesh_cycle(dims) -> np.ndarray:
    """A Hamiltonian cycle of the mesh ``dims`` (no wrap-around): consecutive
    nodes, and the last and the first, are joined by a mesh link.

    Construction (the classic comb): pick an even side as the rows and lay
    the other dimensions out as columns along their boustrophedon snake path
    (:func:`_snake_path_coords`), so the mesh contains the ``rows × cols``
    grid graph. Walk row 0 left to right, snake the remaining (odd number
    of) rows over columns ``cols−1 … 1``, and return up column 0. For 2-D
    this is the comb itself; for ``D > 2`` it is the comb on the grid of one
    even dimension against a snake of the others. The 2-node path gives
    ``[0, 1]``.

    Returns
    -------
    int64[prod(dims)]
        Node ids (row-major over ``dims``, as
        :class:`~flowemu.topology.torus.Torus`) in cycle order, from node 0.

    Raises
    ------
    ConfigError
        When the mesh has no Hamiltonian cycle (:func:`mesh_has_cycle`).
    """
    dims = _int_dims(dims)
    ok, why = mesh_has_cycle(dims)
    if not ok:
        raise ConfigError(f"dims: mesh {'x'.join(map(str, dims))} has no Hamiltonian cycle "
                          f"({why}); a mesh needs D >= 2 and an even side")
    if len(dims) == 1:
        return np.arange(2, dtype=np.int64)
    row_axis = next(i for i, d in enumerate(dims) if d % 2 == 0)
    row, col = _comb(dims[row_axis], math.prod(dims) // dims[row_axis])
    return _embed(dims, row_axis, row, col)


def _odd_straight(rows: int, cols: int) -> tuple[np.ndarray, np.ndarray]:
    """``(row, col)`` of a Hamiltonian path of the ``rows × cols`` grid
    (both odd, ``rows >= 3``, ``cols >= 5``) from (0, 2) to (2, 2) that
    passes (1, 1) → (1, 2) → (1, 3): the closing step (2, 2) → (0, 2) runs
    straight through (1, 2) over two links the path does not use.

    Rows 0–2: (0, 2) left to (0, 0), down column 0 and up column 1 to row 1,
    right along row 1 to (1, 3), up, along row 0 to the last column, then
    down and up the columns ``cols−1 … 4`` over rows 1–2 (an odd number of
    columns, so it ends at (2, 4)), then (2, 3), (2, 2). Rows ``3 …
    rows−1`` (an even number) form a comb cycle (:func:`_comb`) spliced in
    between (2, 4) and (2, 3): its edge (3, 4)–(3, 3) is replaced by the
    links up to row 2."""
    tail_c = np.repeat(np.arange(cols - 1, 3, -1, dtype=np.int64), 2)
    k = np.tile(np.arange(2, dtype=np.int64), cols - 4)
    tail_r = np.where(tail_c % 2 == 0, 1 + k, 2 - k)       # column cols−1 (even) down
    parts_r = [np.array([0, 0, 0, 1, 2, 2, 1, 1, 1]), np.zeros(cols - 3, np.int64), tail_r]
    parts_c = [np.array([2, 1, 0, 0, 0, 1, 1, 2, 3]), np.arange(3, cols, dtype=np.int64),
               tail_c]
    if rows > 3:
        low_r, low_c = _comb(rows - 3, cols)
        parts_r.append(np.roll(low_r, -4) + 3)             # from (3, 4) round to (3, 3)
        parts_c.append(np.roll(low_c, -4))
    parts_r.append(np.array([2, 2]))
    parts_c.append(np.array([3, 2]))
    return (np.concatenate(parts_r).astype(np.int64),
            np.concatenate(parts_c).astype(np.int64))


def _odd_corner(rows: int, cols: int) -> tuple[np.ndarray, np.ndarray]:
    """``(row, col)`` of a Hamiltonian path of the ``rows × cols`` grid
    (both odd, >= 3) from (0, 0) to (1, 1): along row 0; down column
    ``cols−1``, up ``cols−2``, … over rows ``1 … rows−1`` and columns
    ``cols−1 … 2`` (an odd number, so column 2 is walked down); then up
    through rows ``rows−1 … 1`` over the pair of columns 1, 0, zig-zagging,
    to (1, 1). The closing step (1, 1) → (0, 0) has two minimal routes, via
    (0, 1) and via (1, 0), over four link directions the forward path does
    not use; the backward ring's closing step shares one link of each route
    with a forward step."""
    top_c = np.arange(cols, dtype=np.int64)
    mid_c = np.repeat(np.arange(cols - 1, 1, -1, dtype=np.int64), rows - 1)
    k = np.tile(np.arange(rows - 1, dtype=np.int64), cols - 2)
    mid_r = np.where((cols - 1 - mid_c) % 2 == 0, 1 + k, rows - 1 - k)
    # row r of rows−1 … 1 starts at column 1 when r is even (rows−1 is even,
    # so the first of them starts next to column 2)
    low_r = np.repeat(np.arange(rows - 1, 0, -1, dtype=np.int64), 2)
    j = np.tile(np.arange(2, dtype=np.int64), rows - 1)
    low_c = np.where(low_r % 2 == 0, 1 - j, j)
    return (np.concatenate([np.zeros(cols, np.int64), mid_r, low_r]),
            np.concatenate([top_c, mid_c, low_c]))


def mesh_odd_path(dims) -> np.ndarray:
    """A Hamiltonian path of an odd mesh (``D >= 2``, every side odd) whose
    ends are 2 hops apart, so that closed into a ring one step crosses 2
    hops and every other step is a neighbour exchange.

    A mesh with an odd node count has no Hamiltonian cycle and, being
    bipartite, any ring order has a step between two nodes of the same
    colour, which are at least 2 hops apart: 2 is the least possible.

    The mesh is laid out as a ``rows × cols`` grid: ``rows`` one side,
    columns along the boustrophedon snake path of the other sides (as
    :func:`mesh_cycle`). With ``cols >= 5`` (every shape but 3x3;
    :func:`_odd_straight`) the 2-hop step runs straight along the row
    axis through a node the path crosses sideways, so no other step of
    either ring direction uses its links: with ``ports`` 1 or 2 every link
    direction carries one step. On 3x3 (:func:`_odd_corner`) the 2-hop step
    joins a corner to the centre; with two ports its backward copy shares a
    link with a forward step.

    Returns
    -------
    int64[prod(dims)]
        Node ids in path order; the last is 2 hops from the first.
    """
    dims = _int_dims(dims)
    if len(dims) < 2 or any(d % 2 == 0 for d in dims):
        raise ConfigError(f"dims: {'x'.join(map(str, dims))} is not allowed; mesh_odd_path "
                          "needs D >= 2 and every side odd")
    # rows: axis 0, unless a 2-D mesh has only 3 columns and more rows
    row_axis = 1 if len(dims) == 2 and dims[1] < 5 <= dims[0] else 0
    rows = dims[row_axis]
    cols = math.prod(dims) // rows
    row, col = (_odd_straight if cols >= 5 else _odd_corner)(rows, cols)
    return _embed(dims, row_axis, row, col)


def path_zigzag(n: int) -> np.ndarray:
    """Ring order for the path ``0 – 1 – … – n−1``: the even nodes upwards,
    then the odd nodes downwards (``0, 2, 4, …, 5, 3, 1``).

    Every step crosses 2 links except the two at the ends, which cross 1,
    and every link direction carries exactly one step: the upward steps use
    each rightward link once, the downward steps each leftward link once. A
    ring on a path must cross every cut both ways and (``n > 2``) has a
    step of 2 hops or more, so both the load and the longest step are the
    least possible. The plain order ``0 → … → n−1 → 0`` has the same load
    but its closing step crosses ``n − 1`` hops.

    Returns
    -------
    int64[n]
    """
    n = int(n)
    if n < 2:
        raise ConfigError(f"n: {n} is not allowed; a path needs >= 2 nodes")
    return np.concatenate([np.arange(0, n, 2, dtype=np.int64),
                           np.arange(n - 1 - (n % 2 == 1), 0, -2, dtype=np.int64)])


class MeshRing(NamedTuple):
    """The ring order :func:`mesh_ring` picks for a mesh."""

    #: node ids in ring order
    order: np.ndarray
    #: ``"mesh-hamiltonian"`` (:func:`mesh_cycle`), ``"mesh-odd-path"``
    #: (:func:`mesh_odd_path`) or ``"path-zigzag"`` (:func:`path_zigzag`)
    kind: str
    #: why the mesh has no Hamiltonian cycle, ``""`` when it has one
    why: str


def mesh_ring(dims) -> MeshRing:
    """The best ring order on the mesh ``dims``: a Hamiltonian cycle where
    one exists, else an order whose longest step is 2 hops and that loads
    every link direction with at most one step."""
    dims = _int_dims(dims)
    ok, why = mesh_has_cycle(dims)
    if ok:
        return MeshRing(mesh_cycle(dims), "mesh-hamiltonian", "")
    if len(dims) == 1:
        return MeshRing(path_zigzag(dims[0]), "path-zigzag", why)
    return MeshRing(mesh_odd_path(dims), "mesh-odd-path", why)
