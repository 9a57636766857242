"""Two-level leaf-spine (folded Clos) fabric.

``L`` leaves with ``H`` hosts each and ``S`` spines; every leaf is joined to
every spine by ``uplinks`` parallel links of ``uplink`` times the host link
bandwidth. Vertices: hosts ``0..L·H−1`` (host ``h`` of leaf ``l`` is
``l·H + h``), then leaves ``L·H + l``, then spines ``L·H + L + s``. With
``N = L·H`` hosts and ``P = S·uplinks`` parallel leaf–spine paths, link ids are

    host i → its leaf           i
    leaf → host i               N + i
    leaf l → spine s, copy k    2N + l·P + s·uplinks + k
    spine s → leaf l, copy k    2N + L·P + l·P + s·uplinks + k

so the ``P`` uplinks of a leaf (and downlinks into it) are contiguous ids.
The oversubscription of a leaf is ``H / (S·uplinks·uplink)`` (> 1: the hosts
of a leaf can inject more than its uplinks carry). ``uplink_latency`` gives
the leaf–spine links their own latency (e.g. longer cables between rows);
host links keep the network's link latency.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.budget import reserve_topology
from ..core.errors import ConfigError, show
from ..core.units import parse_time
from .base import Routes, Topology
from .common import MAX_ENDPOINTS as MAX_HOSTS
from .common import (
    MAX_LINKS,
    check_seed,
    flow_hash,
    fmt,
    is_int,
    is_number,
    parse_int,
    parse_options,
    parse_positive,
    readonly,
    time_text,
)


@dataclass(frozen=True)
class LeafSpine(Topology):
    """A leaf-spine fabric.

    Parameters
    ----------
    leaves, hosts_per_leaf, spines : int
        ``L``, ``H``, ``S``, each ``>= 1``, with ``L·H >= 2`` hosts.
    uplinks : int
        Parallel links between each leaf and each spine (``>= 1``).
    uplink : float
        Bandwidth of one uplink as a multiple of the host link bandwidth
        (``> 0``).
    uplink_latency : float or str, optional
        Latency of each leaf–spine link in seconds (or a time string such as
        ``"500ns"``); default: the network's link latency.

    Attributes
    ----------
    spec : str
        Canonical spec, e.g. ``"leafspine:8x4x2"`` or
        ``"leafspine:8x4x2,uplinks=2,uplink=2"`` (defaults omitted).
    num_endpoints : int
        ``L·H`` hosts.
    num_nodes : int
        ``L·H + L + S``.
    link_src, link_dst : int32[2·L·H + 2·L·S·uplinks]
    link_capacity_scale : float64[...]
        1 on host links, ``uplink`` on leaf–spine links.
    oversubscription : float
        ``H / (S·uplinks·uplink)``.
    """
    # peak and held bytes a link (28 and 16 measured on leafspine:4096x256x32), with a margin
    build_link_bytes = 36
    held_link_bytes = 20

    id_word = "host"   # in messages (a class attribute, not a field)
    split_every_shortest = True   # split: every minimal path, even per vertex

    leaves: int
    hosts_per_leaf: int
    spines: int
    uplinks: int = 1
    uplink: float = 1.0
    uplink_latency: float | None = None

    def __post_init__(self):
        for name, v in (("leaves", self.leaves), ("hosts_per_leaf", self.hosts_per_leaf),
                        ("spines", self.spines), ("uplinks", self.uplinks)):
            if not is_int(v) or v < 1:
                raise ConfigError(f"{name}: {show(v)} is not allowed; expected an integer >= 1")
        if not is_number(self.uplink) or not np.isfinite(self.uplink) or self.uplink <= 0:
            raise ConfigError(f"uplink: {show(self.uplink)} is not allowed; expected a finite "
                              "number > 0 (uplink bandwidth as a multiple of the host link's)")
        L, H, S, U = (int(self.leaves), int(self.hosts_per_leaf), int(self.spines),
                      int(self.uplinks))
        hosts = L * H
        if hosts < 2:
            raise ConfigError(f"leaves x hosts_per_leaf: {L}x{H} gives {hosts} host; at least 2 "
                              "hosts are needed")
        if hosts > MAX_HOSTS:
            raise ConfigError(f"leaves x hosts_per_leaf: {L}x{H} gives {hosts} hosts; at most "
                              f"{MAX_HOSTS} (2**24) are allowed")
        links = 2 * hosts + 2 * L * S * U
        if links > MAX_LINKS:
            raise ConfigError(f"links: {L}x{H}x{S} with uplinks={U} has {links} links; at most "
                              f"{MAX_LINKS} (2**26) are allowed")
        reserve_topology(f"leafspine:{L}x{H}x{S}", links, hosts + L + S, self.build_link_bytes)
        set_ = object.__setattr__
        set_(self, "leaves", L)
        set_(self, "hosts_per_leaf", H)
        set_(self, "spines", S)
        set_(self, "uplinks", U)
        set_(self, "uplink", float(self.uplink))
        if self.uplink_latency is not None:
            set_(self, "uplink_latency", parse_time(self.uplink_latency, "uplink_latency"))
        opts = ([f"uplinks={U}"] if U != 1 else []) \
            + ([f"uplink={fmt(self.uplink)}"] if self.uplink != 1.0 else []) \
            + ([f"uplink_latency={time_text(self.uplink_latency)}"]
               if self.uplink_latency is not None else [])
        set_(self, "spec", ",".join([f"leafspine:{L}x{H}x{S}"] + opts))
        set_(self, "num_endpoints", hosts)
        set_(self, "num_nodes", hosts + L + S)
        set_(self, "oversubscription", H / (S * U * self.uplink))
        self._build_links()

    def _build_links(self) -> None:
        L, H, S, U = self.leaves, self.hosts_per_leaf, self.spines, self.uplinks
        N, P = L * H, S * U
        hosts = np.arange(N, dtype=np.int32)
        host_leaf = (N + hosts // H).astype(np.int32)
        # leaf-spine links in id order: leaf-major, then spine, then copy
        ls_leaf = np.repeat(np.arange(L, dtype=np.int32), P) + N
        ls_spine = np.tile(np.repeat(np.arange(S, dtype=np.int32), U), L) + N + L
        src = np.concatenate([hosts, host_leaf, ls_leaf, ls_spine])
        dst = np.concatenate([host_leaf, hosts, ls_spine, ls_leaf])
        cap = np.concatenate([np.ones(2 * N), np.full(2 * L * P, self.uplink)])
        set_ = object.__setattr__
        set_(self, "link_src", readonly(src))
        set_(self, "link_dst", readonly(dst))
        set_(self, "link_capacity_scale", readonly(cap))
        if self.uplink_latency is not None:
            lat = np.concatenate([np.full(2 * N, np.nan),
                                  np.full(2 * L * P, self.uplink_latency)])
            set_(self, "link_latency_abs", readonly(lat))

    def __reduce__(self):
        # Ship only the parameters to worker processes; the arrays are rebuilt.
        return (type(self), (self.leaves, self.hosts_per_leaf, self.spines, self.uplinks,
                             self.uplink, self.uplink_latency))

    has_aggregation_trees = True

    def aggregation_parent(self, vertex, tree: int = 0) -> tuple:
        """Aggregation tree ``tree`` (:meth:`Topology.aggregation_parent`):
        hosts → their leaf → spine path ``t = tree mod S·uplinks`` (spine
        ``t div uplinks``, parallel link ``t mod uplinks``), so the first
        ``S·uplinks`` trees use distinct leaf–spine links."""
        v = np.asarray(vertex, dtype=np.int64)
        L, H, U = self.leaves, self.hosts_per_leaf, self.uplinks
        N, P = L * H, self.spines * U
        t = tree % P
        parent = np.full(len(v), -1, dtype=np.int64)
        up = np.full(len(v), -1, dtype=np.int64)
        down = np.full(len(v), -1, dtype=np.int64)
        host = v < N
        parent[host], up[host], down[host] = N + v[host] // H, v[host], N + v[host]
        leaf = (v >= N) & (v < N + L)
        lf = v[leaf] - N
        parent[leaf] = N + L + t // U
        up[leaf], down[leaf] = 2 * N + lf * P + t, 2 * N + L * P + lf * P + t
        return parent, up, down

    @property
    def paths(self) -> int:
        """Parallel leaf–spine–leaf paths between two leaves, ``S·uplinks``."""
        return self.spines * self.uplinks

    def endpoint_groups(self) -> tuple[np.ndarray, str]:
        """Leaves (host ``h`` on leaf ``h // hosts_per_leaf``)."""
        return np.arange(self.num_endpoints) // self.hosts_per_leaf, "leaf"

    def describe(self) -> dict:
        """Plain-data description: family, leaves, hosts_per_leaf, spines,
        uplinks, uplink, uplink_latency (None: the network's), hosts, nodes,
        links, oversubscription."""
        return {"family": "leafspine", "leaves": self.leaves,
                "hosts_per_leaf": self.hosts_per_leaf, "spines": self.spines,
                "uplinks": self.uplinks, "uplink": self.uplink,
                "uplink_latency": self.uplink_latency, "hosts": self.num_endpoints,
                "nodes": self.num_nodes, "links": self.num_links,
                "oversubscription": self.oversubscription}

    # ---------------------------------------------------------------- routing

    def _counts(self, src: np.ndarray, dst: np.ndarray, ecmp: str):
        H = self.hosts_per_leaf
        cross = (src // H) != (dst // H)
        local = ~cross & (src != dst)
        width = 2 * self.paths if ecmp == "split" else 2
        counts = np.where(cross, 2 + width, np.where(local, 2, 0)).astype(np.int64)
        return cross, local, counts

    def route(self, src, dst, ecmp: str = "split", seed: int = 0) -> Routes:
        """Route flows ``src[i] -> dst[i]`` between hosts.

        Parameters
        ----------
        src, dst : int[F]
            Host ids in ``0..L·H−1``.
        ecmp : {"split", "hash"}
            ``"split"``: a flow between leaves is spread evenly over all
            ``S·uplinks`` parallel uplinks of its leaf and downlinks into the
            destination leaf (fraction ``1/(S·uplinks)`` each; 1 on its host
            links). ``"hash"``: one spine and one parallel copy, chosen by a
            splitmix64 hash of ``(seed, src, dst)``. ``"dor"`` is refused
            (there are no dimensions).
        seed : int
            Hash seed (``ecmp="hash"`` only).

        Returns
        -------
        Routes
            Entries in path order: host uplink, leaf uplinks, spine
            downlinks, host downlink; ``hops`` 2 within a leaf, 4 between
            leaves, 0 when ``src == dst``.
        """
        self.check_mode(ecmp)
        seed = check_seed(seed)
        src, dst = self._check_flows(src, dst)
        N, H, L = self.num_endpoints, self.hosts_per_leaf, self.leaves
        cross, local, counts = self._counts(src, dst, ecmp)
        flow_ptr = np.zeros(len(src) + 1, dtype=np.int64)
        np.cumsum(counts, out=flow_ptr[1:])
        link = np.empty(int(flow_ptr[-1]), dtype=np.int32)
        frac = np.ones(len(link), dtype=np.float64)
        # within a leaf: host -> leaf -> host
        at = flow_ptr[:-1][local]
        link[at] = src[local]
        link[at + 1] = N + dst[local]
        # between leaves: host -> leaf -> spine(s) -> leaf -> host
        c = np.flatnonzero(cross)
        at = flow_ptr[c]
        s, d = src[c], dst[c]
        up0 = 2 * N + (s // H) * self.paths          # first uplink of the source leaf
        down0 = 2 * N + L * self.paths + (d // H) * self.paths
        link[at] = s
        if ecmp == "split":
            P = self.paths
            j = np.arange(P, dtype=np.int64)
            up_at = (at[:, None] + 1 + j).reshape(-1)
            down_at = (at[:, None] + 1 + P + j).reshape(-1)
            link[up_at] = (up0[:, None] + j).reshape(-1)
            link[down_at] = (down0[:, None] + j).reshape(-1)
            frac[up_at] = 1.0 / P
            frac[down_at] = 1.0 / P
            last = at + 1 + 2 * P
        else:
            j = self.hash_path(s, d, seed)
            link[at + 1] = up0 + j
            link[at + 2] = down0 + j
            last = at + 3
        link[last] = N + d
        hops = np.where(cross, 4, np.where(local, 2, 0)).astype(np.int32)
        return Routes(flow_ptr=flow_ptr, link=link, frac=frac, hops=hops)

    def hash_path(self, src: np.ndarray, dst: np.ndarray, seed: int = 0) -> np.ndarray:
        """Index ``s·uplinks + k`` (spine ``s``, copy ``k``) of the path
        ``ecmp="hash"`` picks for each flow, int64[F]."""
        return (flow_hash(src, dst, seed) % np.uint64(self.paths)).astype(np.int64)

    def max_route_entries(self, ecmp: str = "split") -> int:
        """One flow's entries at most: ``2 + 2·S·uplinks`` split, 4 hashed."""
        self.check_mode(ecmp)
        return 2 + 2 * self.paths if ecmp == "split" else 4

    def route_entries(self, src, dst, ecmp: str = "split") -> int:
        """Route entries :meth:`route` would return, counted from the leaves."""
        self.check_mode(ecmp)
        src, dst = self._check_flows(src, dst)
        return int(self._counts(src, dst, ecmp)[2].sum())


_EXAMPLE = "e.g. leafspine:8x4x2 or leafspine:8x4x2,uplinks=2,uplink=2"


def parse_leafspine(params: str) -> LeafSpine:
    """``"LxHxS[,uplinks=U][,uplink=B][,uplink_latency=T]"`` -> :class:`LeafSpine`."""
    shape, *opts = [part.strip() for part in params.split(",")]
    if not shape:
        raise ConfigError(f"no shape given; expected LxHxS (leaves x hosts per leaf x spines, "
                          f"{_EXAMPLE})")
    parts = [p.strip() for p in shape.split("x")]
    if len(parts) != 3:
        raise ConfigError(f"shape {shape!r} has {len(parts)} field(s); expected LxHxS (leaves x "
                          f"hosts per leaf x spines, {_EXAMPLE})")
    names = ("leaves L", "hosts per leaf H", "spines S")
    L, H, S = (parse_int(n, p, _EXAMPLE) for n, p in zip(names, parts, strict=True))
    values = parse_options(opts, {
        "uplinks": lambda v: parse_int("uplinks", v, _EXAMPLE),
        "uplink": lambda v: parse_positive("uplink", v, "uplink bandwidth as a multiple of the "
                                           "host link's, e.g. uplink=2"),
        "uplink_latency": lambda v: parse_time(v, "uplink_latency")},
        "uplinks=INT >= 1, uplink=NUMBER > 0, uplink_latency=TIME (e.g. 500ns)")
    return LeafSpine(L, H, S, **values)
