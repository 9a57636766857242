"""The balanced Dragonfly of Kim, Dally, Scott and Abts (ISCA 2008, §3).

``g`` groups of ``a`` routers; the routers of a group are joined all-to-all
by local links, every router has ``p`` hosts and ``h`` global links, and the
groups are joined by the global links. The balanced, maximal network has
``g = a·h + 1`` groups with one global link between every pair of groups;
fewer groups spread each group's ``a·h`` global ports evenly over the
``g − 1`` others: ``m = ⌊a·h / (g − 1)⌋`` parallel global links join every
pair of groups (the ``a·h − m·(g − 1)`` highest ports of a group stay
unconnected when the division is not exact).

Global link arrangement ("absolute", Camarero et al. 2014, generalised to
parallel links): port ``k = 0..a·h−1`` of a group belongs to its router
``k // h``. Copy ``c`` of the link between groups ``G`` and ``T`` uses port
``c·(g−1) + j`` of ``G``, where ``j = T if T < G else T − 1`` is the index of
``T`` among ``G``'s peers; so with ``g = a·h + 1`` router ``x`` of a group
links to the ``h`` consecutive peer groups ``x·h .. x·h+h−1`` (skipping
itself), and the ``m`` copies of a pair sit ``g − 1`` ports apart, on
different routers when ``g − 1 >= h``.

Vertices: hosts ``0..N−1`` (``N = g·a·p``; host ``i`` on router ``i // p``),
then routers ``N + G·a + x``. Link ids:

    host i → its router                i
    router → host i                     N + i
    local (G, x) → (G, y)               2N + (G·a + x)·(a−1) + (y if y < x else y−1)
    global from G, port k               2N + g·a·(a−1) + G·m·(g−1) + k

Routing (§4 of the paper): minimal routes go local–global–local (at most 3
router hops and the 2 host links); ``valiant`` goes through an intermediate
group (at most 5 router hops).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.budget import reserve_topology
from ..core.errors import ConfigError, RoutingError, show
from ..kernels.dragonfly import (
    MODE_HASH,
    MODE_SPLIT,
    MODE_VALIANT,
    STATUS_OK,
    dragonfly_route_counts,
    dragonfly_route_fill,
)
from ..kernels.pathlatency import dag_max_latency
from .base import Routes, Topology
from .common import MAX_ENDPOINTS as MAX_HOSTS
from .common import (
    MAX_LINKS,
    check_seed,
    fmt,
    is_int,
    is_number,
    parse_int,
    parse_options,
    parse_positive,
    readonly,
)

_MODE_CODE = {"split": MODE_SPLIT, "hash": MODE_HASH, "valiant": MODE_VALIANT}


@dataclass(frozen=True)
class Dragonfly(Topology):
    """A Dragonfly network.

    Parameters
    ----------
    a : int
        Routers per group (``>= 1``).
    p : int
        Hosts per router (``>= 1``).
    h : int
        Global links per router (``>= 1``).
    g : int, optional
        Groups, ``2 .. a·h+1``; default (None) the maximum ``a·h + 1``.
    local_bw, global_bw : float
        Bandwidth of a local / global link as a multiple of the network's
        (host link) bandwidth, ``> 0`` (default 1).
    local_lat, global_lat : float
        Latency of a local / global link as a multiple of the network's link
        latency, ``> 0`` (default 1; global cables are often longer).

    Attributes
    ----------
    spec : str
        Canonical spec, e.g. ``"dragonfly:a=4,p=2,h=2"`` (defaults omitted).
    num_endpoints : int
        ``g·a·p`` hosts.
    num_nodes : int
        ``g·a·(p + 1)``.
    parallel : int
        ``m``, global links between every pair of groups.
    link_src, link_dst : int32[2·N + g·a·(a−1) + g·m·(g−1)]
    link_capacity_scale : float64[L]
        1 on host links, ``local_bw`` / ``global_bw`` on router links.
    link_class : int8[L]
        0 host link, 1 local, 2 global.
    """

    id_word = "host"
    ecmp_modes = ("split", "hash", "valiant")
    # peak and held bytes a link (80 and 22 measured on dragonfly:a=32,p=16,h=16), with a margin
    build_link_bytes = 96
    held_link_bytes = 28

    a: int
    p: int
    h: int
    g: int | None = None
    local_bw: float = 1.0
    global_bw: float = 1.0
    local_lat: float = 1.0
    global_lat: float = 1.0

    def __post_init__(self):
        for name, v in (("a", self.a), ("p", self.p), ("h", self.h)):
            if not is_int(v) or v < 1:
                raise ConfigError(f"{name}: {show(v)} is not allowed; expected an integer >= 1")
        a, p, h = int(self.a), int(self.p), int(self.h)
        gmax = a * h + 1
        g = gmax if self.g is None else self.g
        if not is_int(g) or not 2 <= g <= gmax:
            raise ConfigError(f"g: {show(g)} is not allowed; expected an integer in 2..{gmax} "
                              f"(groups; at most a*h+1 = {gmax} with a={a}, h={h})")
        g = int(g)
        for name, v, what in (("local_bw", self.local_bw, "bandwidth"),
                              ("global_bw", self.global_bw, "bandwidth"),
                              ("local_lat", self.local_lat, "latency"),
                              ("global_lat", self.global_lat, "latency")):
            # a latency may be 0 (as HammingMesh's board_latency), a bandwidth may not
            zero = what == "latency"
            if not is_number(v) or not np.isfinite(v) or v < 0 or (v == 0 and not zero):
                raise ConfigError(f"{name}: {show(v)} is not allowed; expected a finite number "
                                  f"{'>=' if zero else '>'} 0 ({what} as a multiple of the "
                                  "network's)")
        hosts = g * a * p
        if hosts > MAX_HOSTS:
            raise ConfigError(f"a x p x g: {a}x{p}x{g} gives {hosts} hosts; at most {MAX_HOSTS} "
                              "(2**24) are allowed")
        m = (a * h) // (g - 1)
        links = 2 * hosts + g * a * (a - 1) + g * m * (g - 1)
        if links > MAX_LINKS or g * g * m > MAX_LINKS:
            raise ConfigError(f"links: a={a}, p={p}, h={h}, g={g} has {links} links; at most "
                              f"{MAX_LINKS} (2**26) are allowed")
        set_ = object.__setattr__
        for name, v in (("a", a), ("p", p), ("h", h), ("g", g)):
            set_(self, name, v)
        for name in ("local_bw", "global_bw", "local_lat", "global_lat"):
            set_(self, name, float(getattr(self, name)))
        set_(self, "parallel", m)
        opts = [f"a={a}", f"p={p}", f"h={h}"] + ([f"g={g}"] if g != gmax else [])
        for key, name in (("local", "local_bw"), ("global", "global_bw"),
                          ("local_latency", "local_lat"), ("global_latency", "global_lat")):
            if getattr(self, name) != 1.0:
                opts.append(f"{key}={fmt(getattr(self, name))}")
        set_(self, "spec", "dragonfly:" + ",".join(opts))
        reserve_topology(self.spec, links, hosts + g * a, self.build_link_bytes)
        set_(self, "num_endpoints", hosts)
        set_(self, "num_nodes", hosts + g * a)
        self._build_links()

    def _build_links(self) -> None:
        a, p, h, g, m = self.a, self.p, self.h, self.g, self.parallel
        N, R = self.num_endpoints, g * a
        hosts = np.arange(N, dtype=np.int32)
        host_router = (N + hosts // p).astype(np.int32)
        # local links: router r = G·a + x to every other router y of its group
        r = np.repeat(np.arange(R, dtype=np.int64), a - 1)
        k = np.tile(np.arange(a - 1, dtype=np.int64), R)
        x = r % a
        y = np.where(k < x, k, k + 1)
        loc_src = N + r
        loc_dst = N + (r - x) + y
        # global links: (G, T, c) -> port c·(g−1) + j of G
        G, T, c = np.meshgrid(np.arange(g), np.arange(g), np.arange(m), indexing="ij")
        j_out = np.where(T < G, T, T - 1)
        j_in = np.where(G < T, G, G - 1)
        gx = (c * (g - 1) + j_out) // h           # router of G holding the copy
        gy = (c * (g - 1) + j_in) // h            # router of T it lands on
        local_base = 2 * N
        global_base = local_base + R * (a - 1)
        glink = global_base + G * (m * (g - 1)) + c * (g - 1) + j_out
        off = G != T
        glink = np.where(off, glink, -1)
        # link arrays in id order: the global port ids of a group are
        # c·(g−1) + j, enumerate them (G, c, j) and map j back to T
        Gp, cp, jp = np.meshgrid(np.arange(g), np.arange(m), np.arange(g - 1), indexing="ij")
        Tp = np.where(jp < Gp, jp, jp + 1)
        jin = np.where(Gp < Tp, Gp, Gp - 1)
        glob_src = N + Gp * a + (cp * (g - 1) + jp) // h
        glob_dst = N + Tp * a + (cp * (g - 1) + jin) // h
        src = np.concatenate([hosts, host_router, loc_src, glob_src.reshape(-1)])
        dst = np.concatenate([host_router, hosts, loc_dst, glob_dst.reshape(-1)])
        n_loc, n_glob = R * (a - 1), g * m * (g - 1)
        cls = np.concatenate([np.zeros(2 * N, np.int8), np.ones(n_loc, np.int8),
                              np.full(n_glob, 2, np.int8)])
        cap = np.concatenate([np.ones(2 * N), np.full(n_loc, self.local_bw),
                              np.full(n_glob, self.global_bw)])
        set_ = object.__setattr__
        set_(self, "link_src", readonly(src.astype(np.int32)))
        set_(self, "link_dst", readonly(dst.astype(np.int32)))
        set_(self, "link_capacity_scale", readonly(cap))
        set_(self, "link_class", readonly(cls))
        if self.local_lat != 1.0 or self.global_lat != 1.0:
            lat = np.array([1.0, self.local_lat, self.global_lat])[cls]
            set_(self, "link_latency_scale", readonly(lat))
        set_(self, "_glink", readonly(np.ascontiguousarray(glink, dtype=np.int64)))
        set_(self, "_gx", readonly(np.ascontiguousarray(gx, dtype=np.int64)))
        set_(self, "_gy", readonly(np.ascontiguousarray(gy, dtype=np.int64)))

    def __reduce__(self):
        # Ship only the parameters to worker processes; the arrays are rebuilt.
        return (type(self), (self.a, self.p, self.h, self.g, self.local_bw, self.global_bw,
                             self.local_lat, self.global_lat))

    @property
    def groups(self) -> int:
        return self.g

    def endpoint_groups(self) -> tuple[np.ndarray, str]:
        """Groups (host ``i`` on router ``i // p``, in group ``i // (p·a)``)."""
        return np.arange(self.num_endpoints) // (self.p * self.a), "group"

    def describe(self) -> dict:
        """Plain-data description: family, a, p, h, g, parallel global links
        per group pair, hosts, routers, nodes, links, per-class scales."""
        return {"family": "dragonfly", "a": self.a, "p": self.p, "h": self.h, "g": self.g,
                "parallel": self.parallel, "hosts": self.num_endpoints,
                "routers": self.g * self.a, "nodes": self.num_nodes, "links": self.num_links,
                "local_bw": self.local_bw, "global_bw": self.global_bw,
                "local_lat": self.local_lat, "global_lat": self.global_lat}

    # ---------------------------------------------------------------- routing

    def _scratch(self, ecmp: str) -> int:
        """Entries one flow may produce before merging shared links."""
        m, g = self.parallel, self.g
        raw = 2 + 3 * m
        if ecmp == "valiant":
            raw = max(raw, 2 + (g - 2) * m * (2 + 3 * m))
        return int(min(raw, self.num_links))

    def _args(self, src, dst, ecmp, seed):
        return (src, dst, self.p, self.a, self.num_endpoints, 2 * self.num_endpoints,
                self._glink, self._gx, self._gy, _MODE_CODE[ecmp],
                np.uint64(int(seed) & 0xFFFFFFFFFFFFFFFF), self._scratch(ecmp), self.num_links)

    def route(self, src, dst, ecmp: str = "split", seed: int = 0) -> Routes:
        """Route flows ``src[i] -> dst[i]`` between hosts.

        Parameters
        ----------
        src, dst : int[F]
            Host ids in ``0..g·a·p−1``.
        ecmp : {"split", "hash", "valiant"}
            ``"split"``: minimal routing (Kim et al. §4.1: local, global,
            local), the flow spread evenly over the parallel global links
            between its two groups whose local hops make the path shortest
            (with one link per group pair, the single minimal path).
            ``"hash"``: one of those paths, chosen by a hash of ``(seed, src,
            dst)``. ``"valiant"``: fluid Valiant routing (§4.2): a flow
            between groups goes ``1/(g−2)`` through each other group, each
            leg minimal (split as above); flows within a group stay minimal
            (and all flows do when ``g = 2``). ``"dor"`` is refused.
        seed : int
            Hash seed (``ecmp="hash"`` only).

        Returns
        -------
        Routes
            ``hops`` is the longest of a flow's paths in links (host links
            included): 2 on one router, 3 in a group, 3–5 minimal between
            groups, up to 7 with Valiant.
        """
        self.check_mode(ecmp)
        seed = check_seed(seed)
        src, dst = self._check_flows(src, dst)
        counts = np.empty(len(src), dtype=np.int64)
        hops = np.empty(len(src), dtype=np.int32)
        args = self._args(src, dst, ecmp, seed)
        dragonfly_route_counts(*args, counts, hops)
        flow_ptr = np.zeros(len(src) + 1, dtype=np.int64)
        np.cumsum(counts, out=flow_ptr[1:])
        link = np.empty(int(flow_ptr[-1]), dtype=np.int32)
        frac = np.empty(len(link), dtype=np.float64)
        status, bad = dragonfly_route_fill(*args, flow_ptr, link, frac)
        if status != STATUS_OK:
            raise RoutingError(f"flow {bad} ({int(src[bad])} -> {int(dst[bad])}) on {self.spec}: "
                               "internal error: the routing passes disagree on the entry count")
        return Routes(flow_ptr=flow_ptr, link=link, frac=frac, hops=hops)

    def route_entries(self, src, dst, ecmp: str = "split") -> int:
        """Route entries :meth:`route` would return, from the counting pass."""
        self.check_mode(ecmp)
        src, dst = self._check_flows(src, dst)
        counts = np.empty(len(src), dtype=np.int64)
        hops = np.empty(len(src), dtype=np.int32)
        dragonfly_route_counts(*self._args(src, dst, ecmp, 0), counts, hops)
        return int(counts.sum())

    def max_route_entries(self, ecmp: str = "split") -> int:
        """An upper bound on one flow's entries."""
        self.check_mode(ecmp)
        return self._scratch(ecmp)

    def path_latency(self, routes: Routes, link_latency: np.ndarray) -> np.ndarray:
        """Largest link-latency sum over each flow's paths (Valiant's detours
        differ in length; minimal split paths may differ in local hops only
        when local and global latencies differ)."""
        lat = np.asarray(link_latency, dtype=np.float64)
        if len(lat) == 0 or np.all(lat == lat[0]):
            return super().path_latency(routes, lat)
        return dag_max_latency(routes.flow_ptr, routes.link, self.link_src, self.link_dst, lat,
                               self.num_nodes)


_EXAMPLE = "e.g. dragonfly:a=4,p=2,h=2 or dragonfly:a=8,p=4,h=4,g=17,global=2"
_ACCEPTED = ("a=INT >= 1, p=INT >= 1, h=INT >= 1, g=INT in 2..a*h+1, local=NUMBER > 0, "
             "global=NUMBER > 0, local_latency=NUMBER >= 0, global_latency=NUMBER >= 0")


def parse_dragonfly(params: str) -> Dragonfly:
    """``"a=A,p=P,h=H[,g=G][,local=B][,global=B][,local_latency=X]
    [,global_latency=X]"`` -> :class:`Dragonfly`."""
    opts = [part.strip() for part in params.split(",")] if params.strip() else []
    for opt in opts:
        if opt.partition("=")[0].strip() == "routing":
            raise ConfigError(f"option {opt!r}: the routing is chosen with ecmp, not in the "
                              "spec (--ecmp valiant, ecmp=\"valiant\"; modes: split, hash, "
                              "valiant)")
    def bw(key):
        return f"bandwidth as a multiple of the host link's, e.g. {key}=2"

    def lat(key):
        return (f"latency as a multiple of the network's link latency, e.g. {key}=10; set "
                "the link latency itself with --link-latency")
    values = parse_options(opts, {
        "a": lambda v: parse_int("a (routers per group)", v, _EXAMPLE),
        "p": lambda v: parse_int("p (hosts per router)", v, _EXAMPLE),
        "h": lambda v: parse_int("h (global links per router)", v, _EXAMPLE),
        "g": lambda v: parse_int("g (groups)", v, _EXAMPLE, low=2),
        "local": lambda v: parse_positive("local", v, bw("local")),
        "global": lambda v: parse_positive("global", v, bw("global")),
        "local_latency": lambda v: parse_positive("local_latency", v, lat("local_latency"),
                                                  zero=True),
        "global_latency": lambda v: parse_positive("global_latency", v, lat("global_latency"),
                                                   zero=True)}, _ACCEPTED)
    missing = [k for k in ("a", "p", "h") if k not in values]
    if missing:
        raise ConfigError(f"missing {', '.join(missing)}; expected a=A,p=P,h=H[,g=G] ({_EXAMPLE})")
    renames = {"local": "local_bw", "global": "global_bw", "local_latency": "local_lat",
               "global_latency": "global_lat"}
    return Dragonfly(**{renames.get(k, k): v for k, v in values.items()})
