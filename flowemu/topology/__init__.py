"""Topology families, a registry of them, and the spec parser.

A topology spec is ``family:params``, e.g. ``torus:64x64``, ``torus:8x8x8x8``,
``torus:16`` (a ring), ``mesh:4x4`` or ``leafspine:8x4x2,uplinks=2``. Family names are lowercase and
case-sensitive; whitespace around the spec, the family, the parameters and
each dimension is ignored.

A family registers a factory that turns the parameter text (after the ``:``,
stripped) into a :class:`Topology`. A factory reports a bad parameter by
raising :class:`~flowemu.errors.ConfigError` with the problem and what is
accepted; :func:`parse_topology` prefixes the spec so every message reads
``topology 'torus:1x4': <problem>``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ..errors import ConfigError, show
from .base import Routes, Topology
from .fattree import FatTree, parse_fattree
from .leafspine import LeafSpine, parse_leafspine
from .torus import MAX_NODES, Torus

__all__ = ["FatTree", "LeafSpine", "Routes", "Topology", "Torus", "parse_topology", "register_topology",
           "topology_families"]

_FACTORIES: dict[str, Callable[[str], Topology]] = {}
_DOCS: dict[str, str] = {}


def register_topology(family: str, factory: Callable[[str], Topology], params_doc: str) -> None:
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


def topology_families() -> dict[str, str]:
    """Registered families and their parameter docs, ``{family: params_doc}``."""
    return {fam: _DOCS[fam] for fam in sorted(_DOCS)}


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
        hint = " (family names are lowercase)" if family.lower() in _FACTORIES else ""
        raise ConfigError(f"topology {spec!r}: unknown family {family!r}{hint}; known "
                          f"families: {known}")
    try:
        return _FACTORIES[family](params)
    except ConfigError as exc:
        raise ConfigError(f"topology {spec!r}: {exc}") from None


def _parse_dims(family: str, params: str) -> tuple[int, ...]:
    example = f"e.g. {family}:8x8, {family}:16, {family}:8x8x8"
    if not params:
        raise ConfigError(f"no dimensions given; expected sizes separated by 'x' ({example})")
    dims = []
    for i, part in enumerate(params.split("x")):
        part = part.strip()
        if not part:
            raise ConfigError(f"dimension {i} is empty; expected sizes separated by 'x' "
                              f"({example})")
        body = part[1:] if part[0] in "+-" else part
        if not (body.isascii() and body.isdigit()):
            raise ConfigError(f"dimension {i} is {part!r}, not an integer; expected sizes "
                              f"separated by 'x' ({example})")
        d = int(part)
        if d < 2:
            raise ConfigError(f"dimension {i} is {d}; every dimension must be an integer >= 2 "
                              f"(e.g. {family}:8x8)")
        dims.append(d)
    nodes = math.prod(dims)
    if nodes > MAX_NODES:
        raise ConfigError(f"{'x'.join(map(str, dims))} has {nodes} nodes; at most {MAX_NODES} "
                          "(2**24) are allowed")
    return tuple(dims)


def _torus_factory(params: str) -> Topology:
    return Torus(_parse_dims("torus", params), wrap=True)


def _mesh_factory(params: str) -> Topology:
    return Torus(_parse_dims("mesh", params), wrap=False)


register_topology("torus", _torus_factory,
                  "D0xD1x...: torus with wraparound links, each dim >= 2; torus:16 is a ring, "
                  "e.g. torus:8x8, torus:8x8x8x8")
register_topology("mesh", _mesh_factory,
                  "D0xD1x...: mesh (torus without wraparound), each dim >= 2, e.g. mesh:4x4")
register_topology("leafspine", parse_leafspine,
                  "LxHxS[,uplinks=U][,uplink=B]: L leaves of H hosts, S spines, U parallel "
                  "links (default 1) of B x host bandwidth (default 1) per leaf-spine pair; "
                  "oversubscription H/(S*U*B), e.g. leafspine:8x4x2,uplinks=2")
register_topology("fattree", parse_fattree,
                  "k=K[,levels=3|2][,taper=R1[:R2]]: k-ary fat tree of k-port switches, K even; "
                  "levels=3 (default): k pods, (k/2)^2 cores, k^3/4 hosts; levels=2: k leaves of "
                  "k/2 hosts, k/2 spines; taper: oversubscription of the edge (leaf) tier, then "
                  "the aggregation tier, e.g. fattree:k=8,taper=2")
