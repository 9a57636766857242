"""Validation of sweep-file values: every problem is collected (with its
location as a TOML key path) and reported at once in a :class:`SweepConfigError`."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from functools import lru_cache

from ...algorithms import get_algorithm, parse_algorithm_spec
from ...algorithms.collectives import COLLECTIVES, get_collective
from ...core import checks
from ...core.errors import ConfigError, suggest
from ...core.network import TIME_FIELDS, Network
from ...core.placement import FORMS as PLACEMENT_FORMS
from ...core.placement import parse_placement
from ...core.presets import load_preset
from ...core.units import (
    RATE_FORMS,
    TIME_FORMS,
    bare_number,
    parse_rate,
    parse_sizes,
    parse_time,
    shown,
)
from ...engine.dataflow import SYNCS, check_sync
from ...models.genmodel import MODELS, check_model
from ...topology import parse_topology
from ...topology.base import ECMP_MODES, check_ecmp
from ...topology.graph import split_file_options
from ...whatif.background import generator_text
from ...whatif.faults import POLICIES
from ...whatif.stragglers import slow_text
from .config import background_file, canon_float, file_digest, graph_file, preset_file
from .paths import current


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


class Problems:
    def __init__(self):
        self.items: list[tuple[str, str]] = []

    def add(self, loc: str, msg: str) -> None:
        if (loc, msg) not in self.items:
            self.items.append((loc, msg))


def strip_field(msg: str, name: str) -> str:
    # parser messages start with "field: "; the location already names it
    for prefix in (f"{name}: ", "algorithm: ", f"{name} "):
        if msg.startswith(prefix):
            return msg[len(prefix):]
    return msg


def type_name(v) -> str:
    return {str: "a string", int: "an integer", float: "a number", bool: "a boolean",
            list: "an array", dict: "a table"}.get(type(v), type(v).__name__)


@dataclass(frozen=True)
class TopoInfo:
    spec: str
    nodes: int
    dims: tuple[int, ...]
    family: str
    modes: tuple[str, ...]    # the routing modes a run on the family takes (engine modes too)


def topo_info(spec: str) -> TopoInfo:
    """What a sweep needs to know of a topology, built once per spec (and
    graph file contents)."""
    path = graph_file(spec)
    return _topo_info_of(spec, file_digest(path) if path else "")


@lru_cache(maxsize=256)
def _topo_info_of(spec: str, digest: str) -> TopoInfo:
    topo = parse_topology(spec)
    dims = getattr(topo, "grid", None) or getattr(topo, "dims", None) or ()
    return TopoInfo(topo.spec, int(topo.num_endpoints), tuple(int(d) for d in dims),
                    topo.spec.split(":", 1)[0], tuple(topo.engine_modes))


def build_topology(spec: str):
    """The topology of a spec, built once per process (a graph file's
    contents are part of the key, so an edited file is read again)."""
    path = graph_file(spec)
    return _built(spec, file_digest(path) if path else "")


@lru_cache(maxsize=8)
def _built(spec: str, digest: str):
    return parse_topology(spec)


@dataclass(frozen=True)
class Alg:
    name: str
    options: tuple[tuple[str, object], ...]   # every option, sorted
    spec: str                                 # canonical
    label: str
    traffic: str = ""   # a traffic file timed in place of an algorithm (sweep/traffic.py)
    jobs: tuple = ()    # a job set timed in place of an algorithm (sweep/jobs.py)
    collective: str = "allreduce"   # the collective it is an algorithm of


def resolve_algorithm(name: str, raw_opts: dict, collective: str = "allreduce") -> Alg:
    spec = get_algorithm(name, collective)
    opts = spec.parse_options(raw_opts)
    items = tuple(sorted(opts.items()))
    defaults = {p.name: p.default for p in spec.params}
    text = name + (":" + ",".join(f"{k}={v}" for k, v in items) if items else "")
    diff = [(k, v) for k, v in items if v != defaults.get(k)]
    label = name + (":" + ",".join(f"{k}={v}" for k, v in diff) if diff else "")
    return Alg(name, items, text, label, collective=collective)


def _parse_algorithm_value(raw, loc: str, probs: Problems,
                           collective: str = "allreduce") -> list[Alg]:
    """A string spec or a table ``{name = ..., option = value | [values]}``
    of an algorithm of ``collective``."""
    try:
        if isinstance(raw, str):
            name, opts = parse_algorithm_spec(raw)
            return [resolve_algorithm(name, opts, collective)]
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
                out.append(resolve_algorithm(name, dict(zip(keys, combo)), collective))
            return out
        probs.add(loc, f"expected an algorithm spec string such as \"recdoub:variant=auto\" "
                       f"or a table {{ name = ..., option = ... }}, got {type_name(raw)}")
    except ConfigError as exc:
        probs.add(loc, strip_field(str(exc), "algorithm"))
    return []


def _parse_scalar(name: str, raw, loc: str):
    """Canonical value of one grid-field element (at ``loc``), or raise
    ConfigError. A file it names is read relative to the sweep file
    (:mod:`.paths`)."""
    if name == "topology":
        if not isinstance(raw, str):
            raise ConfigError(f"expected a topology spec string such as \"torus:8x8\", got "
                              f"{type_name(raw)}")
        return topo_info(_graph_beside(raw, loc)).spec
    if name == "ranks":
        if raw == "all":
            return None
        if isinstance(raw, bool) or not isinstance(raw, int) or raw < 2:
            raise ConfigError(f"{raw!r} is not allowed; expected an integer >= 2 or \"all\"")
        return int(raw)
    if name == "bandwidth":
        if isinstance(raw, (list, dict)):
            raise ConfigError(f"expected a rate such as \"400Gb/s\", got {type_name(raw)}")
        if bare_number(raw):
            raise ConfigError(f"{shown(raw)} has no unit; write a rate with its unit: "
                              f"{RATE_FORMS}")
        return canon_float(parse_rate(raw, name))
    if name in TIME_FIELDS:
        if isinstance(raw, (list, dict)):
            raise ConfigError(f"expected a time such as \"100ns\", got {type_name(raw)}")
        if bare_number(raw) and float(raw) != 0:
            raise ConfigError(f"{shown(raw)} has no unit; write a time with its unit: "
                              f"{TIME_FORMS}")
        return canon_float(parse_time(raw, name))
    if name == "incast_threshold":
        if isinstance(raw, (list, dict)):
            raise ConfigError(f"expected a flow count or \"inf\", got {type_name(raw)}")
        return canon_float(Network(incast_threshold=raw).incast_threshold)
    if name == "network":
        if not isinstance(raw, str):
            raise ConfigError(f"expected a network preset name or a .toml file, got "
                              f"{type_name(raw)}")
        text = raw.strip()
        if preset_file(text):
            try:
                text = current().path(text, loc, required=False)
            except ConfigError as exc:
                raise ConfigError(f"{exc}; expected a preset file with a [network] "
                                  "table") from None
        return load_preset(text).name
    if name == "ecmp":
        if not isinstance(raw, str):
            modes = ", ".join(f'"{m}"' for m in ECMP_MODES)
            raise ConfigError(f"expected one of {modes}, got {type_name(raw)}")
        check_ecmp(raw)
        return raw
    if name == "seed":
        return checks.seed(raw)
    if name == "placement":
        return parse_placement(placement_beside(raw, loc)).text
    if name == "model":
        return _one_of(raw, MODELS, check_model)
    if name == "sync":
        return _one_of(raw, SYNCS, check_sync)
    if name == "collective":
        return _one_of(raw, tuple(COLLECTIVES), lambda v: get_collective(v).name)
    if name in WHATIF_SCALARS:
        return parse_whatif(name, raw, loc)
    raise AssertionError(name)


def _graph_beside(spec: str, loc: str) -> str:
    """A ``graph:FILE[,options]`` spec with its file read relative to the
    sweep file (:mod:`.paths`); any other spec as it is."""
    family, colon, params = spec.strip().partition(":")
    if family.strip() != "graph" or not colon:
        return spec
    path, options = split_file_options(params)
    if not path.strip():
        return spec    # (parse_topology says a file is missing)
    try:
        path = current().path(path.strip(), loc)
    except ConfigError as exc:
        raise ConfigError(f"{spec.strip()!r}: graph file {exc}") from None
    return "graph:" + ",".join([path, *options])


def placement_beside(raw, loc: str):
    """A placement with its file read relative to the sweep file
    (:mod:`.paths`); ``linear``, ``random:SEED`` or another value as it is."""
    if not isinstance(raw, str):
        return raw
    text = raw.strip()
    path = text[len("file:"):].strip() if text.startswith("file:") else text
    if not path or text in ("linear", "random") or text.startswith("random:"):
        return raw
    try:
        return current().path(path, loc)
    except ConfigError as exc:
        raise ConfigError(f"placement {exc}; expected {PLACEMENT_FORMS}") from None


def _one_of(raw, allowed: tuple, check) -> str:
    """A text field with a fixed set of values, checked by ``check``."""
    if not isinstance(raw, str):
        raise ConfigError(f"expected one of {', '.join(map(repr, allowed))}, got "
                          f"{type_name(raw)}")
    try:
        return check(raw)
    except ConfigError:
        raise ConfigError(f"{raw!r} is not allowed; expected one of "
                          f"{', '.join(map(repr, allowed))}") from None


#: the what-if fields :func:`parse_whatif` reads
WHATIF_SCALARS = ("fail", "degrade", "fail_policy", "failures", "failure_seed", "slow",
                  "background")


def parse_whatif(name: str, raw, loc: str = ""):
    """One element of a what-if field (at ``loc``): its text (selectors
    joined by ';', spaces around them dropped; "" for none; a background
    file read relative to the sweep file), the policy, or the integer.
    Checked against the topology and ranks once each configuration is known
    (:func:`flowemu.study.sweep.checks.canonical_whatifs`)."""
    if name in ("failures", "failure_seed"):
        return checks.integer(name, raw, lo=0, hi=checks.MAX_SEED if name == "failure_seed"
                              else None)
    if not isinstance(raw, str):
        expect = {"fail": "a selector string such as \"random:4:0\" (several joined by ';'; "
                          "\"\" for none)",
                  "degrade": "SELECTOR=F[:lat=M] such as \"spine:0=0.5\" (several joined by "
                             "';'; \"\" for none)",
                  "fail_policy": "\"strict\" or \"reroute\"",
                  "slow": "RANKS=FACTOR[:compute|:network] such as \"3=0.5\" (\"\" for none)",
                  "background": "a generator such as \"perm:0.5\" or a traffic file (\"\" "
                                "for none)"}[name]
        raise ConfigError(f"expected {expect}, got {type_name(raw)}")
    if name == "fail_policy":
        if raw.strip() not in POLICIES:
            raise ConfigError(f"{raw!r} is not allowed; expected "
                              f"{' or '.join(map(repr, POLICIES))}{suggest(raw, POLICIES)}")
        return raw.strip()
    if name in ("fail", "degrade"):
        return ";".join(part.strip() for part in raw.split(";") if part.strip())
    if name == "background" and background_file(raw.strip()):
        # (a missing file is reported with the configuration's other what-ifs)
        return current().path(raw.strip(), loc or name, required=False, checked_later=True)
    if name == "background":   # perm:.5 and perm:0.50:0 are perm:0.5
        return generator_text(raw)
    if name == "slow":   # 3=0.50 and 3-3=0.5 are 3=0.5
        return slow_text(raw)
    return raw.strip()


def parse_field(name: str, raw, loc: str, probs: Problems,
                collective: str = "allreduce") -> list | None:
    """Canonical values of a grid field (a scalar is a one-element list);
    None when any element is bad (the problems are recorded). Algorithms
    are looked up among ``collective``'s."""
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
            vals = _parse_algorithm_value(item, iloc, probs, collective)
            ok = ok and bool(vals)
            out.extend(vals)
            continue
        try:
            out.append(_parse_scalar(name, item, iloc))
        except ConfigError as exc:
            probs.add(iloc, strip_field(str(exc), name) + _no_range(name, item))
            ok = False
    if not ok:
        return None
    uniq = []
    for v in out:  # keep file order, drop duplicates (e.g. "ring" and "ring:ports=1")
        if v not in uniq:
            uniq.append(v)
    return uniq


