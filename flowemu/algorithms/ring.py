"""Ring allreduce (Swing paper, De Sensi et al., §2.3.1 "Hamiltonian Rings").

A reduce-scatter followed by an allgather around a ring of all ``p`` ranks;
each runs ``p − 1`` steps in which every rank sends one block to the next rank
of the ring, so the schedule has ``2(p − 1)`` steps and each rank sends
``2(p − 1)/p · n`` bytes (no bandwidth deficiency).

The ring
--------
On a 1-D logical shape (a 1-D torus, no topology, or a rank count that is not
the torus size; see :func:`~.base.torus_dims`) the ring is ``0 → 1 → … →
p−1 → 0``. On a torus of ``D >= 2`` dimensions it follows a Hamiltonian cycle
of the torus so that every step is a neighbour exchange (§2.3.1): the snake
cycle of :func:`~.hamiltonian.snake_cycle` for ``ports`` 1 and 2, the two
edge-disjoint cycles of :func:`~.hamiltonian.disjoint_cycles` (HammingMesh
Appendix D) for ``ports=4``.

On a mesh (no wrap-around links) whose nodes are the ranks it follows a
Hamiltonian cycle of the mesh graph (:func:`~.hamiltonian.mesh_cycle`, the
comb) where one exists: ``D >= 2`` and some side even. Otherwise (every side
odd, or a 1-D mesh, which is a path) no order avoids a multi-hop step; the
ring takes one whose longest step is 2 hops and in which every link
direction carries one step (:func:`~.hamiltonian.mesh_ring`), and
``Schedule.note`` says so. A mesh has no two edge-disjoint Hamiltonian
cycles (a 2-D or 3-D mesh's corners have 2 or 3 links, a path's ends one),
so ``ports=4`` is refused there and ``max`` means 2.

Ports (§2.3.1 multiport: the data in ``ports`` parts, one ring per part)
---------------------------------------------------------------------
- ``1``: one ring, forward (tag 0);
- ``2``: the same cycle forward (tag 0) and backward (tag 1), half the vector
  each;
- ``4``: 2-D tori only, and only when ``r = c·k`` and ``gcd(r, c − 1) = 1``
  (either orientation): red forward/backward (tags 0, 1), green
  forward/backward (tags 2, 3), a quarter each; every link direction carries
  at most one ring (Ξ = 1);
- ``max`` (default): 4 where the shape allows it, else 2 (always 2 on a mesh).

Block indexing (ring ``t`` owns blocks ``t·p … t·p + p − 1`` of
``n/(p·ports)``; position ``k`` on the cycle is node ``order[k]``):

- forward ring, reduce-scatter step ``s``: position ``k`` sends block
  ``(k − s) mod p`` to ``k + 1``, which adds it to its own copy; position
  ``k`` ends owning block ``(k + 1) mod p``; allgather step ``s`` sends block
  ``(k + 1 − s) mod p`` (COPY);
- backward ring: position ``k`` sends to ``k − 1`` block ``(k + s) mod p``
  (reduce-scatter) and ``(k − 1 + s) mod p`` (allgather).

On the logical ring this is exactly the original indexing (rank ``r`` sends
block ``(r − s) mod p`` to ``r + 1``).
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
    reduce_step_reduction,
)
from .base import (
    AlgorithmSpec,
    Param,
    Reduction,
    Schedule,
    Step,
    StepLabels,
    Steps,
    convert_ports,
    shape_note,
    torus_dims,
)
from .hamiltonian import (
    disjoint_cycles,
    disjoint_cycles_support,
    mesh_ring,
    snake_cycle,
)
from .registry import register

NAME = "ring"
PORT_CHOICES = ("max", 1, 2, 4)


def ring_orders(p: int, topology, ports) -> tuple[int, str, list[tuple[np.ndarray, int]]]:
    """Resolve ``ports`` and the rings for ``p`` ranks on ``topology``.

    Returns
    -------
    (ports, cycle, rings)
        ``ports`` resolved (``"max"`` replaced), ``cycle`` one of
        ``"logical"``, ``"snake"``, ``"edge-disjoint"`` (tori and rank ids),
        ``"mesh-hamiltonian"``, ``"mesh-odd-path"``, ``"path-zigzag"``
        (meshes, :func:`~.hamiltonian.mesh_ring`), and ``rings`` a list of
        ``(order, direction)``: ``order`` int64[p] the node ids in cycle
        order, ``direction`` +1 (forward) or −1 (backward); ring ``t`` gets
        tag ``t``.
    """
    mesh = mesh_dims(topology, p)
    if mesh is not None:
        return _mesh_orders(topology, mesh, ports)
    dims = torus_dims(topology, p)
    shape = "x".join(map(str, dims))
    if ports == "max":
        ports = 4 if len(dims) == 2 and disjoint_cycles_support(dims)[0] else 2
    if ports == 4:
        if len(dims) != 2:
            raise ConfigError(
                f"algorithm {NAME}: ports=4 needs a 2-D torus (two edge-disjoint Hamiltonian "
                f"cycles, each used both ways; Swing paper §2.3.1); the logical shape of {p} "
                f"ranks is {shape} (D = {len(dims)}); use ports=1, 2 or max")
        ok, why = disjoint_cycles_support(dims)
        if not ok:
            raise ConfigError(f"algorithm {NAME}: ports=4 on {shape}: {why}; use ports=1, 2 "
                              f"or max")
        red, green = disjoint_cycles(dims)
        return 4, "edge-disjoint", [(red, 1), (red, -1), (green, 1), (green, -1)]
    if len(dims) >= 2:
        order, cycle = snake_cycle(dims), "snake"
    else:
        order, cycle = np.arange(p, dtype=np.int64), "logical"
    return ports, cycle, [(order, 1), (order, -1)][:ports]


def mesh_dims(topology, p: int) -> tuple[int, ...] | None:
    """The mesh shape when ``topology`` is a mesh (grid without wrap-around)
    whose nodes are exactly the ``p`` ranks, else ``None`` (rank counts that
    are not the node count keep the 1-D ring of rank ids)."""
    dims = getattr(topology, "dims", None)
    if dims is None or getattr(topology, "wrap", True) or int(np.prod(dims)) != p:
        return None
    return tuple(int(d) for d in dims)


def _mesh_orders(topology, dims: tuple[int, ...], ports):
    if ports == "max":
        ports = 2
    if ports == 4:
        spec = getattr(topology, "spec", "x".join(map(str, dims)))
        if len(dims) == 1:
            why = f"{spec} is a path, whose end nodes have 1 link"
        elif len(dims) <= 3:
            why = (f"the corner nodes of {spec} have only {len(dims)} links, and two "
                   "edge-disjoint Hamiltonian cycles need 4 at every node")
        else:
            why = (f"two edge-disjoint Hamiltonian cycles are built only on 2-D tori (Swing "
                   f"paper §2.3.1), and {spec} is a {len(dims)}-D mesh")
        raise ConfigError(f"algorithm {NAME}: ports=4 on {spec} is not allowed: {why}; use "
                          "ports=1, 2 or max (= 2 on a mesh)")
    ring = mesh_ring(dims)
    return ports, ring.kind, [(ring.order, 1), (ring.order, -1)][:ports]


def mesh_note(topology, order: np.ndarray, cycle: str) -> str:
    """What ``Schedule.note`` says about the ring order on a mesh: nothing on
    a Hamiltonian cycle; otherwise which steps cross more than one hop."""
    if cycle == "mesh-hamiltonian":
        return ""
    spec = getattr(topology, "spec", "the mesh")
    p = len(order)
    hops = np.asarray(topology.distance(order, np.roll(order, -1)))
    if cycle == "mesh-odd-path":
        return (f"{spec} has no Hamiltonian cycle ({p} nodes, odd): the ring follows a "
                f"Hamiltonian path, and its closing step, node {int(order[-1])} → node "
                f"{int(order[0])}, "
                f"crosses {int(hops[-1])} hops (the least possible; every other step is a "
                "neighbour exchange)")
    if p <= 10:
        walk = "→".join(map(str, order))
    else:
        turn = (p + 1) // 2                      # number of even nodes
        walk = (f"0→2→…→{int(order[turn - 1])}→{int(order[turn])}→…→1")
    return (f"{spec} is a path, which has no Hamiltonian cycle: the ring runs {walk}→0, "
            f"{int((hops > 1).sum())} of its {p} steps cross {int(hops.max())} hops (the least "
            "possible; each link direction carries one step of a ring)")


def build(p: int, topology=None, blocks: bool = False, **options) -> Schedule:
    """Ring allreduce schedule on ``p`` ranks (§2.3.1).

    Parameters
    ----------
    p : int
        Number of ranks (>= 2).
    topology : Topology or None
        Its logical torus shape (:func:`~.base.torus_dims`) picks the cycle:
        a Hamiltonian cycle of the torus when ``D >= 2``, else the logical
        ring ``0 → 1 → … → p−1``. A mesh whose nodes are the ranks gets its
        own order (:func:`ring_orders`; module docstring).
    blocks : bool
        Attach block content (``p·ports`` blocks) for verification.
    ports : {"max", 1, 2, 4}
        Number of concurrent rings (see the module docstring).

    Returns
    -------
    Schedule
        ``2(p − 1)`` steps labelled ``rs0..rs{p−2}``, ``ag0..ag{p−2}``; every
        flow carries ``1/(p·ports)`` of the vector. Without blocks every step
        shares one Traffic object, so memory stays O(p) at p = 16,384.
        ``info = {"p_eff": p, "ports": ports, "cycle": ...}``.
    """
    opts = SPEC.parse_options(options)
    p = check_ranks(NAME, p)
    ports, cycle, rings = ring_orders(p, topology, opts["ports"])
    num_blocks = ports * p
    pos = np.arange(p, dtype=np.int64)
    src = np.concatenate([order for order, _ in rings])
    dst = np.concatenate([order[(pos + e) % p] for order, e in rings])
    tag = np.repeat(np.arange(ports), p)
    share = np.full(ports * p, 1.0 / num_blocks)

    if blocks:
        steps = [_block_step(src, dst, share, tag, p, rings, s, allgather=False)
                 for s in range(p - 1)]
        steps += [_block_step(src, dst, share, tag, p, rings, s, allgather=True)
                  for s in range(p - 1)]
        block_share = equal_block_share(num_blocks)
    else:
        traffic = make_traffic(src, dst, share, tag)
        rs_reduction = reduce_step_reduction(traffic, True)
        ag_reduction = Reduction.none()
        # two patterns, 2(p-1) steps: held as arrays, not a Step object a step
        steps = Steps((Step(traffic, rs_reduction, "rs0"), Step(traffic, ag_reduction, "ag0")),
                      np.repeat(np.arange(2, dtype=np.int32), p - 1),
                      StepLabels((("rs", p - 1), ("ag", p - 1))))
        num_blocks, block_share = None, None
    if mesh_dims(topology, p) is not None:
        note = mesh_note(topology, rings[0][0], cycle)
    else:
        note = shape_note(topology, p)
    return Schedule(NAME, f"ports={ports}", p, steps, num_blocks, block_share,
                    {"p_eff": p, "ports": ports, "cycle": cycle}, note=note)


def _block_step(src, dst, share, tag, p: int, rings, s: int, allgather: bool) -> Step:
    k = np.arange(p, dtype=np.int64)
    parts = []
    for t, (_, e) in enumerate(rings):
        if allgather:
            chunk = (k + e - e * s) % p       # forward: k + 1 − s; backward: k − 1 + s
        else:
            chunk = (k - e * s) % p           # forward: k − s; backward: k + s
        parts.append(t * p + chunk)
    blocks2d = np.concatenate(parts)[:, None]
    traffic = make_traffic(src, dst, share, tag, blocks2d, COPY if allgather else REDUCE)
    label = f"ag{s}" if allgather else f"rs{s}"
    return Step(traffic, reduce_step_reduction(traffic, not allgather), label)


SPEC = register(AlgorithmSpec(
    name=NAME,
    build=build,
    params=(Param("ports", int, "max", PORT_CHOICES,
                  "rings in parallel, each on its share of the vector: 1 one ring; 2 the "
                  "ring both ways; 4 two edge-disjoint Hamiltonian cycles of a 2-D torus, "
                  "each both ways (r = c*k, gcd(r, c-1) = 1; not on a mesh); max: 4 where "
                  "the shape allows it, else 2 (always 2 on a mesh; §2.3.1 multiport)",
                  convert=convert_ports),),
    doc="Ring allreduce: reduce-scatter + allgather around a Hamiltonian cycle (the logical "
        "ring 0→1→…→p−1 on 1-D, a snake cycle or two edge-disjoint cycles of a torus, a "
        "comb cycle of a mesh with an even side; else an order with 2-hop steps, noted), "
        "2(p−1) steps of n/(p·ports) (Swing paper §2.3.1).",
    topology_bound=True,
))
