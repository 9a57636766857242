"""The collectives flowemu times, what each computes and what its size means.

Sizes keep one meaning per collective, the one nccl-tests reports (its
``PERFORMANCE.md``): the size ``n`` of a run is

- ``allreduce``, ``broadcast``, ``reduce``: the vector each rank holds;
- ``reduce_scatter``: each rank's input vector (it ends with ``n/p`` of it,
  reduced over every rank);
- ``allgather``: the gathered vector (each rank contributes ``n/p``);
- ``gather``, ``scatter``: the root's whole buffer (``n/p`` from / to each
  rank);
- ``alltoall``: what each rank sends in all (``n/p`` to each rank, itself
  included).

A schedule's flow shares are fractions of that ``n``. Bus bandwidth is the
algorithm bandwidth ``n / time`` times nccl-tests' factor
(:attr:`Collective.busbw_factor`): ``2(p−1)/p`` for allreduce, ``(p−1)/p``
for reduce-scatter, allgather, gather, scatter and all-to-all, 1 for
broadcast and reduce.

Blocks. The block-level verifier (:func:`flowemu.algorithms.verify.verify`)
states each postcondition over the schedule's blocks. Every block of a
rooted or personalised collective belongs to a rank (``Schedule.block_owner``;
by default block ``b`` of ``B`` belongs to rank ``b // (B/p)``, so each rank's
part is a contiguous run of ``B/p`` blocks): the rank that ends with it
(reduce-scatter, scatter), starts with it (allgather, gather) or sends it
(all-to-all, whose block also has a receiver, ``Schedule.block_dest``; by
default block ``b`` of ``B = m·p²`` goes from rank ``b // (m·p)`` to rank
``(b // m) mod p``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.errors import ConfigError, suggest

__all__ = ["COLLECTIVES", "Collective", "collective_names", "get_collective"]


@dataclass(frozen=True)
class Collective:
    """One collective operation: its name, what it computes, what its size
    means, and nccl-tests' bus-bandwidth factor."""

    name: str
    #: what it leaves where (the verifier's postcondition, in words)
    computes: str
    #: what the size ``n`` of a run is
    size: str
    #: it has a root rank (broadcast, reduce, gather, scatter)
    rooted: bool = False
    #: it combines contributions (allreduce, reduce-scatter, reduce)
    reduces: bool = False
    #: a block's data is personalised: it belongs to one rank (by
    #: ``Schedule.block_owner``)
    owned: bool = False
    #: the blocks of all ranks sum to ``p`` vectors, not one (all-to-all:
    #: each rank sends ``n``)
    per_rank_total: bool = False

    def busbw_factor(self, p: int) -> float:
        """nccl-tests' factor from algorithm to bus bandwidth on ``p`` ranks."""
        if self.name == "allreduce":
            return 2.0 * (p - 1) / p
        if self.name in ("broadcast", "reduce"):
            return 1.0
        return (p - 1) / p


COLLECTIVES: dict[str, Collective] = {c.name: c for c in (
    Collective("allreduce", "every rank holds every block reduced over all ranks",
               "the vector each rank holds", reduces=True),
    Collective("reduce_scatter", "rank r holds its own blocks reduced over all ranks",
               "each rank's input vector (it keeps n/p of it)", reduces=True, owned=True),
    Collective("allgather", "every rank holds every rank's blocks",
               "the gathered vector (n/p from each rank)", owned=True),
    Collective("broadcast", "every rank holds the root's vector",
               "the root's vector", rooted=True),
    Collective("reduce", "the root holds every block reduced over all ranks",
               "the vector each rank holds", rooted=True, reduces=True),
    Collective("gather", "the root holds every rank's blocks",
               "the root's gathered buffer (n/p from each rank)", rooted=True, owned=True),
    Collective("scatter", "rank r holds its blocks of the root's buffer",
               "the root's buffer (n/p to each rank)", rooted=True, owned=True),
    Collective("alltoall", "block (i, j) has moved from rank i to rank j",
               "what each rank sends in all (n/p to each rank)", owned=True,
               per_rank_total=True),
)}


def collective_names() -> list[str]:
    """The collectives, allreduce first."""
    return list(COLLECTIVES)


def get_collective(name) -> Collective:
    """The :class:`Collective` called ``name``; a ConfigError naming the
    allowed ones otherwise (``reduce-scatter`` is read as
    ``reduce_scatter``)."""
    key = name.replace("-", "_") if isinstance(name, str) else name
    if key not in COLLECTIVES:
        hint = suggest(key, COLLECTIVES) if isinstance(key, str) else ""
        known, dash = ", ".join(COLLECTIVES), "reduce-scatter is read as reduce_scatter"
        raise ConfigError(f"collective: {name!r} is not one of {known}{hint}; {dash}" if hint
                          else f"collective: {name!r} is not one of {known} ({dash})")
    return COLLECTIVES[key]
