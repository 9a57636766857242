"""Sweeps: grids of configurations from a TOML file, run on local processes
or a Dask cluster, written to a resumable parquet dataset.

A sweep file (``configs/*.toml``, read with :mod:`tomllib`)::

    description = "ring vs recursive doubling on small tori"
    sizes = "1KiB..512KiB"             # keys at the top are defaults for every group
    bandwidth = "400Gb/s"

    [groups.square]                    # one grid per group
    topology = ["torus:4x4", "torus:8x8"]
    algorithm = ["ring", "recdoub:variant=latency",
                 { name = "ring", ports = [1, 2] }]   # option lists expand too
    bandwidth = ["100Gb/s", "400Gb/s"]

    [[groups.square.exclude]]          # drop the configurations that match
    topology = "torus:4x4"
    algorithm = "ring:ports=2"         # name + the options given (subset match)

    [groups.cubes]
    topology = "torus:4x4x4"
    algorithm = "recdoub"
    where = "nodes <= 64 and bandwidth >= rate('200Gb/s')"   # keep only these

Every list of a grid field expands as a cartesian product; ``sizes`` is not a
grid dimension (all sizes of one configuration come from one profile, they
are the rows). Without a ``[groups.*]`` table the top level is one group,
``main``. ``[[exclude]]`` at the top applies to every group.

Each configuration has a readable key (``group|topology|algorithm|...``) and
a 12-hex-digit hash of its canonical fields; the hash is its identity in the
dataset, so re-running a sweep computes only what is missing. See
:mod:`flowemu.results` for the dataset layout.
"""

from __future__ import annotations

import ast
import difflib
import fcntl
import hashlib
import itertools
import json
import math
import os
import signal
import sys
import time
import tomllib
import traceback
import types
from concurrent.futures import FIRST_COMPLETED, Executor, wait
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

from .errors import ConfigError, FlowEmuError
from .network import _TIME_FIELDS, Network
from .units import format_size, parse_rate, parse_sizes, parse_time

#: grid fields (a list expands as a cartesian product)
GRID_FIELDS = ("topology", "algorithm", "ranks", "bandwidth", "link_latency", "hop_latency",
               "alpha", "gamma", "delta", "incast_threshold", "incast_slope", "ecmp", "seed")
#: every configuration field a sweep file may set
FIELDS = GRID_FIELDS[:3] + ("sizes",) + GRID_FIELDS[3:]
NETWORK_FIELDS = Network.field_names()
GROUP_KEYS = FIELDS + ("where", "exclude", "description")
TOP_KEYS = GROUP_KEYS + ("groups",)
REQUIRED = ("topology", "algorithm")
DEFAULT_SIZES = "32B..512MiB"
DEFAULT_GROUP = "main"

def _canon_float(v: float) -> float:
    """12 significant digits, so "100ns", "0.1us" and 1e-7 are one value
    (100 * 1e-9 != 1e-7 in binary floating point)."""
    return float(f"{float(v):.12g}")


_NET_DEFAULTS = {k: _canon_float(v) for k, v in Network().as_dict().items()}
_DEFAULTS = {**_NET_DEFAULTS, "ranks": None, "ecmp": "split", "seed": 0}


# ============================================================== configurations

@dataclass(frozen=True)
class Config:
    """One configuration of a sweep: everything :func:`flowemu.simulate` needs.

    ``algorithm`` is the canonical spec (every option spelled out, sorted);
    ``label`` is the name plus the options that differ from their defaults
    (what :func:`flowemu.results.compare` compares). Network fields are in SI
    units (bytes/s, seconds, seconds per byte).
    """

    sweep: str
    group: str
    topology: str
    algorithm: str
    label: str
    ranks: int | None
    sizes: tuple[int, ...]
    bandwidth: float
    link_latency: float
    hop_latency: float
    alpha: float
    gamma: float
    delta: float
    incast_threshold: float
    incast_slope: float
    ecmp: str
    seed: int
    key: str = ""
    hash: str = ""

    @property
    def sizes_text(self) -> str:
        return sizes_text(self.sizes)

    def network(self) -> Network:
        return Network(**{f: getattr(self, f) for f in NETWORK_FIELDS})

    def canonical(self) -> dict:
        """The fields that identify the configuration (hashed)."""
        out = {"group": self.group, "topology": self.topology, "algorithm": self.algorithm,
               "ranks": self.ranks, "sizes": list(self.sizes), "ecmp": self.ecmp,
               "seed": self.seed}
        out.update({f: getattr(self, f) for f in NETWORK_FIELDS})
        return out


