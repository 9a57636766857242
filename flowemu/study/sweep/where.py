"""``where`` expressions and ``[[exclude]]`` entries of a sweep file: which
configurations of a grid to keep."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ...algorithms import parse_algorithm_spec
from ...core.errors import ConfigError
from ...core.units import parse_rate, parse_sizes, parse_time
from .config import GRID_FIELDS, Config
from .fields import (
    Alg,
    Problems,
    parse_field,
    resolve_algorithm,
    strip_field,
    suggest,
    topo_info,
    type_name,
)

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


def compile_where(text, loc: str, probs: Problems):
    if not isinstance(text, str):
        probs.add(loc, f"expected an expression string such as \"nodes <= 64\", got "
                       f"{type_name(text)}")
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
            probs.add(loc, f"{text!r}: unknown name {node.id!r}{suggest(node.id, _WHERE_NAMES)}"
                           f"; known: {', '.join(_WHERE_NAMES)}")
            return None
    return compile(tree, f"<where {loc}>", "eval")


def where_env(cfg: Config, alg: Alg) -> dict:
    info = topo_info(cfg.topology)
    env = {f: getattr(cfg, f) for f in GRID_FIELDS[2:] if f != "network"}
    env["network"] = cfg.network_preset
    env.update(group=cfg.group, topology=cfg.topology, family=info.family, nodes=info.nodes,
               dims=info.dims, ndims=len(info.dims), algorithm=alg.name,
               algorithm_spec=alg.spec, label=alg.label, options=dict(alg.options))
    env["ranks"] = cfg.ranks if cfg.ranks is not None else info.nodes
    return env


def eval_where(code, text: str, env: dict, loc: str, probs: Problems) -> bool | None:
    try:
        return bool(eval(code, {"__builtins__": {}, **_WHERE_FUNCS}, env))
    except Exception as exc:  # noqa: BLE001 - a user expression failing is a config problem
        probs.add(loc, f"{text!r} fails for {env['topology']} {env['algorithm_spec']}: "
                       f"{type(exc).__name__}: {exc}")
        return None


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
