"""Any network read from a file, routed on shortest paths (hop count).

The file is JSON (``.json``) or TOML (``.toml``) with two lists::

    {"nodes": [{"id": "h0", "endpoint": true}, {"id": "s0"}, ...],
     "links": [{"src": "h0", "dst": "s0", "bandwidth": "400Gb/s",
                "latency": "100ns", "bidirectional": true, "count": 1}, ...]}

* a node has an ``id`` (a string or an integer, unique) and optionally
  ``endpoint`` (default false): the vertices that can host a rank;
* a link joins two nodes; ``bandwidth`` (a rate with its unit) and
  ``latency`` (a time with its unit) are optional — a link without them
  takes the network's link bandwidth and latency; ``bidirectional`` (default
  true) adds the reverse link with the same values; ``count`` (default 1)
  parallel copies.

Optionally a top-level ``description`` string. Vertices: the endpoints first
in file order, then the other nodes in file order. Link ids follow the file:
each entry's copies, each copy forward then (if bidirectional) backward.
Routes may pass through endpoints (a torus written as a graph has only
endpoints).
"""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass

import numpy as np

from ..core.budget import GRAPH_FILE_FACTOR, reserve_reading, reserve_topology
from ..core.errors import ConfigError, RoutingError, show
from ..core.units import parse_rate, parse_time
from ..kernels.graphroute import (
    MODE_HASH,
    MODE_HOP,
    MODE_PATHS,
    STATUS_OK,
    reachable,
    route_in_flow_order,
)
from ..kernels.pathlatency import dag_max_latency
from .base import Routes, Topology
from .common import MAX_ENDPOINTS as MAX_NODES
from .common import MAX_LINKS, check_seed, is_int, parse_options, readonly

#: largest graph file read (bytes); its parsed form takes several times more
MAX_FILE_BYTES = 2**30

SPLIT_WEIGHTS = ("hop", "paths")

_NODE_KEYS = ("id", "endpoint")
_LINK_KEYS = ("src", "dst", "bandwidth", "latency", "bidirectional", "count")