def config_hash(canonical: dict) -> str:
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _exact_size(n: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{unit}"
    return f"{n}B"


def sizes_text(sizes) -> str:
    """``32B..512MiB`` for consecutive powers of two, else an exact comma list."""
    sizes = list(sizes)
    pow2 = all(s & (s - 1) == 0 for s in sizes)
    if len(sizes) >= 2 and pow2 and all(b == 2 * a for a, b in itertools.pairwise(sizes)):
        return f"{format_size(sizes[0])}..{format_size(sizes[-1])}"
    return ",".join(_exact_size(s) for s in sizes)


def _num(v: float) -> str:
    return f"{v:.10g}"


def _fmt_field(name: str, v) -> str:
    if name == "bandwidth":
        bits = v * 8
        for unit, scale in (("Tb/s", 1e12), ("Gb/s", 1e9), ("Mb/s", 1e6)):
            if bits >= scale:
                return f"{_num(bits / scale)}{unit}"
        return f"{_num(bits)}b/s"
    if name in ("link_latency", "hop_latency", "alpha"):
        ns = v * 1e9
        for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
            if ns >= scale:
                return f"{_num(ns / scale)}{unit}"
        return f"{_num(ns)}ns"
    return _num(v) if isinstance(v, float) else str(v)


def config_key(cfg: Config) -> str:
    """``group|topology|algorithm[|field=value for non-defaults]|sizes=...``."""
    parts = [cfg.group, cfg.topology, cfg.algorithm]
    for name in ("ranks", *NETWORK_FIELDS, "ecmp", "seed"):
        v = getattr(cfg, name)
        if v != _DEFAULTS[name]:
            parts.append(f"{name}={_fmt_field(name, v)}")
    parts.append(f"sizes={cfg.sizes_text}")
    return "|".join(parts)


# ============================================================== validation

class SweepConfigError(ConfigError):
    """Every problem of a sweep file at once; ``problems`` holds
    ``(location, message)`` pairs, the location as a TOML key path."""

    def __init__(self, path: str, problems: list[tuple[str, str]]):
        self.path = path
        self.problems = list(problems)
        if len(problems) == 1:
            loc, msg = problems[0]
            text = f"{path}: {loc}: {msg}" if loc else f"{path}: {msg}"
        else:
            lines = [f"  {path}: {loc}: {msg}" if loc else f"  {path}: {msg}"
                     for loc, msg in problems]
            text = f"{path}: {len(problems)} problems\n" + "\n".join(lines)
        super().__init__(text)


class _Problems:
    def __init__(self):
        self.items: list[tuple[str, str]] = []

    def add(self, loc: str, msg: str) -> None:
        if (loc, msg) not in self.items:
            self.items.append((loc, msg))


def _strip_field(msg: str, name: str) -> str:
    # parser messages start with "field: "; the location already names it
    for prefix in (f"{name}: ", "algorithm: ", f"{name} "):
        if msg.startswith(prefix):
            return msg[len(prefix):]
    return msg


def _suggest(word: str, allowed) -> str:
    close = difflib.get_close_matches(word, list(allowed), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _type_name(v) -> str:
    return {str: "a string", int: "an integer", float: "a number", bool: "a boolean",
            list: "an array", dict: "a table"}.get(type(v), type(v).__name__)


@dataclass(frozen=True)
class _Topo:
    spec: str
    nodes: int
    dims: tuple[int, ...]
    family: str


@lru_cache(maxsize=256)
def _topo_info(spec: str) -> _Topo:
    from .topology import parse_topology
    topo = parse_topology(spec)
    return _Topo(topo.spec, int(topo.num_endpoints),
                 tuple(int(d) for d in getattr(topo, "dims", ()) or ()),
                 topo.spec.split(":", 1)[0])


@dataclass(frozen=True)
class _Alg:
    name: str
    options: tuple[tuple[str, object], ...]   # every option, sorted
    spec: str                                 # canonical
    label: str


def _algorithm(name: str, raw_opts: dict) -> _Alg:
    from .algorithms import get_algorithm
    spec = get_algorithm(name)
    opts = spec.parse_options(raw_opts)
    items = tuple(sorted(opts.items()))
    defaults = {p.name: p.default for p in spec.params}
    text = name + (":" + ",".join(f"{k}={v}" for k, v in items) if items else "")
    diff = [(k, v) for k, v in items if v != defaults.get(k)]
    label = name + (":" + ",".join(f"{k}={v}" for k, v in diff) if diff else "")
    return _Alg(name, items, text, label)


def _parse_algorithm_value(raw, loc: str, probs: _Problems) -> list[_Alg]:
    """A string spec or a table ``{name = ..., option = value | [values]}``."""
    from .algorithms import parse_algorithm_spec
    try:
        if isinstance(raw, str):
            name, opts = parse_algorithm_spec(raw)
            return [_algorithm(name, opts)]
        if isinstance(raw, dict):
            if "name" not in raw or not isinstance(raw["name"], str):
                probs.add(loc, "an algorithm table needs name = \"NAME\" (and options as "
                               "keys, e.g. { name = \"ring\", ports = [1, 2] })")
                return []
            name = raw["name"].strip()
            keys = [k for k in raw if k != "name"]
            lists = []
            for k in keys:
                v = raw[k]
                if isinstance(v, list):
                    if not v:
                        probs.add(f"{loc}.{k}", "empty array; give at least one value")
                        return []
                    lists.append(v)
                else:
                    lists.append([v])
            out = []
            for combo in itertools.product(*lists):
                out.append(_algorithm(name, dict(zip(keys, combo))))
            return out
        probs.add(loc, f"expected an algorithm spec string such as \"recdoub:variant=auto\" "
                       f"or a table {{ name = ..., option = ... }}, got {_type_name(raw)}")
    except ConfigError as exc:
        probs.add(loc, _strip_field(str(exc), "algorithm"))
    return []


def _parse_scalar(name: str, raw):
    """Canonical value of one grid-field element, or raise ConfigError."""
    if name == "topology":
        if not isinstance(raw, str):
            raise ConfigError(f"expected a topology spec string such as \"torus:8x8\", got "
                              f"{_type_name(raw)}")
        return _topo_info(raw).spec
    if name == "ranks":
        if raw == "all":
            return None
        if isinstance(raw, bool) or not isinstance(raw, int) or raw < 2:
            raise ConfigError(f"{raw!r} is not allowed; expected an integer >= 2 or \"all\"")
        return int(raw)
    if name == "bandwidth":
        if isinstance(raw, (list, dict)):
            raise ConfigError(f"expected a rate such as \"400Gb/s\", got {_type_name(raw)}")
        return _canon_float(parse_rate(raw, name))
    if name in _TIME_FIELDS:
        if isinstance(raw, (list, dict)):
            raise ConfigError(f"expected a time such as \"100ns\", got {_type_name(raw)}")
        return _canon_float(parse_time(raw, name))
    if name == "incast_threshold":
        if isinstance(raw, (list, dict)):
            raise ConfigError(f"expected a flow count or \"inf\", got {_type_name(raw)}")
        return _canon_float(Network(incast_threshold=raw).incast_threshold)
    if name == "ecmp":
        from .topology.base import check_ecmp
        if not isinstance(raw, str):
            raise ConfigError(f"expected one of \"split\", \"dor\", \"hash\", got "
                              f"{_type_name(raw)}")
        check_ecmp(raw)
        return raw
    if name == "seed":
        if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
            raise ConfigError(f"{raw!r} is not allowed; expected an integer >= 0")
        return int(raw)
    raise AssertionError(name)


def _parse_field(name: str, raw, loc: str, probs: _Problems) -> list | None:
    """Canonical values of a grid field (a scalar is a one-element list);
    None when any element is bad (the problems are recorded)."""
    items = raw if isinstance(raw, list) else [raw]
    if isinstance(raw, list) and not raw:
        probs.add(loc, "empty array; give at least one value")
        return None
    if isinstance(raw, dict) and name != "algorithm":
        probs.add(loc, "expected a value or an array of values, got a table")
        return None
    out, ok = [], True
    for i, item in enumerate(items):
        iloc = f"{loc}[{i}]" if isinstance(raw, list) else loc
        if isinstance(item, list):
            probs.add(iloc, "nested arrays are not allowed; give a flat array of values")
            ok = False
            continue
        if name == "algorithm":
            vals = _parse_algorithm_value(item, iloc, probs)
            ok = ok and bool(vals)
            out.extend(vals)
            continue
        try:
            out.append(_parse_scalar(name, item))
        except ConfigError as exc:
            probs.add(iloc, _strip_field(str(exc), name))
            ok = False
    if not ok:
        return None
    uniq = []
    for v in out:  # keep file order, drop duplicates (e.g. "ring" and "ring:ports=1")
        if v not in uniq:
            uniq.append(v)
    return uniq


def _parse_sizes(raw, loc: str, probs: _Problems) -> tuple[int, ...] | None:
    if isinstance(raw, (bool, dict)):
        probs.add(loc, f"expected a range string such as \"32B..512MiB\" or an array of "
                       f"sizes, got {_type_name(raw)}")
        return None
    if isinstance(raw, list) and any(isinstance(x, (list, dict, bool)) for x in raw):
        probs.add(loc, "expected an array of sizes such as [\"1KiB\", \"1MiB\"] or [1024]")
        return None
    try:
        return tuple(parse_sizes([raw] if isinstance(raw, (int, float)) else raw, "sizes"))
    except ConfigError as exc:
        probs.add(loc, _strip_field(str(exc), "sizes"))
        return None


# ------------------------------------------------------------ where expressions

_WHERE_FUNCS = {
    "rate": lambda s: parse_rate(s, "rate()"), "time": lambda s: parse_time(s, "time()"),
    "size": lambda s: parse_sizes([s], "size()")[0], "len": len, "min": min, "max": max,
    "abs": abs,
}
_WHERE_NAMES = ("group", "topology", "family", "nodes", "dims", "ndims", "algorithm",
                "algorithm_spec", "label", "options", *GRID_FIELDS[2:])
_WHERE_NODES = (ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub,
                ast.UAdd, ast.Compare, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE,
                ast.In, ast.NotIn, ast.BinOp, ast.Add, ast.Sub, ast.Mult, ast.Div,
                ast.FloorDiv, ast.Mod, ast.Pow, ast.Name, ast.Load, ast.Constant, ast.List,
                ast.Tuple, ast.Call, ast.Subscript, ast.IfExp)


def _compile_where(text, loc: str, probs: _Problems):
    if not isinstance(text, str):
        probs.add(loc, f"expected an expression string such as \"nodes <= 64\", got "
                       f"{_type_name(text)}")
        return None
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        probs.add(loc, f"cannot parse {text!r}: {exc.msg}")
        return None
    for node in ast.walk(tree):
        if not isinstance(node, _WHERE_NODES):
            probs.add(loc, f"{text!r}: {type(node).__name__} is not allowed in a where "
                           "expression (use comparisons, and/or/not, arithmetic, in)")
            return None
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name)
                                               and node.func.id in _WHERE_FUNCS):
            probs.add(loc, f"{text!r}: only these functions may be called: "
                           f"{', '.join(sorted(_WHERE_FUNCS))}")
            return None
        if isinstance(node, ast.Name) and node.id not in _WHERE_NAMES \
                and node.id not in _WHERE_FUNCS:
            probs.add(loc, f"{text!r}: unknown name {node.id!r}{_suggest(node.id, _WHERE_NAMES)}"
                           f"; known: {', '.join(_WHERE_NAMES)}")
            return None
    return compile(tree, f"<where {loc}>", "eval")