#: an integer field's value written as a range ("0..19", "0-19")
_INT_RANGE = re.compile(r"\s*(\d+)\s*(?:\.\.|-|:)\s*(\d+)\s*")


def _no_range(name: str, item) -> str:
    """For an integer field given a range string: how to write its values
    (sizes have ranges; integers do not)."""
    m = _INT_RANGE.fullmatch(item) if isinstance(item, str) and name in (
        "seed", "failures", "failure_seed", "ranks") else None
    if m is None:
        return ""
    a, b = int(m[1]), int(m[2])
    values = ", ".join(map(str, range(a, b + 1))) if 0 <= b - a < 4 else \
        f"{a}, {a + 1}, ..., {b}"
    return f"; there is no range syntax for integers: list them, {name} = [{values}]"


def parse_sizes_field(raw, loc: str, probs: Problems) -> tuple[int, ...] | None:
    """Sizes of a range string, a comma list or an array; every bad element
    is reported (with its index), not just the first."""
    if isinstance(raw, (bool, dict)):
        probs.add(loc, f"expected a range string such as \"32B..512MiB\" or an array of "
                       f"sizes, got {type_name(raw)}")
        return None
    if isinstance(raw, list) and any(isinstance(x, (list, dict, bool)) for x in raw):
        probs.add(loc, "expected an array of sizes such as [\"1KiB\", \"1MiB\"] or [1024]")
        return None
    if isinstance(raw, str) and ".." in raw:
        items = [(loc, raw)]   # a range is one value
    elif isinstance(raw, str):
        parts = [x.strip() for x in raw.split(",")]
        items = [(f"{loc} item {i}" if len(parts) > 1 else loc, x) for i, x in enumerate(parts)
                 if x or len(parts) == 1]
    elif isinstance(raw, list):
        items = [(f"{loc}[{i}]", x) for i, x in enumerate(raw)]
    else:
        items = [(loc, raw)]
    out, ok = set(), True
    for iloc, item in items:
        try:
            out.update(parse_sizes(item if isinstance(item, str) else [item], "sizes"))
        except ConfigError as exc:
            probs.add(iloc, strip_field(str(exc), "sizes"))
            ok = False
    if ok and not out:
        probs.add(loc, "no sizes given; expected e.g. \"32B..512MiB\" or [\"1KiB\", \"1MiB\"]")
    return tuple(sorted(out)) if ok and out else None