@dataclass(frozen=True)
class Graph(Topology):
    """A network described by a file.

    Parameters
    ----------
    path : str
        The JSON or TOML file (see the module docstring for the format).
    split : {"hop", "paths"}
        How ``ecmp="split"`` divides a flow over its shortest paths:
        ``"hop"`` (default) every vertex evenly over its shortest next hops
        (what per-switch ECMP does in the fluid limit, as the torus family);
        ``"paths"`` every shortest path an equal share.

    Attributes
    ----------
    spec : str
        ``"graph:PATH"`` (``",split=paths"`` when not the default).
    num_endpoints, num_nodes : int
    node_names : tuple
        File id of every vertex, in vertex order.
    link_src, link_dst : int32[L]
    link_capacity_scale : float64[L]
        1 (the network bandwidth scales every link without its own).
    link_bandwidth_abs, link_latency_abs : float64[L]
        The file's values (bytes/s, s), NaN where the file gives none.
    """
    # bytes a link held (47 measured on 125,000 links, node names and per-link
    # speeds included), with a margin; reading the file is reserved from its
    # size (GRAPH_FILE_FACTOR), which is most of building one
    held_link_bytes = 56

    path: str
    split: str = "hop"

    def __post_init__(self):
        if not isinstance(self.path, (str, os.PathLike)) or not str(self.path).strip():
            raise ConfigError(f"path: {show(self.path)} is not allowed; expected a file name "
                              "(e.g. graph:net.json)")
        if self.split not in SPLIT_WEIGHTS:
            raise ConfigError(f"split: {show(self.split)} is not allowed; expected one of "
                              f"{', '.join(SPLIT_WEIGHTS)}")
        path = str(self.path).strip()
        object.__setattr__(self, "path", path)
        data = _read(path)
        names, n_end, src, dst, bw, lat = _build(path, data)
        set_ = object.__setattr__
        set_(self, "spec", f"graph:{path}" + (f",split={self.split}" if self.split != "hop"
                                               else ""))
        set_(self, "num_endpoints", n_end)
        set_(self, "num_nodes", len(names))
        set_(self, "node_names", tuple(names))
        set_(self, "link_src", readonly(src))
        set_(self, "link_dst", readonly(dst))
        set_(self, "link_capacity_scale", readonly(np.ones(len(src))))
        if not np.isnan(bw).all():
            set_(self, "link_bandwidth_abs", readonly(bw))
        if not np.isnan(lat).all():
            set_(self, "link_latency_abs", readonly(lat))
        # CSR of outgoing and incoming links (stable: file order within a vertex)
        n = len(names)
        for name, key in (("_out", src), ("_in", dst)):
            order = np.argsort(key, kind="stable").astype(np.int64)
            ptr = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(np.bincount(key, minlength=n), out=ptr[1:])
            set_(self, name + "_ptr", readonly(ptr))
            set_(self, name + "_link", readonly(order))
        self._check_connected(names)

    def _check_connected(self, names) -> None:
        """Every endpoint reaches every other (a rank cut off would fail only
        when a flow hit it): endpoint 0 reaches all of them and all reach
        it. ConfigError naming the first that does not."""
        ends = self.num_endpoints
        fwd = reachable(0, self._out_ptr, self._out_link, self.link_dst)[:ends]
        back = reachable(0, self._in_ptr, self._in_link, self.link_src)[:ends]
        for seen, how in ((fwd, "{0} cannot reach {1}"), (back, "{1} cannot reach {0}")):
            if not seen.all():
                cut = int(np.flatnonzero(~seen)[0])
                pair = how.format(repr(names[0]), repr(names[cut]))
                raise ConfigError(f"graph file {self.path!r}: endpoint {pair} (no path in "
                                  "the graph); every endpoint must reach every other")

    def __reduce__(self):
        # Ship the file name to worker processes; they read the file again.
        return (type(self), (self.path, self.split))

    def describe(self) -> dict:
        """Plain-data description: family, file, split, endpoints, nodes, links."""
        return {"family": "graph", "file": self.path, "split": self.split,
                "endpoints": self.num_endpoints, "nodes": self.num_nodes,
                "links": self.num_links}

    # ---------------------------------------------------------------- routing

    def route(self, src, dst, ecmp: str = "split", seed: int = 0) -> Routes:
        """Route flows ``src[i] -> dst[i]`` on shortest paths (hop count).

        Parameters
        ----------
        src, dst : int[F]
            Endpoint ids in ``0..num_endpoints−1``.
        ecmp : {"split", "hash"}
            ``"split"``: every shortest path, the flow divided as the
            ``split`` parameter says (per-hop even split by default).
            ``"hash"``: one shortest path, each vertex picking one of its
            shortest next hops by a hash of ``(seed, src, dst, hop)``.
        seed : int
            Hash seed (``ecmp="hash"`` only).

        Returns
        -------
        Routes
            Entries in path (layer) order; ``hops`` the shortest distance.

        Raises
        ------
        RoutingError
            Naming the first flow whose destination its source cannot reach.
        """
        self.check_mode(ecmp)
        seed = check_seed(seed)
        src, dst = self._check_flows(src, dst)
        mode = MODE_HASH if ecmp == "hash" else (MODE_PATHS if self.split == "paths"
                                                 else MODE_HOP)
        status, bad, flow_ptr, link, frac, hops = route_in_flow_order(
            src, dst, self._out_ptr, self._out_link, self._in_ptr, self._in_link,
            self.link_src, self.link_dst, self.num_nodes, mode, seed)
        if status != STATUS_OK:
            s, d = int(src[bad]), int(dst[bad])
            raise RoutingError(f"flow {bad} ({s} -> {d}) on {self.spec}: endpoint "
                               f"{self.node_names[s]!r} cannot reach {self.node_names[d]!r} "
                               "(no path in the graph)")
        return Routes(flow_ptr=flow_ptr, link=link, frac=frac, hops=hops)

    def max_route_entries(self, ecmp: str = "split") -> int:
        """One flow's entries at most: every link once (split), or a path no
        longer than the vertex count (hash)."""
        self.check_mode(ecmp)
        return self.num_links if ecmp == "split" else max(self.num_nodes - 1, 1)

    def path_latency(self, routes: Routes, link_latency: np.ndarray) -> np.ndarray:
        """Largest link-latency sum over each flow's shortest paths (split
        paths may cross links of different latency)."""
        lat = np.asarray(link_latency, dtype=np.float64)
        if len(lat) == 0 or np.all(lat == lat[0]):
            return super().path_latency(routes, lat)
        return dag_max_latency(routes.flow_ptr, routes.link, self.link_src, self.link_dst, lat,
                               self.num_nodes)