def _where_env(cfg: Config, alg: _Alg) -> dict:
    info = _topo_info(cfg.topology)
    env = {f: getattr(cfg, f) for f in GRID_FIELDS[2:]}
    env.update(group=cfg.group, topology=cfg.topology, family=info.family, nodes=info.nodes,
               dims=info.dims, ndims=len(info.dims), algorithm=alg.name,
               algorithm_spec=alg.spec, label=alg.label, options=dict(alg.options))
    env["ranks"] = cfg.ranks if cfg.ranks is not None else info.nodes
    return env


def _eval_where(code, text: str, env: dict, loc: str, probs: _Problems) -> bool | None:
    try:
        return bool(eval(code, {"__builtins__": {}, **_WHERE_FUNCS}, env))
    except Exception as exc:  # noqa: BLE001 - a user expression failing is a config problem
        probs.add(loc, f"{text!r} fails for {env['topology']} {env['algorithm_spec']}: "
                       f"{type(exc).__name__}: {exc}")
        return None


# ------------------------------------------------------------ exclude entries

@dataclass
class _Exclude:
    loc: str
    match: dict          # field -> list of canonical values (algorithm: (name, opts) pairs)
    where: object = None
    where_text: str = ""


def _parse_exclude(entry, loc: str, probs: _Problems) -> _Exclude | None:
    from .algorithms import parse_algorithm_spec
    if not isinstance(entry, dict):
        probs.add(loc, f"expected a table of field = value(s), got {_type_name(entry)}")
        return None
    if not entry:
        probs.add(loc, "empty exclude entry; it would exclude everything")
        return None
    ex, ok = _Exclude(loc, {}), True
    for k, raw in entry.items():
        kloc = f"{loc}.{k}"
        if k == "where":
            ex.where = _compile_where(raw, kloc, probs)
            ex.where_text = raw if isinstance(raw, str) else ""
            ok = ok and ex.where is not None
        elif k == "sizes":
            probs.add(kloc, "sizes are not a grid dimension and cannot be excluded; "
                            "set sizes per group instead")
            ok = False
        elif k not in GRID_FIELDS:
            probs.add(kloc, f"unknown key {k!r}{_suggest(k, GRID_FIELDS + ('where',))}; "
                            f"allowed: {', '.join(GRID_FIELDS + ('where',))}")
            ok = False
        elif k == "algorithm":
            vals = []
            for i, item in enumerate(raw if isinstance(raw, list) else [raw]):
                iloc = f"{kloc}[{i}]" if isinstance(raw, list) else kloc
                if not isinstance(item, str):
                    probs.add(iloc, f"expected \"NAME[:key=val,...]\", got {_type_name(item)}")
                    ok = False
                    continue
                try:
                    name, opts = parse_algorithm_spec(item)
                    parsed = dict(_algorithm(name, opts).options)
                    vals.append((name, {o: parsed[o] for o in opts}))
                except ConfigError as exc:
                    probs.add(iloc, _strip_field(str(exc), "algorithm"))
                    ok = False
            ex.match[k] = vals
        else:
            vals = _parse_field(k, raw, kloc, probs)
            if vals is None:
                ok = False
            else:
                ex.match[k] = vals
    return ex if ok else None


