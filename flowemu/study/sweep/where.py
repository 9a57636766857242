"""``where`` expressions and ``[[exclude]]`` entries of a sweep file: which
configurations of a grid to keep; and the same expressions over a dataset's
rows (:func:`where_rows`, behind ``--where`` of ``flowemu compare`` and
``flowemu plot``)."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...algorithms import parse_algorithm_spec
from ...core.errors import ConfigError, suggest
from ...core.units import parse_rate, parse_sizes, parse_time
from ...topology import canonical_spec
from .config import GRID_FIELDS, Config
from .dataset import NETWORK_COLUMNS
from .fields import (
    Alg,
    Problems,
    parse_field,
    resolve_algorithm,
    strip_field,
    topo_info,
    type_name,
)
from .paths import current

_WHERE_FUNCS = {
    "rate": lambda s: parse_rate(s, "rate()"), "time": lambda s: parse_time(s, "time()"),
    "size": lambda s: parse_sizes([s], "size()")[0], "len": len, "min": min, "max": max,
    "abs": abs,
}
#: how a function name used as a value is meant (the result columns hold
#: the values: size_bytes, time_s)
_FUNCTION_USE = {
    "size": ": size('1MiB') is 1 MiB in bytes; the vector size column is size_bytes "
            "(size_bytes == size('1MiB'))",
    "time": ": time('100us') is 100 µs in seconds; the time column is time_s "
            "(time_s < time('100us'))",
    "rate": ": rate('100Gb/s') is 100 Gb/s in bytes/s (bandwidth == rate('100Gb/s'))",
}
#: an assignment's ``=`` where a comparison was meant
_SINGLE_EQUALS = re.compile(r"(?<![=<>!])=(?!=)")
_WHERE_NAMES = ("group", "topology", "family", "nodes", "dims", "ndims", "algorithm",
                "algorithm_spec", "label", "options", *GRID_FIELDS[2:])
_WHERE_NODES = (ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub,
                ast.UAdd, ast.Compare, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE,
                ast.In, ast.NotIn, ast.BinOp, ast.Add, ast.Sub, ast.Mult, ast.Div,
                ast.FloorDiv, ast.Mod, ast.Pow, ast.Name, ast.Load, ast.Constant, ast.List,
                ast.Tuple, ast.Call, ast.Subscript, ast.IfExp)


def compile_where(text, loc: str, probs: Problems, names=_WHERE_NAMES):
    if not isinstance(text, str):
        probs.add(loc, f"expected an expression string such as \"nodes <= 64\", got "
                       f"{type_name(text)}")
        return None
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        hint = " (compare with ==, not =)" if _SINGLE_EQUALS.search(text) else ""
        probs.add(loc, f"cannot parse {text!r}: {exc.msg}{hint}")
        return None
    called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in _WHERE_FUNCS and id(node) not in called:
            probs.add(loc, f"{text!r}: {node.id} is a function, not a value"
                           f"{_FUNCTION_USE.get(node.id, '')}")
            return None
        if not isinstance(node, _WHERE_NODES):
            probs.add(loc, f"{text!r}: {type(node).__name__} is not allowed in a where "
                           "expression (use comparisons, and/or/not, arithmetic, in)")
            return None
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name)
                                               and node.func.id in _WHERE_FUNCS):
            probs.add(loc, f"{text!r}: only these functions may be called: "
                           f"{', '.join(sorted(_WHERE_FUNCS))}")
            return None
        if isinstance(node, ast.Name) and node.id not in names \
                and node.id not in _WHERE_FUNCS:
            probs.add(loc, f"{text!r}: unknown name {node.id!r}{_suggest(node.id, names)}"
                           f"; known: {', '.join(names)}")
            return None
    return compile(tree, f"<where {loc}>", "eval")


#: the unit a result column's name ends with (size_bytes, time_s, goodput_Bps)
_UNIT_SUFFIX = re.compile(r"_(bytes|s|Bps|s_per_B)$")


def _suggest(word: str, names) -> str:
    """:func:`suggest` among ``names`` and the names of the columns with a
    unit without it (``sizee`` -> ``size_bytes``, by ``size``)."""
    names = list(names)
    stems = {_UNIT_SUFFIX.sub("", n): n for n in names if _UNIT_SUFFIX.search(n)}
    hint = suggest(word, names + [stem for stem in stems if stem not in names])
    for stem, column in stems.items():
        if hint == f" (did you mean {stem!r}?)" and stem not in names:
            return f" (did you mean {column!r}?)"
    return hint


def where_env(cfg: Config, alg: Alg, keys: OptionKeys | None = None) -> dict:
    """The names a where expression sees for configuration ``cfg`` of
    algorithm ``alg``; ``keys`` tallies the options read (a new tally when
    None)."""
    info = topo_info(cfg.topology)
    env = {f: getattr(cfg, f) for f in GRID_FIELDS[2:] if f != "network"}
    env["network"] = cfg.network_preset
    env.update(group=cfg.group, topology=cfg.topology, family=info.family, nodes=info.nodes,
               dims=info.dims, ndims=len(info.dims), algorithm=alg.name,
               algorithm_spec=alg.spec, label=alg.label, options=dict(alg.options))
    env["ranks"] = cfg.ranks if cfg.ranks is not None else info.nodes
    env["collective"] = cfg.collective
    # a file as the sweep file names it, from any directory ("placement ==
    # 'p.txt'" held only where the sweep ran beside its file)
    env = current().as_written(env)
    env["options"] = RowOptions(env["options"], OptionKeys() if keys is None else keys)
    # any spelling of the topology (the configuration holds the canonical spec:
    # 'tree:4x4,uplinks=2:1' is 'tree:4x4,uplinks=2:'), as a dataset's where reads it
    env["topology"] = _Spec(env["topology"])
    return env


def eval_where(code, text: str, env: dict, loc: str, probs: Problems) -> bool | None:
    try:
        return bool(eval(code, {"__builtins__": {}, **_WHERE_FUNCS}, env))
    except Exception as exc:  # noqa: BLE001 - a user expression failing is a config problem
        probs.add(loc, f"{text!r} fails for {env['topology']} {env['algorithm_spec']}: "
                       f"{type(exc).__name__}: {exc}")
        return None


# ------------------------------------------------------------ dataset rows

#: names a dataset answers from its topology column, as a sweep does
_TOPOLOGY_NAMES = ("family", "dims", "ndims")
#: sweep-file names no dataset column holds, and what to write instead
_NOT_IN_DATASETS = {
    "network": "a preset's values are in bandwidth, link_latency, hop_latency, alpha, ...",
    "failures": "the cables drawn are in fail (e.g. fail == 'random:4:0')",
    "failure_seed": "the cables drawn are in fail (e.g. fail == 'random:4:0')",
}


class OptionKeys:
    """The option names the rows of one where expression had, and those it
    read that a row lacked (:class:`RowOptions`)."""

    def __init__(self):
        self.seen: set = set()
        self.missed: dict = {}   # (ordered)

    def unknown(self) -> list:
        """Names read that no row has (a misspelled option)."""
        return [k for k in self.missed if k not in self.seen]

    def problem(self, text: str) -> str:
        """The refusal of :meth:`unknown`'s names, for expression ``text``."""
        unknown = self.unknown()
        bad = ", ".join(repr(k) for k in unknown)
        names = sorted(map(str, self.seen))
        hint = suggest(str(unknown[0]), names)
        return (f"{text!r}: no algorithm has the option {bad}{hint}; their options: "
                f"{', '.join(names) or 'none'}")


