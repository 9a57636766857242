"""Spec text of the ``tree:`` family: the parser of ``tree:STRUCTURE[,options]``,
the GenTree presets built from Table 5 (:func:`preset_tree`) and the
``flowemu list`` line. The family itself is :mod:`flowemu.topology.tree`; the
structure grammar is :mod:`flowemu.topology.treeshape`, the presets' values
:mod:`flowemu.topology.treepresets`."""

from __future__ import annotations

import math
import re

from ..core.errors import ConfigError, show
from ..core.units import parse_rate, parse_time, spells_inf
from .common import parse_int
from .tree import INCAST_AT, Tree
from .treepresets import GENTREE_PRESETS, preset_params
from .treeshape import (
    MAX_LEVELS,
    STRUCTURE_EXAMPLE,
    level_words,
    parse_structure,
    structure_sizes,
)

# --------------------------------------------------------------------- parsing

_OPTIONS = ("uplinks=U:..., bw=RATE|Kx:..., lat=TIME|Kx:..., eps=TIME:..., wt=COUNT:..., "
            "incast=receiver|switch")


def _split_levels(key: str, text: str, levels: int, names: list[str]) -> list[str | None]:
    values = text.split(":")
    if len(values) == 1:   # one value: every level
        values = values * levels
    if len(values) != levels:
        raise ConfigError(f"{key}={text!r} gives {len(values)} value(s) but the tree has "
                          f"{levels} level(s), top first ({', '.join(names)}); leave an entry "
                          f"empty for the default, e.g. {key}=" + ":" * (levels - 1) + "...")
    return [v.strip() or None for v in values]


def _absolute_or_scaled(key: str, entries, parse, what: str) -> tuple[tuple, tuple]:
    """Per-level ``key`` values: absolute ones (``parse``d, with their unit)
    and ``Kx`` multiples (``what``), None where the other form was given."""
    absolute = tuple(None if e is None or e.endswith("x") else parse(e, key) for e in entries)
    scaled = tuple(_scaled(key, e, what) if e and e.endswith("x") else None for e in entries)
    return absolute, scaled


def _scaled(key: str, text: str, what: str):
    """``Kx`` -> ('scale', K)."""
    body = text[:-1].strip()
    try:
        v = float(body)
    except ValueError:
        v = float("nan")
    if not (math.isfinite(v) and v >= 0 and (v > 0 or key != "bw")):
        raise ConfigError(f"{key}: {text!r} is not allowed; expected Kx with K a number "
                          f"{'> 0' if key == 'bw' else '>= 0'} ({what})")
    return v


