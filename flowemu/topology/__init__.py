"""Topology families, a registry of them, and the spec parser.

A topology spec is ``family:params``, e.g. ``torus:64x64``, ``torus:8x8x8x8``,
``torus:16`` (a ring), ``mesh:4x4`` or ``leafspine:8x4x2,uplinks=2``. Family names are lowercase and
case-sensitive; whitespace around the spec, the family, the parameters and
each dimension is ignored.

A family registers a factory that turns the parameter text (after the ``:``,
stripped) into a :class:`Topology`. A factory reports a bad parameter by
raising :class:`~flowemu.core.errors.ConfigError` with the problem and what is
accepted; :func:`parse_topology` prefixes the spec so every message reads
``topology 'torus:1x4': <problem>``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

from ..core.errors import ConfigError, show, suggest
from .base import Routes, Topology
from .common import parse_dims
from .dragonfly import Dragonfly, parse_dragonfly
from .fattree import FatTree, parse_fattree
from .graph import Graph, parse_graph
from .hammingmesh import HammingMesh, parse_hammingmesh, parse_hx2mesh, parse_hx4mesh
from .hyperx import HyperX, parse_hyperx
from .leafspine import LeafSpine, parse_leafspine
from .torus import Torus
from .tree import Tree
from .treespec import TREE_DOC, parse_tree

__all__ = ["MODE_DOCS", "Dragonfly", "FatTree", "Graph", "HammingMesh", "HyperX", "LeafSpine",
           "Routes", "Topology", "Torus", "Tree", "parse_topology", "register_topology", "split_specs",
           "topology_families", "topology_modes"]

_FACTORIES: dict[str, Callable[[str], Topology]] = {}
_DOCS: dict[str, str] = {}
_MODES: dict[str, tuple[str, ...]] = {}

#: what each routing mode does, shown by ``flowemu list``
MODE_DOCS = {
    "split": "even fractional split over the minimal paths (the fluid limit of ECMP; on "
             "tori and meshes evenly over the minimal next hops at every hop)",
    "hash": "one minimal path per flow by a seeded hash of (source, destination)",
    "dor": "dimension order: one minimal path, lowest dimension first",
    "dmodk": "destination mod k: one path, each tier's up-port chosen from the destination "
             "host id (fat trees)",
    "valiant": "fluid Valiant routing: the flow spread evenly over every intermediate group, "
               "each leg minimal",
    "adaptive": "fluid minimal adaptive routing (every family with split): per step, each "
                "flow split over its minimal paths to minimise the most loaded link",
}


def register_topology(family: str, factory: Callable[[str], Topology], params_doc: str,
                      modes: tuple[str, ...] = ("split", "hash")) -> None:
    """Register a topology family.

    Parameters
    ----------
    family : str
        Lowercase name used before the ``:`` of a spec.
    factory : callable ``(params: str) -> Topology``
        Builds the topology from the parameter text; raises ``ConfigError``
        (without the spec prefix) on a bad parameter.
    params_doc : str
        One line on the accepted parameters, shown by ``flowemu list``.
    modes : tuple of str
        The routing modes (``ecmp=``) the family implements, default first
        (its topologies' ``ecmp_modes``).

    Raises
    ------
    ValueError
        If ``family`` is already registered or is not a lowercase name.
    """
    if not isinstance(family, str) or not family or family != family.strip().lower() \
            or ":" in family:
        raise ValueError(f"topology family name {family!r} must be a non-empty lowercase "
                         "name without ':'")
    if family in _FACTORIES:
        raise ValueError(f"topology family {family!r} is already registered")
    _FACTORIES[family] = factory
    _DOCS[family] = params_doc
    _MODES[family] = tuple(modes)


def topology_families() -> dict[str, str]:
    """Registered families and their parameter docs, ``{family: params_doc}``."""
    return {fam: _DOCS[fam] for fam in sorted(_DOCS)}


def topology_modes() -> dict[str, tuple[str, ...]]:
    """Routing modes of each registered family, ``{family: modes}``."""
    return {fam: _MODES[fam] for fam in sorted(_MODES)}


def _forms() -> str:
    return "expected family:params, e.g. torus:8x8, torus:16, mesh:4x4; families: " \
           + ", ".join(sorted(_FACTORIES))


def parse_topology(spec: str) -> Topology:
    """Build a topology from its spec string.

    Parameters
    ----------
    spec : str
        ``family:params``, e.g. ``"torus:64x64"``, ``"mesh:4x4"``.

    Returns
    -------
    Topology

    Raises
    ------
    ConfigError
        One line naming the spec, the problem and the accepted forms.
    """
    if not isinstance(spec, str):
        raise ConfigError(f"topology {show(spec)}: expected a string; {_forms()}")
    spec = str(spec)   # a numpy str_ prints as plain text in messages
    text = spec.strip()
    if not text:
        raise ConfigError(f"topology {spec!r}: the spec is empty; {_forms()}")
    if ":" not in text:
        raise ConfigError(f"topology {spec!r}: missing ':' between family and parameters; "
                          f"{_forms()}")
    family, params = (part.strip() for part in text.split(":", 1))
    if family not in _FACTORIES:
        known = ", ".join(sorted(_FACTORIES))
        hint = (" (family names are lowercase)" if family.lower() in _FACTORIES
                else suggest(family, _FACTORIES))
        raise ConfigError(f"topology {spec!r}: unknown family {family!r}{hint}; known "
                          f"families: {known}")
    try:
        return _FACTORIES[family](params)
    except ConfigError as exc:
        raise ConfigError(f"topology {spec!r}: {exc}") from None


def split_specs(text: str, canonical: bool = True) -> list[str]:
    """A comma list of topology specs, each keeping its own options:
    ``"hx2mesh:32x32,torus:8x8,leafspine:8x4x2,uplinks=2"`` gives three specs
    (a new spec starts where an item begins with a family name and ``:``;
    an option is ``key=value``). With ``canonical`` each spec is given as the topology's
    canonical spec (``hx2mesh:32x32`` -> ``hammingmesh:2x2,32x32``) when it
    parses, else as written."""
    out: list[str] = []
    for item in str(text).split(","):
        if re.match(r"\s*[a-z][a-z0-9_]*:", item) or not out:
            out.append(item.strip())
        else:
            out[-1] += "," + item.strip()
    return [canonical_spec(spec) for spec in out] if canonical else out


@functools.lru_cache(maxsize=256)
def canonical_spec(text: str) -> str:
    """The spec the topology of ``text`` gives itself (``hx2mesh:32x32`` ->
    ``hammingmesh:2x2,32x32``), or ``text`` as written when it does not
    parse (a dataset may hold specs no longer buildable)."""
    try:
        return parse_topology(text).spec
    except ConfigError:
        return text


def _grid_factory(family: str, params: str) -> Topology:
    """``D0xD1x...[,groups=G0xG1x...]``: a torus or mesh, with the sub-blocks
    a collective's locality is measured against."""
    shape, *options = (part.strip() for part in params.split(","))
    groups = None
    for option in options:
        key, eq, value = option.partition("=")
        if key.strip() != "groups" or not eq:
            raise ConfigError(f"option {option!r} is not known; {family} takes groups=G0xG1x... "
                              f"(the locality sub-blocks), e.g. {family}:16x16,groups=4x4")
        if groups is not None:
            raise ConfigError("option 'groups' is given twice")
        parts = [p.strip() for p in value.split("x")]
        if not all(p.isascii() and p.isdigit() for p in parts):
            raise ConfigError(f"groups: {value.strip()!r} is not block sizes separated by 'x', "
                              f"e.g. {family}:16x16,groups=4x4")
        groups = tuple(int(p) for p in parts)
    return Torus(parse_dims(family, shape), wrap=family == "torus", groups=groups)


def _torus_factory(params: str) -> Topology:
    return _grid_factory("torus", params)


def _mesh_factory(params: str) -> Topology:
    return _grid_factory("mesh", params)


register_topology("torus", _torus_factory,
                  "D0xD1x...[,groups=G0xG1x...]: torus with wraparound links, each dim >= 2; "
                  "torus:16 is a ring; groups: the sub-blocks cross_group_bytes counts "
                  "against, e.g. torus:8x8, torus:8x8x8x8, torus:16x16,groups=4x4",
                  Torus.ecmp_modes)
register_topology("mesh", _mesh_factory,
                  "D0xD1x...[,groups=G0xG1x...]: mesh (torus without wraparound), each dim "
                  ">= 2, e.g. mesh:4x4",
                  Torus.ecmp_modes)
register_topology("leafspine", parse_leafspine,
                  "LxHxS[,uplinks=U][,uplink=B][,uplink_latency=T]: L leaves of H hosts, S "
                  "spines, U parallel links (default 1) of B x host bandwidth (default 1) per "
                  "leaf-spine pair, each of latency T (default: the network's); "
                  "oversubscription H/(S*U*B), e.g. leafspine:8x4x2,uplinks=2",
                  LeafSpine.ecmp_modes)
register_topology("tree", parse_tree, TREE_DOC, Tree.ecmp_modes)
register_topology("dragonfly", parse_dragonfly,
                  "a=A,p=P,h=H[,g=G][,local=B][,global=B][,local_latency=X]"
                  "[,global_latency=X]: Dragonfly of g groups (default a*h+1) of A routers "
                  "(all-to-all), P hosts and H global links a router; B/X scale the local/global "
                  "link bandwidth/latency; ecmp split, hash, valiant, e.g. dragonfly:a=4,p=2,h=2",
                  Dragonfly.ecmp_modes)
register_topology("graph", parse_graph,
                  "FILE[,split=hop|paths]: any network from a .json/.toml file (nodes with an "
                  "endpoint flag, links with optional bandwidth and latency), routed on "
                  "shortest paths; ecmp split, hash, e.g. graph:configs/graphs/two-sites.toml",
                  Graph.ecmp_modes)
register_topology("hyperx", parse_hyperx,
                  "D0xD1x...[,bw=B|B0xB1x...]: HyperX, every node linked to every node "
                  "sharing all coordinates but one; bw: link bandwidth multiple (per "
                  "dimension), e.g. hyperx:4x4, hyperx:64x64, hyperx:8x8x8,bw=2",
                  HyperX.ecmp_modes)
register_topology("hammingmesh", parse_hammingmesh,
                  "AxB,XxY[,board_bw=B][,board_latency=F]: X x Y boards of A x B nodes, a "
                  "2-D mesh on each board (PCB links: B x bandwidth, default 1; F x link "
                  "latency, default 0.05), one fat tree (switch) per global row and column; "
                  "e.g. hammingmesh:2x2,4x4 (Hx2Mesh 4,096 nodes: hammingmesh:2x2,32x32)",
                  HammingMesh.ecmp_modes)
register_topology("hx2mesh", parse_hx2mesh,
                  "XxY[,options]: hammingmesh:2x2,XxY (Hx2Mesh), e.g. hx2mesh:4x4 or "
                  "hx2mesh:32x32 (4,096 nodes)", HammingMesh.ecmp_modes)
register_topology("hx4mesh", parse_hx4mesh,
                  "XxY[,options]: hammingmesh:4x4,XxY (Hx4Mesh), e.g. hx4mesh:2x2 or "
                  "hx4mesh:16x16 (4,096 nodes)", HammingMesh.ecmp_modes)
register_topology("fattree", parse_fattree,
                  "k=K[,levels=3|2][,taper=R1[:R2]]: k-ary fat tree of k-port switches, K even; "
                  "levels=3 (default): k pods, (k/2)^2 cores, k^3/4 hosts; levels=2: k leaves of "
                  "k/2 hosts, k/2 spines; taper: oversubscription of the edge (leaf) tier, then "
                  "the aggregation tier, e.g. fattree:k=4, fattree:k=8,taper=2, fattree:k=40 "
                  "(16,000 hosts)", FatTree.ecmp_modes)