class RowOptions(dict):
    """A row's algorithm options in a where expression (a table:
    ``options['variant'] == 'bandwidth'``). An option the row's algorithm
    does not have reads as None, so one expression serves a set of
    algorithms (ring has no variant: ``options['variant'] == 'latency'`` is
    False there, not a KeyError); ``keys`` tallies the names, so that one no
    algorithm has is refused as a misspelling."""

    __hash__ = None

    def __init__(self, items, keys: OptionKeys):
        super().__init__(items)
        keys.seen.update(self)
        self._keys = keys

    def __missing__(self, key):   # (None: the row's algorithm has no such option)
        self._keys.missed[key] = None


class _Options(RowOptions):
    """A dataset row's options as a sweep file's expression sees them, which
    also equal the dataset's text of them (``options == 'variant=bandwidth'``)."""

    def __init__(self, text: str, keys: OptionKeys):
        items = (item.partition("=") for item in text.split(",") if item)
        super().__init__(((k, _option_value(v)) for k, _, v in items), keys)
        self.text = text

    def __eq__(self, other):
        return self.text == other if isinstance(other, str) else dict.__eq__(self, other)

    def __ne__(self, other):
        return not self == other


class _Spec(str):
    """A row's topology spec as an expression sees it: equal to any spelling
    of the same topology (``topology == 'hx2mesh:4x4'`` on a row of
    ``hammingmesh:2x2,4x4``), compared by the spec the topology gives."""

    __hash__ = str.__hash__

    def __eq__(self, other):
        if not isinstance(other, str):
            return NotImplemented
        return str.__eq__(self, other) or str.__eq__(self, canonical_spec(other))

    def __ne__(self, other):
        same = self.__eq__(other)
        return same if same is NotImplemented else not same