def _excluded(ex: _Exclude, cfg: Config, alg: _Alg, env: dict, probs: _Problems) -> bool:
    for k, vals in ex.match.items():
        if k == "algorithm":
            opts = dict(alg.options)
            if not any(alg.name == n and all(opts.get(o) == v for o, v in want.items())
                       for n, want in vals):
                return False
        elif k == "ranks":
            if not any((v is None and cfg.ranks is None) or (v is not None and v == env["ranks"])
                       for v in vals):
                return False
        elif getattr(cfg, k) not in vals:
            return False
    if ex.where is not None:
        return bool(_eval_where(ex.where, ex.where_text, env, f"{ex.loc}.where", probs))
    return True


# ------------------------------------------------------------ the plan

@dataclass
class SweepPlan:
    """A validated sweep file: its name, groups and configurations (file order)."""

    name: str
    path: Path
    description: str
    groups: dict[str, list[Config]]
    configs: list[Config] = field(default_factory=list)


def _read_toml(path: Path) -> dict:
    if not path.is_file():
        raise SweepConfigError(str(path), [("", "file not found")])
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise SweepConfigError(str(path), [("", f"not valid TOML: {exc}")]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SweepConfigError(str(path), [("", f"cannot read: {exc}")]) from None


def _check_keys(table: dict, allowed, prefix: str, probs: _Problems) -> None:
    for k in table:
        if k not in allowed:
            loc = f"{prefix}{k}"
            probs.add(loc, f"unknown key {k!r}{_suggest(k, allowed)}; allowed: "
                           f"{', '.join(allowed)}")


def load_sweep(path) -> SweepPlan:
    """Read and validate a sweep file and expand its grids.

    Raises
    ------
    SweepConfigError
        (a :class:`~flowemu.errors.ConfigError`) listing every problem with
        its location (file, ``groups.NAME.key[index]``), before any work.
    """
    path = Path(path)
    doc = _read_toml(path)
    probs = _Problems()
    _check_keys(doc, TOP_KEYS, "", probs)
    desc = doc.get("description", "")
    if not isinstance(desc, str):
        probs.add("description", f"expected a string, got {_type_name(desc)}")

    groups_raw = doc.get("groups")
    if groups_raw is None:
        groups = {DEFAULT_GROUP: ({}, "")}
    elif not isinstance(groups_raw, dict) or not all(isinstance(g, dict)
                                                     for g in groups_raw.values()):
        probs.add("groups", "expected tables [groups.NAME] (one per grid)")
        groups = {}
    elif not groups_raw:
        probs.add("groups", "no groups defined; add a [groups.NAME] table")
        groups = {}
    else:
        groups = {}
        for gname, table in groups_raw.items():
            if not gname or not all(c.isalnum() or c in "_-." for c in gname):
                probs.add(f"groups.{gname}", "group names may hold letters, digits, '_', '-' "
                                             "and '.' only")
            _check_keys(table, GROUP_KEYS, f"groups.{gname}.", probs)
            groups[gname] = (table, f"groups.{gname}.")
            gd = table.get("description", "")
            if not isinstance(gd, str):
                probs.add(f"groups.{gname}.description", f"expected a string, got "
                                                          f"{_type_name(gd)}")

    parsed: dict[str, object] = {}   # location -> parsed values (a top-level key once)

    def field_values(name, table, prefix):
        src, loc = (table, f"{prefix}{name}") if name in table else (doc, name)
        if name not in src:
            return None, loc, False
        if loc not in parsed:
            raw = src[name]
            parsed[loc] = (_parse_sizes(raw, loc, probs) if name == "sizes"
                           else _parse_field(name, raw, loc, probs))
        return parsed[loc], loc, True

    def sources(table, prefix):
        # top-level exclude/where apply to every group, then the group's own
        return [(doc, "")] + ([(table, prefix)] if prefix else [])

    def excludes(table, prefix):
        out, ok = [], True
        for src, pre in sources(table, prefix):
            if "exclude" not in src:
                continue
            loc = f"{pre}exclude"
            if loc not in parsed:
                raw = src["exclude"]
                if not isinstance(raw, list):
                    probs.add(loc, f"expected an array of tables ([[{loc}]] entries), got "
                                   f"{_type_name(raw)}")
                    parsed[loc] = None
                else:
                    vals = [_parse_exclude(e, f"{loc}[{i}]", probs) for i, e in enumerate(raw)]
                    parsed[loc] = None if any(v is None for v in vals) else vals
            if parsed[loc] is None:
                ok = False
            else:
                out.extend(parsed[loc])
        return out, ok

    def where_codes(table, prefix):
        out, ok = [], True
        for src, pre in sources(table, prefix):
            if "where" not in src:
                continue
            loc = f"{pre}where"
            if loc not in parsed:
                parsed[loc] = _compile_where(src["where"], loc, probs)
            if parsed[loc] is None:
                ok = False
            else:
                out.append((parsed[loc], src["where"], loc))
        return out, ok

    name = path.stem
    plan = SweepPlan(name, path, desc if isinstance(desc, str) else "", {})
    for gname, (table, prefix) in groups.items():
        values, complete = {}, True
        for f in GRID_FIELDS:
            vals, loc, present = field_values(f, table, prefix)
            if not present:
                if f in REQUIRED:
                    where = f"groups.{gname}" if groups_raw is not None else ""
                    probs.add(where, f"missing required key {f!r} (set it in the group or at "
                                     "the top of the file)")
                    complete = False
                    continue
                values[f] = [_DEFAULTS[f]]
            elif vals is None:
                complete = False
            else:
                values[f] = vals
        sizes, _, present = field_values("sizes", table, prefix)
        if not present:
            sizes = tuple(parse_sizes(DEFAULT_SIZES))
        elif sizes is None:
            complete = False
        excl, ok_ex = excludes(table, prefix)
        wheres, ok_wh = where_codes(table, prefix)
        if not (complete and ok_ex and ok_wh):
            continue
        configs, seen, total = [], set(), 0
        n_problems = len(probs.items)
        for combo in itertools.product(*(values[f] for f in GRID_FIELDS)):
            if len(probs.items) > n_problems:
                break   # a where expression failed: reported once, not per configuration
            total += 1
            kw = dict(zip(GRID_FIELDS, combo))
            alg: _Alg = kw.pop("algorithm")
            cfg = Config(sweep=name, group=gname, algorithm=alg.spec, label=alg.label,
                         sizes=sizes, **kw)
            env = _where_env(cfg, alg)
            keep = True
            for code, text, loc in wheres:
                if not _eval_where(code, text, env, loc, probs):
                    keep = False
                    break
            if keep and any(_excluded(ex, cfg, alg, env, probs) for ex in excl):
                keep = False
            if not keep:
                continue
            h = config_hash(cfg.canonical())
            if h in seen:
                continue
            seen.add(h)
            configs.append(replace(cfg, hash=h, key=config_key(cfg)))
        if len(probs.items) > n_problems:
            continue
        if not configs:
            loc = f"groups.{gname}" if groups_raw is not None else ""
            probs.add(loc, f"the grid is empty: all {total} configurations are removed by "
                           "exclude/where")
        plan.groups[gname] = configs
        plan.configs.extend(configs)
    if probs.items:
        raise SweepConfigError(str(path), probs.items)
    return plan


# ============================================================== running

@lru_cache(maxsize=8)
def _topology(spec: str):
    from .topology import parse_topology
    return parse_topology(spec)


def run_config(cfg: Config, threads: int | None = None):
    """Time one configuration: all its sizes from one :func:`flowemu.simulate`
    call (one profile). Returns the simulate rows (without sweep columns)."""
    from .api import simulate
    return simulate(_topology(cfg.topology), cfg.algorithm, list(cfg.sizes), ecmp=cfg.ecmp,
                    seed=cfg.seed, ranks=cfg.ranks, network=cfg.network(), threads=threads)


def run_chunk(configs: list[Config], threads: int | None = None):
    """Worker task: run configurations, never raise for one of them.
    ``threads`` is passed to the engine: pool workers use 1 (the pool already
    keeps every core busy), an in-process run the default (all cores).

    Returns ``(rows DataFrame or None, [error dict, ...])``; the rows carry
    the sweep columns (:data:`flowemu.results.SWEEP_COLUMNS`).
    """
    from .results import add_config_columns, error_row
    frames, done, errors = [], [], []
    for cfg in configs:
        try:
            frames.append(run_config(cfg, threads))
            done.append(cfg)
        except FlowEmuError as exc:
            errors.append(error_row(cfg, type(exc).__name__, str(exc), internal=False))
        except Exception as exc:  # noqa: BLE001 - a bug must not kill a long sweep
            tb = "".join(traceback.format_exception(exc, limit=-4))
            errors.append(error_row(cfg, type(exc).__name__, f"{exc}\n{tb}", internal=True))
    rows = add_config_columns(frames, done) if frames else None
    return rows, errors


def _chunks(configs: list[Config], workers: int, chunk_size: int | None) -> list[list[Config]]:
    """Batches of configurations. Big topologies first (they set the makespan);
    each batch costs about total / (4 · workers), at most ~100 small configs,
    so per-task overhead stays small and progress stays live."""
    if not configs:
        return []
    cost = {c.hash: 1.0 + _topo_info(c.topology).nodes / 128.0 for c in configs}
    order = sorted(configs, key=lambda c: -_topo_info(c.topology).nodes)
    if chunk_size:
        return [order[i:i + chunk_size] for i in range(0, len(order), chunk_size)]
    budget = min(max(sum(cost.values()) / (4 * workers), 1.0), 100.0)
    out, cur, acc = [], [], 0.0
    for c in order:
        if cur and acc + cost[c.hash] > budget:
            out.append(cur)
            cur, acc = [], 0.0
        cur.append(c)
        acc += cost[c.hash]
    if cur:
        out.append(cur)
    return out


def _worker_init(parent: int):
    """Workers leave Ctrl-C to the parent (which stops them) and die with it
    if it is killed (SIGKILL), instead of waiting forever for work."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)   # not the CLI's handler (fork inherits it)
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)   # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:   # the parent died before prctl took effect
        os._exit(1)


def default_jobs() -> int:
    """One worker process per available core."""
    from .engine import available_cores
    return available_cores()


# ------------------------------------------------------------ progress

def _fmt_eta(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "--"
    s = round(seconds)
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


class Progress:
    """Configurations done / total, rate and ETA on stderr: a redrawn bar on a
    terminal, a plain line every ``interval`` seconds otherwise."""

    def __init__(self, total: int, label: str, stream=None, enabled: bool = True,
                 interval: float = 10.0):
        self.total, self.label = total, label
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled and total > 0
        self.tty = self.enabled and hasattr(self.stream, "isatty") and self.stream.isatty()
        self.interval = 0.1 if self.tty else interval
        self.done = self.errors = 0
        self.start = time.monotonic()
        self._last = -math.inf
        if self.enabled and not self.tty:
            self._emit(f"{label}: {total} configurations to run")

    def _emit(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.write("\n" if not self.tty else "")
            self.stream.flush()
        except (OSError, ValueError):
            self.enabled = False

    def line(self) -> str:
        elapsed = time.monotonic() - self.start
        rate = self.done / elapsed if elapsed > 0 else 0.0
        eta = (self.total - self.done) / rate if rate > 0 else math.inf
        pct = 100.0 * self.done / self.total if self.total else 100.0
        err = f", {self.errors} errors" if self.errors else ""
        stats = (f"{self.done}/{self.total} {pct:3.0f}% {rate:.1f} cfg/s "
                 f"ETA {_fmt_eta(eta)}{err}")
        if not self.tty:
            return f"{self.label}: {stats}"
        width = 28
        fill = int(width * self.done / self.total) if self.total else width
        return f"\r{self.label} [{'#' * fill}{'.' * (width - fill)}] {stats}\x1b[K"

    def update(self, done: int = 0, errors: int = 0) -> None:
        self.done += done
        self.errors += errors
        now = time.monotonic()
        if self.enabled and (now - self._last >= self.interval or self.done == self.total):
            self._last = now
            self._emit(self.line())

    def close(self) -> None:
        if self.enabled and self.tty:
            self._emit(self.line() + "\n")
        elif self.enabled and self.done != self.total:
            self._emit(self.line())
        self.enabled = False   # closing twice prints once


# ------------------------------------------------------------ the sweep

@dataclass
class SweepSummary:
    """What a sweep did. ``os.fspath(summary)`` is the dataset path, so a
    summary can be passed to :func:`flowemu.load` directly."""

    path: Path
    name: str
    total: int           # configurations in the sweep file
    skipped: int         # already in the dataset (or recorded errors)
    computed: int        # run now, successfully
    failed: int          # run now, recorded in errors/
    internal: int        # of which unexpected exceptions (bugs)
    rows: int            # result rows written now
    seconds: float
    stale: int = 0       # configurations in the dataset that the file no longer lists

    def __fspath__(self) -> str:
        return str(self.path)

    def text(self) -> str:
        parts = [f"sweep {self.name}: {self.total} configurations"]
        detail = [f"{self.computed} computed ({self.rows} rows)"]
        if self.skipped:
            detail.append(f"{self.skipped} already done")
        if self.failed:
            detail.append(f"{self.failed} failed (see {self.path / 'errors'})")
        parts.append(", ".join(detail))
        out = f"{parts[0]}: {parts[1]} -> {self.path} in {self.seconds:.1f}s"
        if self.internal:
            out += (f"\n  {self.internal} of the failures are unexpected exceptions "
                    "(flowemu bugs; see the error column)")
        if self.stale:
            out += (f"\n  note: the dataset also holds {self.stale} configurations this file "
                    "no longer lists (from an earlier version of it)")
        return out


class _Lock:
    """An exclusive lock on a dataset (released by the OS even on SIGKILL)."""

    def __init__(self, directory: Path):
        self.path = directory / ".lock"
        self.fh = None

    def __enter__(self):
        self.fh = open(self.path, "a+")
        try:
            fcntl.flock(self.fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.fh.close()
            raise ConfigError(f"dataset {str(self.path.parent)!r} is in use by another "
                              "sweep; wait for it or choose another --out") from None
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.fh, fcntl.LOCK_UN)
        self.fh.close()


def _check_jobs(jobs, scheduler) -> None:
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise ConfigError(f"jobs: {jobs!r} is not allowed; expected an integer >= 1")
    if scheduler is not None and jobs is not None:
        raise ConfigError("jobs: give either jobs (local processes) or scheduler (a Dask "
                          "cluster), not both")
    if isinstance(scheduler, str) and "://" not in scheduler:
        raise ConfigError(f"scheduler: {scheduler!r} is not an address; expected e.g. "
                          "tcp://host:8786")


def _executor(jobs: int, scheduler):
    """``(executor, workers, close)`` for local processes or a Dask cluster."""
    if scheduler is not None:
        try:
            from distributed import Client
        except ImportError:
            raise ConfigError("scheduler: dask.distributed is not installed; "
                              "pip install 'dask[distributed]'") from None
        if isinstance(scheduler, str):
            try:
                client = Client(scheduler, timeout="20s")
            except (OSError, TimeoutError) as exc:
                raise ConfigError(f"scheduler: cannot connect to {scheduler!r}: {exc}") from None
            owned = True
        else:
            client, owned = scheduler, False   # a Client object from Python callers
        workers = max(1, sum(client.nthreads().values()))
        ex = client.get_executor()

        def close(cancel=False):
            ex.shutdown(wait=False)
            if owned:
                client.close()
        return ex, workers, close
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    ctx = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else None)
    ex = ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_worker_init,
                             initargs=(os.getpid(),))

    def close(cancel=False):
        if cancel:
            # the pool would finish the running chunks first; these are our
            # own workers, stop them now
            for proc in list(getattr(ex, "_processes", {}).values()):
                proc.terminate()
        ex.shutdown(wait=True, cancel_futures=cancel)
    return ex, jobs, close


def _run_local(chunks, on_result):
    for chunk in chunks:
        on_result(chunk, run_chunk(chunk))


def _run_executor(ex: Executor, workers: int, chunks, on_result):
    pending = list(reversed(chunks))
    inflight = {}
    limit = 2 * workers
    while pending or inflight:
        while pending and len(inflight) < limit:
            chunk = pending.pop()
            inflight[ex.submit(run_chunk, chunk, 1)] = chunk
        done, _ = wait(list(inflight), return_when=FIRST_COMPLETED)
        for fut in done:
            chunk = inflight.pop(fut)
            on_result(chunk, fut.result())


def sweep(config_path, out=None, *, jobs: int | None = None, scheduler=None,
          retry_errors: bool = False, progress: bool | None = None,
          chunk_size: int | None = None, stream=None) -> SweepSummary:
    """Run a sweep file into a parquet dataset; resume where it stopped.

    Parameters
    ----------
    config_path : path
        A sweep TOML file (see the module doc). It is validated completely
        before any work: every problem is reported in one ConfigError.
    out : path, optional
        Dataset directory (default ``results/<file stem>``).
    jobs : int, optional
        Local worker processes (default: every core). ``1`` runs in this
        process, without a pool.
    scheduler : str or distributed.Client, optional
        ``tcp://host:port`` of a Dask scheduler: the same chunks go to the
        cluster through ``Client(address).get_executor()``.
    retry_errors : bool
        Run again the configurations recorded in ``errors/``.
    progress : bool, optional
        Progress on stderr (default on).
    chunk_size : int, optional
        Configurations per task (and per part file); default: by cost.

    Returns
    -------
    SweepSummary
        Counts and the dataset path (``os.fspath(summary)``).
    """
    from .results import (
        ERRORS_DIR,
        clean_temp,
        error_hashes,
        result_hashes,
        write_errors,
        write_rows,
    )
    t0 = time.monotonic()
    _check_jobs(jobs, scheduler)
    if chunk_size is not None and (isinstance(chunk_size, bool) or not isinstance(chunk_size, int)
                                   or chunk_size < 1):
        raise ConfigError(f"chunk_size: {chunk_size!r} is not allowed; expected an integer >= 1")
    plan = load_sweep(config_path)
    out = Path(out) if out is not None else Path("results") / plan.name
    if out.exists() and not out.is_dir():
        raise ConfigError(f"out: {str(out)!r} exists and is not a directory")
    out.mkdir(parents=True, exist_ok=True)
    with _Lock(out):
        clean_temp(out)
        done = result_hashes(out)
        skip = set(done) if retry_errors else set(done) | error_hashes(out)
        wanted = {c.hash for c in plan.configs}
        todo = [c for c in plan.configs if c.hash not in skip]
        _save_config(plan, out)
        bar = Progress(len(todo), f"sweep {plan.name}", stream=stream,
                       enabled=progress is not False)
        summary = SweepSummary(out, plan.name, len(plan.configs), len(plan.configs) - len(todo),
                               0, 0, 0, 0, 0.0, len(set(done) - wanted))
        now = time.time_ns()   # part names sort in the order they were written
        run_id = (time.strftime("%Y%m%dT%H%M%S", time.gmtime(now // 10**9))
                  + f"{now % 10**9:09d}-{os.getpid()}")
        seq = itertools.count()

        def on_result(chunk, result):
            rows, errors = result
            n = next(seq)
            if rows is not None and len(rows):
                write_rows(out, rows, f"part-{run_id}-{n:05d}")
                summary.rows += len(rows)
            if errors:
                write_errors(out / ERRORS_DIR, errors, f"errors-{run_id}-{n:05d}")
                summary.failed += len(errors)
                summary.internal += sum(bool(e["internal"]) for e in errors)
            summary.computed += len(chunk) - len(errors)
            bar.update(len(chunk), len(errors))

        try:
            if scheduler is None:
                workers = 1 if jobs == 1 else (jobs or default_jobs())
                chunks = _chunks(todo, workers, chunk_size)
                if workers == 1 or len(chunks) <= 1:
                    ex = None   # in this process, no pool
                else:
                    ex, workers, close = _executor(min(workers, len(chunks)), None)
            elif todo:
                ex, workers, close = _executor(None, scheduler)
                chunks = _chunks(todo, workers, chunk_size)
            else:
                ex, chunks = None, []
            if ex is None:
                _run_local(chunks, on_result)
            else:
                try:
                    _run_executor(ex, workers, chunks, on_result)
                except BaseException:
                    close(cancel=True)
                    raise
                close()
        except KeyboardInterrupt:
            bar.close()
            if progress is not False:
                print(f"sweep {plan.name}: interrupted; {summary.computed + summary.skipped} of "
                      f"{summary.total} configurations are saved in {out}; run the same "
                      "command again to resume", file=stream or sys.stderr)
            raise
        finally:
            bar.close()
        summary.seconds = time.monotonic() - t0
    return summary


def _save_config(plan: SweepPlan, out: Path) -> None:
    """Keep the sweep file next to its results (``_config.toml``, atomic)."""
    from .results import atomic_write_bytes
    atomic_write_bytes(out / "_config.toml", plan.path.read_bytes())


def run_sweep(config_path, out=None, *, jobs: int | None = None, scheduler=None,
              retry_errors: bool = False, progress: bool | None = None) -> Path:
    """:func:`sweep`, returning the dataset path (for scripts and the demo)."""
    return sweep(config_path, out, jobs=jobs, scheduler=scheduler, retry_errors=retry_errors,
                 progress=progress).path


class _CallableModule(types.ModuleType):
    """``flowemu.sweep`` is both this module and the function :func:`sweep`."""

    def __call__(self, *args, **kwargs):
        return sweep(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