# -------------------------------------------------------------------- reading

def _read(path: str) -> dict:
    where = f"graph file {path!r}"
    ext = os.path.splitext(path)[1].lower()
    if ext not in (".json", ".toml"):
        raise ConfigError(f"{where}: unknown format {ext or '(no extension)'!r}; expected a "
                          ".json or .toml file")
    try:
        size = os.path.getsize(path)
        if size > MAX_FILE_BYTES:
            raise ConfigError(f"{where}: {size} bytes; at most {MAX_FILE_BYTES} (1 GiB) are "
                              "read")
        # parsed, a file takes ~15x its size (a 1 GiB file would take ~15 GiB)
        reserve_reading(where, size * GRAPH_FILE_FACTOR)
        with open(path, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        raise ConfigError(f"{where}: no such file") from None
    except IsADirectoryError:
        raise ConfigError(f"{where}: is a directory, not a file") from None
    except OSError as exc:
        raise ConfigError(f"{where}: cannot be read ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8-sig")   # (a byte-order mark, as some editors write)
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{where}: not UTF-8 text (byte {exc.start})") from None
    try:
        data = tomllib.loads(text) if ext == ".toml" else json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{where}: malformed JSON at line {exc.lineno} column {exc.colno}: "
                          f"{exc.msg}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where}: malformed TOML: {str(exc).splitlines()[0]}") from None
    except RecursionError:
        raise ConfigError(f"{where}: malformed: nested too deeply") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected an object with 'nodes' and 'links' lists, got a "
                          f"{type(data).__name__}")
    return data