def _option_value(text: str):
    try:   # numbers and booleans as the algorithm took them, anything else as text
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _row_value(name: str, value, keys: OptionKeys):
    value = value.item() if isinstance(value, np.generic) else value
    if name == "options":
        return _Options(value if isinstance(value, str) else "", keys)
    if name == "topology" and isinstance(value, str):
        return _Spec(value)
    if name in _TOPOLOGY_NAMES:
        try:
            info = topo_info(value)
        except ConfigError as exc:
            raise ConfigError(f"where: {name} of {value!r}: {exc}") from None
        return {"family": info.family, "dims": info.dims, "ndims": len(info.dims)}[name]
    return value


def where_rows(df: pd.DataFrame, text: str) -> pd.Series:
    """Which rows of ``df`` a where expression selects, read as a sweep file
    reads it: its names (``bandwidth``, ``link_latency``, ..., ``family``,
    ``dims``, ``options['variant']``) stand for the row's columns
    (``bandwidth_Bps``, ``link_latency_s``, ...), ``rate()``, ``time()`` and
    ``size()`` give values in those columns' units (B/s, s, B), and every
    column may also be named as it is (``bandwidth_Bps == 5e10``).

    Returns a boolean Series on ``df``'s index. Raises ``ConfigError``
    naming the expression and what is allowed when it cannot be read or
    applied. The expression is evaluated once per distinct combination of
    the columns it names, so a filter over configurations costs what the
    configurations do, not the rows."""
    columns = [c for c in df.columns if isinstance(c, str) and c.isidentifier()]
    names = tuple(dict.fromkeys([*_WHERE_NAMES, *columns]))
    probs = Problems()
    code = compile_where(text, "where", probs, names)
    if code is None:
        raise ConfigError("; ".join(f"{loc}: {msg}" for loc, msg in probs.items))
    used = sorted({node.id for node in ast.walk(ast.parse(text.strip(), mode="eval"))
                   if isinstance(node, ast.Name)} - set(_WHERE_FUNCS))
    source = {}   # name -> the column it reads
    for name in used:
        if name in df.columns:
            source[name] = name
        elif NETWORK_COLUMNS.get(name) in df.columns:
            source[name] = NETWORK_COLUMNS[name]
        elif name in _TOPOLOGY_NAMES and "topology" in df.columns:
            source[name] = "topology"
        else:
            why = _NOT_IN_DATASETS.get(name, "the data has no such column")
            raise ConfigError(f"where: {text!r}: {name!r} is not in the results ({why}); "
                              f"columns: {', '.join(columns)}")
    cols = sorted(set(source.values()))
    if cols and len(df):
        codes = df.groupby(cols, dropna=False, sort=False).ngroup().to_numpy()
        _, first = np.unique(codes, return_index=True)
        reps = df[cols].iloc[first].to_dict("records")
    else:
        codes, reps = np.zeros(len(df), dtype=np.int64), [{}]
    matched = np.empty(len(reps), dtype=bool)
    keys = OptionKeys()
    for i, row in enumerate(reps):
        env = {name: _row_value(name, row[col], keys) for name, col in source.items()}
        try:
            matched[i] = bool(eval(code, {"__builtins__": {}, **_WHERE_FUNCS}, env))
        except Exception as exc:  # noqa: BLE001 - a user expression failing is a config problem
            at = ", ".join(f"{k}={v!r}" for k, v in row.items())
            raise ConfigError(f"where: {text!r} fails at {at}: {type(exc).__name__}: "
                              f"{exc}") from None
    if keys.unknown():
        raise ConfigError(f"where: {keys.problem(text)}")
    return pd.Series(matched[codes] if len(df) else np.zeros(0, dtype=bool), index=df.index)


#: how a where expression writes a rate and a time (the unit of the network
#: column a name reads, by its suffix in NETWORK_COLUMNS)
_WITH_UNIT = {"_Bps": ("B/s", "rate('100Gb/s')"), "_s": ("s", "time('100ns')")}


