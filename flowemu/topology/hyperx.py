"""D-dimensional HyperX (Ahn et al., SC'09; Swing paper §5.4.2).

Nodes sit on a ``D0 x D1 x ...`` grid (ids row-major, last dimension
fastest, as a torus) and every node is linked directly to every node that
shares all its coordinates but one: each dimension's lines are complete
graphs. A flow whose endpoints differ in ``m`` coordinates takes ``m`` hops;
its minimal paths are the ``m!`` orders in which to fix those coordinates.
A 2-D HyperX is the Hamming graph, i.e. a HammingMesh of 1x1 boards whose
row and column fat trees are replaced by direct links.

Link ids (see :mod:`flowemu.topology._grids`): dimension ``k`` owns
``N·(D_k − 1)`` links from ``lbase_k``; on line ``ℓ`` (row-major over the
other coordinates) the link from position ``u`` to ``v`` is
``lbase_k + ℓ·D_k(D_k − 1) + u·(D_k − 1) + (v if v < u else v − 1)``.

``bw`` sets the bandwidth of each dimension's links as a multiple of the
network bandwidth (HyperX's *trunking*: ``K`` parallel cables behave, in the
fluid model, as one link of ``K`` times the bandwidth).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.budget import reserve_topology
from ..core.errors import ConfigError, show
from ..kernels.gridroute import KIND_COMPLETE
from ._grids import GridTopology, count_links
from .common import MAX_ENDPOINTS as MAX_NODES
from .common import (
    MAX_LINKS,
    fmt,
    is_int,
    is_number,
    parse_dims,
    parse_options,
    parse_positive,
)

__all__ = ["HyperX", "parse_hyperx"]


@dataclass(frozen=True)
class HyperX(GridTopology):
    """A HyperX of shape ``dims``.

    Parameters
    ----------
    dims : tuple of int
        Nodes per dimension, each ``>= 2``; at most ``2**24`` nodes and
        ``2**26`` links (``N·Σ(D_k − 1)``).
    bw : float or tuple of float
        Link bandwidth of each dimension as a multiple of the network
        bandwidth (one number for all), each ``> 0``; default 1.

    Attributes
    ----------
    spec : str
        e.g. ``"hyperx:8x8"``, ``"hyperx:4x4x4,bw=2"``, ``"hyperx:8x8,bw=1x2"``.
    grid : tuple of int
        ``dims``: the node grid Swing, bucket and multi-port rings use.
    num_nodes, num_endpoints : int
        ``prod(dims)`` (no switches).
    link_src, link_dst : int32[L]
    link_capacity_scale : float64[L]
        ``bw`` of the link's dimension.
    """
    # peak and held bytes a link (87 and 16 measured on hyperx:30x30x30, 64 and 16
    # on hyperx:200x200), with a margin
    build_link_bytes = 104
    held_link_bytes = 20

    dims: tuple[int, ...]
    bw: float | tuple[float, ...] = 1.0

    def __post_init__(self):
        dims = self.dims
        if is_int(dims):
            dims = (dims,)
        if not isinstance(dims, (tuple, list, np.ndarray)) or len(dims) == 0:
            raise ConfigError(f"dims: {show(dims)} is not allowed; expected a tuple of integers "
                              ">= 2, e.g. (8, 8)")
        for i, d in enumerate(dims):
            if not is_int(d) or d < 2:
                raise ConfigError(f"dims: dimension {i} is {show(d)}; every dimension must be "
                                  "an integer >= 2")
        dims = tuple(int(d) for d in dims)
        bw = self.bw
        if is_number(bw):
            bw = (bw,) * len(dims)
        if not isinstance(bw, (tuple, list, np.ndarray)) or len(bw) != len(dims):
            raise ConfigError(f"bw: {show(self.bw)} is not allowed; expected one number > 0 or "
                              f"one per dimension ({len(dims)})")
        for b in bw:
            if not is_number(b) or not np.isfinite(b) or b <= 0:
                raise ConfigError(f"bw: {show(b)} is not allowed; expected a finite number > 0 "
                                  "(link bandwidth as a multiple of the network's)")
        bw = tuple(float(b) for b in bw)
        shape = "x".join(map(str, dims))
        nodes = int(np.prod(dims, dtype=object))
        if nodes > MAX_NODES:
            raise ConfigError(f"dims: {shape} has {nodes} nodes; at most {MAX_NODES} (2**24) "
                              "are allowed")
        kinds = [KIND_COMPLETE] * len(dims)
        boards = [1] * len(dims)
        links = count_links(dims, kinds, boards)
        if links > MAX_LINKS:
            raise ConfigError(f"dims: {shape} has {links} links (every node linked to "
                              f"{links // nodes} others); at most {MAX_LINKS} (2**26) are allowed")
        reserve_topology(f"hyperx:{shape}", links, nodes, self.build_link_bytes)
        set_ = object.__setattr__
        set_(self, "dims", dims)
        set_(self, "bw", bw[0] if len(set(bw)) == 1 else bw)
        if all(b == 1.0 for b in bw):
            opt = ""
        elif len(set(bw)) == 1:
            opt = f",bw={fmt(bw[0])}"
        else:
            opt = ",bw=" + "x".join(fmt(b) for b in bw)
        set_(self, "spec", f"hyperx:{shape}{opt}")
        ones = [1.0] * len(dims)
        self._build(dims, kinds, boards, bw, bw, ones, ones)

    def __reduce__(self):
        # Ship only the parameters to worker processes; the arrays are rebuilt.
        return (type(self), (self.dims, self.bw))

    @property
    def ndim(self) -> int:
        """Number of dimensions D."""
        return len(self.dims)

    def describe(self) -> dict:
        """Plain-data description: family, dims, bw, nodes, links."""
        bw = list(self.bw) if isinstance(self.bw, tuple) else [self.bw] * self.ndim
        return {"family": "hyperx", "dims": list(self.dims), "bw": bw,
                "nodes": self.num_nodes, "links": self.num_links}

    def max_route_entries(self, ecmp: str = "split") -> int:
        """``D`` hops on one path; split over the ``D!`` orders, the links of
        the subset lattice of ``D`` dimensions: ``D·2^(D−1)``."""
        self.check_mode(ecmp)
        d = self.ndim
        return d * 2 ** (d - 1) if ecmp == "split" else d


_EXAMPLE = "e.g. hyperx:8x8, hyperx:4x4x4,bw=2, hyperx:16x16,bw=1x2"
_ACCEPTED = "bw=NUMBER > 0 or bw=B0xB1x... (one per dimension)"


def _parse_bw(text: str, ndim: int):
    parts = text.split("x")
    what = "link bandwidth as a multiple of the network's, one number or one per dimension"
    try:
        values = tuple(parse_positive("bw", p, what) for p in parts)
    except ConfigError:   # name the whole value, not the empty part of '2x'
        raise ConfigError(f"bw is {text.strip()!r}; expected a number > 0, or one per "
                          f"dimension joined by 'x' such as bw=1x2 ({what})") from None
    if len(values) not in (1, ndim):
        raise ConfigError(f"bw is {text.strip()!r}: {len(values)} values for {ndim} dimensions; "
                          "expected one number or one per dimension")
    return values[0] if len(values) == 1 else values


def parse_hyperx(params: str) -> HyperX:
    """``"D0xD1x...[,bw=B|B0xB1x...]"`` -> :class:`HyperX`."""
    shape, *opts = [part.strip() for part in params.split(",")]
    if not shape:
        raise ConfigError(f"no dimensions given; expected sizes separated by 'x' ({_EXAMPLE})")
    dims = parse_dims("hyperx", shape)
    values = parse_options(opts, {"bw": lambda v: _parse_bw(v, len(dims))}, _ACCEPTED)
    return HyperX(dims, **values)