def parse_tree(params: str) -> Tree:
    """``"STRUCTURE[,option=v0:v1:...]..."`` or a preset name -> :class:`Tree`."""
    text = params.strip()
    head, *opts = [part.strip() for part in text.split(",")] if text else [""]
    if not head:
        raise ConfigError(f"no levels given; {STRUCTURE_EXAMPLE}")
    if head[0].isalpha() and not re.match(r"(?i)dc\s*\(", head):
        name = head.upper()
        if name not in GENTREE_PRESETS:
            raise ConfigError(f"unknown preset {head!r}; presets: {', '.join(GENTREE_PRESETS)} "
                              f"(or a structure, {STRUCTURE_EXAMPLE})")
        where = _incast_option(opts)
        if opts and where is None:
            raise ConfigError(f"preset {name} takes no options; write it out to change it: "
                              f"{preset_tree(name).expanded_spec} (only incast= may follow "
                              "a preset's name)")
        return preset_tree(name, where or "receiver")
    sites = parse_structure(head)
    sizes = [structure_sizes(sw) for sw in sites]
    cross = len(sites) > 1
    levels = max(d for _, _, d in sizes) + 1 + cross
    if levels > MAX_LEVELS:
        raise ConfigError(f"{head} has {levels} levels; at most {MAX_LEVELS} are allowed")
    names = level_words(len(sites), levels - 1 - cross)
    kw: dict = {}
    seen = set()
    for opt in opts:
        key, eq, val = (x.strip() for x in opt.partition("="))
        if not eq or not key:
            raise ConfigError(f"option {opt!r} is not key=value; options: {_OPTIONS}")
        if key == "incast":
            if key in seen:
                raise ConfigError(f"option {key!r} is given twice")
            seen.add(key)
            kw["incast_at"] = _incast_option([opt])
            continue
        if key not in ("uplinks", "bw", "lat", "eps", "wt"):
            raise ConfigError(f"unknown option {key!r}; options: {_OPTIONS}")
        if key in seen:
            raise ConfigError(f"option {key!r} is given twice")
        seen.add(key)
        entries = _split_levels(key, val, levels, names)
        if key == "uplinks":
            kw["uplinks"] = tuple(None if e is None else
                                  parse_int("uplinks", e, "e.g. uplinks=2:1") for e in entries)
        elif key == "bw":
            kw["bandwidth"], kw["capacity_scale"] = _absolute_or_scaled(
                "bw", entries, parse_rate, "times the network bandwidth")
        elif key == "lat":
            kw["latency"], kw["latency_scale"] = _absolute_or_scaled(
                "lat", entries, parse_time, "times the network link latency")
        elif key == "eps":
            kw["incast_slope"] = tuple(None if e is None else parse_time(e, "eps")
                                       for e in entries)
        else:
            kw["incast_threshold"] = tuple(None if e is None else _parse_wt(e)
                                           for e in entries)
    return Tree(sites, **kw)


def _incast_option(opts: list) -> str | None:
    """The value of a lone ``incast=receiver|switch`` among ``opts`` (None
    when ``opts`` is not exactly that one option)."""
    if len(opts) != 1:
        return None
    key, eq, val = (x.strip() for x in opts[0].partition("="))
    if key != "incast" or not eq:
        return None
    val = val.lower()
    if val not in INCAST_AT:
        raise ConfigError(f"incast={val!r}; expected one of {', '.join(INCAST_AT)} (where "
                          "incast is charged: at each receiver, or on every switch egress "
                          "link where flows converge)")
    return val


def _parse_wt(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        v = float("nan")
    # (a number too large for a double, 1e400, is not "inf": incast would be off unsaid)
    if math.isnan(v) or v < 0 or (math.isinf(v) and not spells_inf(text)):
        raise ConfigError(f"wt is {text!r}; expected a flow count >= 0 or inf (GenModel w_t)")
    return v


def preset_tree(name: str, incast_at: str = "receiver") -> Tree:
    """The GenTree preset ``name`` (SS24, SS32, SYM384, SYM512, ASY384, CDC384)
    with its Table 5 parameters per level: bandwidth ``4/β`` bytes/s, latency
    α, incast slope ``ε/4`` s per byte and threshold w_t of its tier."""
    key = str(name).upper()
    if key not in GENTREE_PRESETS:
        raise ConfigError(f"unknown preset {show(name)}; presets: {', '.join(GENTREE_PRESETS)}")
    return Tree(preset=key, incast_at=incast_at, **preset_params(key))


TREE_DOC = ("STRUCTURE[,uplinks=U:..][,bw=RATE|Kx:..][,lat=TIME|Kx:..][,eps=TIME:..]"
            "[,wt=N:..][,incast=receiver|switch] or a GenTree preset[,incast=...]; incast: "
            "where the levels' eps/wt are charged, at each receiver (default) or on every "
            "switch egress link where flows converge; groups COUNT (hosts) or COUNTxCHILD joined by "
            "'+', (..) for a multi-group child, dc(..)+dc(..) for sites whose roots are "
            "joined; per-level values top first; e.g. tree:24, tree:16x24, tree:8x32+8x16, "
            "tree:dc(8x32)+dc(8x16),bw=5Gb/s:50Gb/s:5Gb/s; presets (GenTree Table 5): "
            + ", ".join(GENTREE_PRESETS))