def nothing_matched(df: pd.DataFrame, text: str) -> str:
    """Why a filter may have selected nothing of ``df``: :func:`unit_hint`,
    and each text it compares a column with that no row holds, with the
    values the column holds (``family == 'tours'``: ``'tours' is no family
    of the data; family: fattree, torus (did you mean 'torus'?)``)."""
    hints = [h for h in (unit_hint(text).strip().removeprefix("(").removesuffix(")"),) if h]
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError:
        tree = None
    for node in (ast.walk(tree) if tree is not None else ()):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        names = [n.id for n in sides if isinstance(n, ast.Name)]
        texts = [n.value for n in sides if isinstance(n, ast.Constant)
                 and isinstance(n.value, str)]
        texts += [e.value for n in sides if isinstance(n, (ast.List, ast.Tuple, ast.Set))
                  for e in n.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        for name in names[:1]:
            held = _held_values(df, name)
            if held is None:
                continue
            for value in texts:
                if value in held or (name == "topology" and canonical_spec(value) in held):
                    continue
                shown = ", ".join(sorted(held)[:12]) + (", ..." if len(held) > 12 else "")
                hints.append(f"{value!r} is no {name} of the data; {name}: {shown}"
                             f"{suggest(value, sorted(held))}")
    return f" ({'; '.join(hints)})" if hints else ""


def _held_values(df: pd.DataFrame, name: str) -> set[str] | None:
    """The texts a where name reads in ``df``'s rows, or None when it reads
    no text column (or one with too many values to list)."""
    if name in ("family",) and "topology" in df.columns:
        specs = df["topology"].dropna().astype(str).unique()
        return {spec.split(":", 1)[0] for spec in specs}
    if name not in df.columns or not (pd.api.types.is_object_dtype(df[name])
                                      or pd.api.types.is_string_dtype(df[name])):
        return None
    values = df[name].dropna()
    values = values[values.map(lambda v: isinstance(v, str))].unique()
    return set(values) if 0 < len(values) <= 200 else None


def unit_hint(text: str) -> str:
    """For a filter that selected nothing: a hint when it compares a rate or
    a time with a bare number (``bandwidth == 100`` reads 100 B/s), else ""."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError:
        return ""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        units = [(n.id, _WITH_UNIT[suffix]) for n in sides if isinstance(n, ast.Name)
                 for suffix in _WITH_UNIT if NETWORK_COLUMNS.get(n.id, "").endswith(suffix)]
        bare = any(isinstance(n, ast.Constant) and isinstance(n.value, (int, float))
                   and not isinstance(n.value, bool) and n.value != 0 for n in sides)
        text_value = next((n.value for n in sides if isinstance(n, ast.Constant)
                           and isinstance(n.value, str)), None)
        if units and bare:
            name, (unit, helper) = units[0]
            return (f" ({name} is in {unit}: a bare number is read as {unit}; write "
                    f"{name} == {helper})")
        if units and text_value is not None:   # ('400Gb/s' is a text, never a rate's value)
            name, (unit, helper) = units[0]
            call = helper.split("(", 1)[0]
            return (f" ({name} is a number in {unit}, never equal to the text "
                    f"{text_value!r}; write {name} == {call}({text_value!r}))")
    return ""


# ------------------------------------------------------------ exclude entries

@dataclass
class Exclude:
    loc: str
    match: dict          # field -> list of canonical values (algorithm: (name, opts) pairs)
    where: object = None
    where_text: str = ""


def parse_exclude(entry, loc: str, probs: Problems) -> Exclude | None:
    if not isinstance(entry, dict):
        probs.add(loc, f"expected a table of field = value(s), got {type_name(entry)}")
        return None
    if not entry:
        probs.add(loc, "empty exclude entry; it would exclude everything")
        return None
    ex, ok = Exclude(loc, {}), True
    for k, raw in entry.items():
        kloc = f"{loc}.{k}"
        if k == "where":
            ex.where = compile_where(raw, kloc, probs)
            ex.where_text = raw if isinstance(raw, str) else ""
            ok = ok and ex.where is not None
        elif k == "sizes":
            probs.add(kloc, "sizes are not a grid dimension and cannot be excluded; "
                            "set sizes per group instead")
            ok = False
        elif k not in GRID_FIELDS:
            probs.add(kloc, f"unknown key {k!r}{suggest(k, GRID_FIELDS + ('where',))}; "
                            f"allowed: {', '.join(GRID_FIELDS + ('where',))}")
            ok = False
        elif k == "algorithm":
            vals = []
            for i, item in enumerate(raw if isinstance(raw, list) else [raw]):
                iloc = f"{kloc}[{i}]" if isinstance(raw, list) else kloc
                if not isinstance(item, str):
                    probs.add(iloc, f"expected \"NAME[:key=val,...]\", got {type_name(item)}")
                    ok = False
                    continue
                try:
                    name, opts = parse_algorithm_spec(item)
                    parsed = dict(resolve_algorithm(name, opts).options)
                    vals.append((name, {o: parsed[o] for o in opts}))
                except ConfigError as exc:
                    probs.add(iloc, strip_field(str(exc), "algorithm"))
                    ok = False
            ex.match[k] = vals
        else:
            vals = parse_field(k, raw, kloc, probs)
            if vals is None:
                ok = False
            else:
                ex.match[k] = vals
    return ex if ok else None


def excluded(ex: Exclude, cfg: Config, alg: Alg, env: dict, probs: Problems) -> bool:
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
        elif getattr(cfg, "network_preset" if k == "network" else k) not in vals:
            return False
    if ex.where is not None:
        return bool(eval_where(ex.where, ex.where_text, env, f"{ex.loc}.where", probs))
    return True
