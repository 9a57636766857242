"""In-network aggregation streams: what a step hands the engine when switches,
not ranks, combine the data (:class:`AggregationStreams`, carried by
:attr:`flowemu.algorithms.base.Traffic.aggregation`).

A stream is one pipelined aggregation over a group of ranks: every member's
data climbs to the switches above it, each switch where two or more of the
group's streams meet combines them into one, and the result comes back down
(multicast). In the fluid model it is a single flow whose route is every
link of that tree (fraction 1 each): its rate is the max-min share of the
tree's tightest link, and it shares links with other streams, flows and
background traffic by max-min like any flow. The engine asks the topology
for the links (:mod:`flowemu.topology.aggregation`), since they depend on
where the ranks run.

In a :class:`~flowemu.algorithms.base.Traffic` with ``aggregation`` set,
flow ``i`` is stream ``i``: ``src[i] == dst[i]`` is its root rank (where a
reduce delivers, where a broadcast starts; the first member for an
allreduce) and ``share[i]`` its bytes as a fraction of n.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..core.errors import ConfigError, show

#: stream kinds (the same numbers as :mod:`flowemu.topology.aggregation`):
#: every member's path up and down / up, then down to the root only / up
#: from the root only, then down to every member
STREAM_ALLREDUCE, STREAM_REDUCE, STREAM_BROADCAST = 0, 1, 2
STREAM_KINDS = ("allreduce", "reduce", "broadcast")


@dataclass(frozen=True)
class AggregationStreams:
    """The streams of one step.

    Attributes
    ----------
    member_ptr : int64[S+1]
        Stream ``s``'s group is ``members[member_ptr[s]:member_ptr[s+1]]``
        (at least two distinct ranks, the root among them).
    members : int32[M]
    kind : int8[S]
        :data:`STREAM_ALLREDUCE`, :data:`STREAM_REDUCE` or
        :data:`STREAM_BROADCAST`.
    tree : int32[S]
        The topology's aggregation tree each stream takes (its spine or core
        choice; :meth:`flowemu.topology.Topology.aggregation_parent`).
    switch_rate : float
        Bytes/s a switch reduces at, shared by every stream it combines
        (``inf``: line rate, no cap).
    """

    member_ptr: np.ndarray
    members: np.ndarray
    kind: np.ndarray
    tree: np.ndarray
    switch_rate: float = math.inf

    def __post_init__(self):
        set_ = object.__setattr__
        set_(self, "member_ptr", np.ascontiguousarray(self.member_ptr, dtype=np.int64))
        set_(self, "members", np.ascontiguousarray(self.members, dtype=np.int32))
        set_(self, "kind", np.ascontiguousarray(self.kind, dtype=np.int8))
        set_(self, "tree", np.ascontiguousarray(self.tree, dtype=np.int32))
        s = len(self.member_ptr) - 1
        if s < 0 or len(self.kind) != s or len(self.tree) != s:
            raise ConfigError(f"AggregationStreams: member_ptr, kind and tree describe "
                              f"{s}, {len(self.kind)} and {len(self.tree)} streams")
        if (np.diff(self.member_ptr) < 2).any():
            raise ConfigError("AggregationStreams: every stream needs at least two members")
        if not (self.switch_rate > 0):
            raise ConfigError(f"AggregationStreams: switch_rate {show(self.switch_rate)} "
                              "must be > 0 (inf: no cap)")

    @property
    def num_streams(self) -> int:
        return len(self.member_ptr) - 1

    def group(self, s: int) -> np.ndarray:
        """The member ranks of stream ``s``."""
        return self.members[self.member_ptr[s]:self.member_ptr[s + 1]]

    def key(self) -> tuple:
        """What tells two steps' streams apart beyond their roots and bytes
        (for the engine's pattern key)."""
        return ("aggregation", hash((self.member_ptr.tobytes(), self.members.tobytes(),
                                     self.kind.tobytes(), self.tree.tobytes())),
                float(self.switch_rate))


def stream_traffic_parts(groups, roots, kinds, trees, shares, switch_rate=math.inf):
    """``(src, dst, share, AggregationStreams)`` of streams over ``groups``
    (sequences of ranks), one root, kind, tree and share each: the arguments
    of a :class:`~flowemu.algorithms.base.Traffic` carrying them."""
    groups = [np.asarray(g, dtype=np.int32) for g in groups]
    ptr = np.zeros(len(groups) + 1, dtype=np.int64)
    np.cumsum([len(g) for g in groups], out=ptr[1:])
    members = np.concatenate(groups) if groups else np.zeros(0, np.int32)
    roots = np.asarray(roots, dtype=np.int32)
    streams = AggregationStreams(ptr, members, np.asarray(kinds), np.asarray(trees),
                                 float(switch_rate))
    return roots, roots.copy(), np.asarray(shares, dtype=np.float64), streams