def _build(path: str, data: dict):
    where = f"graph file {path!r}"
    unknown = sorted(set(data) - {"nodes", "links", "description"})
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r}; expected nodes, links, "
                          "description")
    for key in ("nodes", "links"):
        if not isinstance(data.get(key), list):
            raise ConfigError(f"{where}: {key!r} must be a list"
                              + (" (missing)" if key not in data else ""))
    nodes, links = data["nodes"], data["links"]
    if len(nodes) > MAX_NODES:
        raise ConfigError(f"{where}: {len(nodes)} nodes; at most {MAX_NODES} (2**24) are "
                          "allowed")
    index: dict = {}
    endpoint = []
    for i, node in enumerate(nodes):
        at = f"{where}: nodes[{i}]"
        if not isinstance(node, dict):
            raise ConfigError(f"{at}: expected an object with 'id' (and 'endpoint'), got "
                              f"{show(node)}")
        bad = sorted(set(node) - set(_NODE_KEYS))
        if bad:
            raise ConfigError(f"{at}: unknown key {bad[0]!r}; expected id, endpoint")
        if "id" not in node:
            raise ConfigError(f"{at}: missing 'id'")
        nid = node["id"]
        if not (isinstance(nid, str) or is_int(nid)):
            raise ConfigError(f"{at}: id {show(nid)} must be a string or an integer")
        if nid in index:
            raise ConfigError(f"{at}: id {show(nid)} is already nodes[{index[nid]}]")
        ep = node.get("endpoint", False)
        if not isinstance(ep, bool):
            raise ConfigError(f"{at}: endpoint {show(ep)} must be true or false")
        index[nid] = i
        endpoint.append(ep)
    endpoint = np.array(endpoint, dtype=bool)
    n_end = int(endpoint.sum())
    if n_end < 2:
        raise ConfigError(f"{where}: {n_end} endpoint(s); at least 2 nodes need "
                          "\"endpoint\": true")
    # vertex ids: endpoints first in file order, then the others
    order = np.concatenate([np.flatnonzero(endpoint), np.flatnonzero(~endpoint)])
    vertex = np.empty(len(nodes), dtype=np.int64)
    vertex[order] = np.arange(len(nodes))
    names = [nodes[int(i)]["id"] for i in order]
    src, dst, bw, lat = [], [], [], []
    total = 0
    for i, lk in enumerate(links):
        at = f"{where}: links[{i}]"
        if not isinstance(lk, dict):
            raise ConfigError(f"{at}: expected an object with 'src' and 'dst', got {show(lk)}")
        bad = sorted(set(lk) - set(_LINK_KEYS))
        if bad:
            raise ConfigError(f"{at}: unknown key {bad[0]!r}; expected "
                              f"{', '.join(_LINK_KEYS)}")
        ends = []
        for key in ("src", "dst"):
            if key not in lk:
                raise ConfigError(f"{at}: missing {key!r}")
            v = lk[key]
            if not (isinstance(v, str) or is_int(v)) or v not in index:
                raise ConfigError(f"{at}: {key} {show(v)} is not a node id of the file")
            ends.append(int(vertex[index[v]]))
        if ends[0] == ends[1]:
            raise ConfigError(f"{at}: src and dst are both {show(lk['src'])}; a link joins two "
                              "nodes")
        b = _value(lk, "bandwidth", parse_rate, "a rate with its unit, e.g. \"400Gb/s\"", at)
        t = _value(lk, "latency", parse_time, "a time with its unit, e.g. \"100ns\"", at)
        both = lk.get("bidirectional", True)
        if not isinstance(both, bool):
            raise ConfigError(f"{at}: bidirectional {show(both)} must be true or false")
        count = lk.get("count", 1)
        if not is_int(count) or count < 1:
            raise ConfigError(f"{at}: count {show(count)} must be an integer >= 1 (parallel "
                              "links)")
        total += count * (2 if both else 1)
        if total > MAX_LINKS:
            raise ConfigError(f"{where}: more than {MAX_LINKS} (2**26) directed links")
        if count > 1:   # parallel copies grow the lists faster than the file
            reserve_topology(where, total, len(names))
        pair = [(ends[0], ends[1])] + ([(ends[1], ends[0])] if both else [])
        for _ in range(count):
            for u, v in pair:
                src.append(u)
                dst.append(v)
                bw.append(b)
                lat.append(t)
    reserve_topology(where, total, len(names))
    return (names, n_end, np.array(src, dtype=np.int32), np.array(dst, dtype=np.int32),
            np.array(bw, dtype=np.float64), np.array(lat, dtype=np.float64))


def _value(entry: dict, key: str, parse, forms: str, at: str) -> float:
    if key not in entry:
        return float("nan")
    v = entry[key]
    if not isinstance(v, str):
        raise ConfigError(f"{at}: {key} {show(v)} must be {forms}")
    try:
        return float(parse(v, key))
    except ConfigError as exc:
        raise ConfigError(f"{at}: {exc}") from None


def split_file_options(params: str) -> tuple[str, list[str]]:
    """``"FILE[,key=value...]"`` -> ``(FILE, ["key=value", ...])``: trailing
    ``key=value`` items are options, the rest is the file name."""
    parts = params.split(",")
    opts = []
    while len(parts) > 1 and "=" in parts[-1]:
        opts.insert(0, parts.pop().strip())
    return ",".join(parts), opts


def parse_graph(params: str) -> Graph:
    """``"FILE[,split=hop|paths]"`` -> :class:`Graph`."""
    path, opts = split_file_options(params)
    values = parse_options(opts, {"split": lambda v: v}, "split=hop|paths")
    opt = values.get("split")
    if not path.strip():
        raise ConfigError("no file given; expected graph:FILE (a .json or .toml file, e.g. "
                          "graph:net.json)")
    if opt is not None and opt not in SPLIT_WEIGHTS:
        raise ConfigError(f"split is {opt!r}; expected one of {', '.join(SPLIT_WEIGHTS)}")
    return Graph(path.strip(), opt or "hop")
