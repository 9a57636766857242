"""A sweep file read, validated and expanded into its configurations."""

from __future__ import annotations

import itertools
import json
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

from ...core import checks
from ...core.errors import ConfigError, suggest
from ...core.network import si_values
from ...core.presets import load_preset
from ...core.units import parse_sizes
from .checks import canonical_whatifs, costless_slow, fits, priceable, runs_on, simulable
from .config import (
    DEFAULT_GROUP,
    DEFAULT_SIZES,
    DEFAULTS,
    GRID_FIELDS,
    GROUP_KEYS,
    NETWORK_FIELDS,
    REQUIRED,
    TOP_KEYS,
    WHATIF_FIELDS,
    Config,
    canon_float,
    config_hash,
    config_key,
)
from .fields import (
    Alg,
    Problems,
    SweepConfigError,
    parse_field,
    parse_sizes_field,
    parse_whatif,
    topo_info,
    type_name,
)
from .jobs import check_jobs_config, parse_jobs_field
from .paths import current, reading
from .traffic import check_traffic_config, parse_traffic_field
from .where import OptionKeys, compile_where, eval_where, excluded, parse_exclude, where_env


@dataclass
class SweepPlan:
    """A validated sweep file: its name, groups and configurations (file
    order), and ``notes``: one line for each file it names that was found in
    the current directory, not beside it (:mod:`.paths`)."""

    name: str
    path: Path
    description: str
    groups: dict[str, list[Config]]
    configs: list[Config] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _read_toml(path: Path) -> dict:
    if path.is_dir():
        why = "is a directory; expected a sweep file such as configs/smoke.toml"
        raise SweepConfigError(str(path), [("", why)])
    if not path.is_file():
        raise SweepConfigError(str(path), [("", "file not found")])
    try:
        # (utf-8-sig: a byte-order mark, as some editors write, is not TOML)
        return tomllib.loads(path.read_bytes().decode("utf-8-sig"))
    except tomllib.TOMLDecodeError as exc:
        raise SweepConfigError(str(path), [("", f"not valid TOML: {exc}")]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SweepConfigError(str(path), [("", f"cannot read: {exc}")]) from None


def _check_keys(table: dict, allowed, prefix: str, probs: Problems) -> None:
    for k in table:
        if k not in allowed:
            loc = f"{prefix}{k}"
            probs.add(loc, f"unknown key {k!r}{suggest(k, allowed)}; allowed: "
                           f"{', '.join(allowed)}")


def load_sweep(path) -> SweepPlan:
    """Read and validate a sweep file and expand its grids.

    The files it names are read relative to its directory (:mod:`.paths`).

    Raises
    ------
    SweepConfigError
        (a :class:`~flowemu.core.errors.ConfigError`) listing every problem with
        its location (file, ``groups.NAME.key[index]``), before any work.
    """
    path = checks.path("config_path", path, "a sweep file (.toml)")
    doc = _read_toml(path)
    with reading(path) as files:
        plan = _expand(path, doc)
    plan.notes = files.notes + plan.notes
    return plan


def _repeated(raw, loc: str, parse) -> list[str]:
    """A note for each value of the list ``raw`` that is the same as one
    before it once read (``"50GB/s"`` after ``"400Gb/s"``, ``"ring:ports=max"``
    after ``"ring"``; ``parse`` reads one value): the grid counts it once,
    which its count showed with no word."""
    if not isinstance(raw, list) or len(raw) < 2:
        return []
    values = [parse(one) for one in raw]
    out = []
    for j, value in enumerate(values):
        first = None if not value else next((i for i in range(j) if values[i] == value), None)
        if first is not None:
            same = "repeats" if raw[first] == raw[j] else "is the same as"
            out.append(f"{loc}: {_written(raw[j])} {same} {_written(raw[first])}; the grid "
                       "counts it once")
    return out


def _repeated_options(raw, loc: str, parse) -> list[str]:
    """:func:`_repeated` for the values of each option list of an
    algorithm's table (``{ name = "ring", ports = [1, 1, 2] }``): each
    value read alone with the table's other options."""
    tables = raw if isinstance(raw, list) else [raw]
    out = []
    for k, table in enumerate(tables):
        if not isinstance(table, dict):
            continue
        where = f"{loc}[{k}]" if isinstance(raw, list) else loc
        for key, values in table.items():
            if isinstance(values, list) and len(values) > 1:
                out.extend(_repeated(values, f"{where}.{key}",
                                     lambda one, key=key, table=table: parse({**table,
                                                                              key: [one]})))
    return out


def _same_whatifs(given: Config, first: Config, locs: dict, notes: list[str]) -> None:
    """A note for a failure or degradation written differently from an
    earlier configuration's that reads the same on its topology
    (``"0,0-0,1=.5"`` and ``"0,0-0,1=0.5"``, ``"0,0-0,1; 0,0-0,1"`` and
    ``"0,0-0,1"``): the grid counts it once, which its count showed with no
    word (the other fields' values are noted as they are read)."""
    for name in ("fail", "degrade"):
        a, b = getattr(given, name), getattr(first, name)
        if a != b:
            note = (f"{locs.get((name, a), locs[name])}: {a!r} is the same as {b!r} on "
                    f"{given.topology}; the grid counts it once")
            if note not in notes:
                notes.append(note)


def _written(value) -> str:
    """A value of a sweep file as a note shows it: a string quoted, a table
    as TOML writes it (``{name = 'ring', ports = [1, 2]}``)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_written(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_written(v) for v in value) + "]"
    return repr(value)


def _expand(path: Path, doc: dict) -> SweepPlan:
    """The groups and configurations of a sweep file read into ``doc``."""
    probs = Problems()
    _check_keys(doc, TOP_KEYS, "", probs)
    desc = doc.get("description", "")
    if not isinstance(desc, str):
        probs.add("description", f"expected a string, got {type_name(desc)}")

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
                                                          f"{type_name(gd)}")

    parsed: dict[str, object] = {}   # location -> parsed values (a top-level key once)
    repeats: list[str] = []   # notes: values of one list that name the same value

    def field_values(name, table, prefix, collective="allreduce"):
        src, loc = (table, f"{prefix}{name}") if name in table else (doc, name)
        if name not in src:
            return None, loc, False
        key = (loc, collective) if name == "algorithm" else loc   # (an algorithm's collective)
        if key not in parsed:
            raw = src[name]
            parsed[key] = (parse_sizes_field(raw, loc, probs) if name == "sizes"
                           else parse_traffic_field(raw, loc, probs)
                           if name == "traffic" else parse_jobs_field(raw, loc, probs)
                           if name == "jobs" else parse_field(name, raw, loc, probs, collective))
            if name != "sizes" and parsed[key] is not None:
                def one_value(one, name=name, loc=loc, collective=collective):
                    quiet = Problems()
                    return (parse_traffic_field([one], loc, quiet) if name == "traffic"
                            else parse_jobs_field([one], loc, quiet) if name == "jobs"
                            else parse_field(name, [one], loc, quiet, collective))
                repeats.extend(_repeated(raw, loc, one_value))
                if name == "algorithm":
                    repeats.extend(_repeated_options(raw, loc, one_value))
        return parsed[key], loc, True

    def sources(table, prefix):
        # top-level exclude/where apply to every group, then the group's own
        return [(doc, "")] + ([(table, prefix)] if prefix else [])

    def collected(key, table, prefix, parse):
        """``[(parsed, raw, location)]`` of ``key`` at the top and in the
        group (each location parsed once), and whether all parsed."""
        out, ok = [], True
        for src, pre in sources(table, prefix):
            if key not in src:
                continue
            loc = f"{pre}{key}"
            if loc not in parsed:
                parsed[loc] = parse(src[key], loc)
            if parsed[loc] is None:
                ok = False
            else:
                out.append((parsed[loc], src[key], loc))
        return out, ok

    def parse_excludes(raw, loc):
        if not isinstance(raw, list):
            probs.add(loc, f"expected an array of tables ([[{loc}]] entries), got "
                           f"{type_name(raw)}")
            return None
        vals = [parse_exclude(e, f"{loc}[{i}]", probs) for i, e in enumerate(raw)]
        return None if any(v is None for v in vals) else vals

    def excludes(table, prefix):
        found, ok = collected("exclude", table, prefix, parse_excludes)
        return [entry for entries, _, _ in found for entry in entries], ok

    def where_codes(table, prefix):
        return collected("where", table, prefix, lambda raw, loc: compile_where(raw, loc, probs))

    name = path.stem
    plan = SweepPlan(name, path, desc if isinstance(desc, str) else "", {})
    for gname, (table, prefix) in groups.items():
        values, complete = {}, True
        seed_loc = ecmp_loc = "seed"
        locs: dict = {}
        explicit = set()   # network fields the file sets: they override a preset's
        replaced = _replaces_algorithm(doc, table, prefix, probs)
        colls, locs["collective"], given_coll = field_values("collective", table, prefix)
        if not given_coll:
            colls = ["allreduce"]
        elif colls is None:
            complete, colls = False, []
        elif replaced is not False and colls != ["allreduce"]:
            probs.add(locs["collective"], "applies to algorithms; traffic files and job sets "
                                          "are timed as they are")
            complete = False
        for f in GRID_FIELDS:
            if f == "algorithm" and replaced is not False:   # traffic files or job sets
                traffic, locs[f], _ = field_values(replaced or "traffic", table, prefix)
                if traffic is None or replaced is None:
                    complete = False
                else:
                    values[f] = traffic
                continue
            if f == "algorithm":   # the algorithms of each collective
                vals, present = ([], False) if colls else (None, True)   # (None: said)
                for coll in colls:
                    found, loc, present = field_values(f, table, prefix, coll)
                    vals = None if found is None or vals is None else vals + found
            else:
                vals, loc, present = field_values(f, table, prefix)
            locs[f] = loc
            if present and vals is not None and f in WHATIF_FIELDS:
                locs.update(_element_locs(f, table.get(f, doc.get(f)), loc))
            if present and f in NETWORK_FIELDS:
                explicit.add(f)
            if f == "seed":
                seed_loc = loc
            if f == "ecmp":
                ecmp_loc = loc
            if not present:
                if f in REQUIRED:
                    where = f"groups.{gname}" if groups_raw is not None else ""
                    probs.add(where, f"missing required key {f!r} (set it in the group or at "
                                     "the top of the file)")
                    complete = False
                    continue
                values[f] = [DEFAULTS[f]]
            elif vals is None:
                complete = False
            else:
                values[f] = vals
        sizes, _, present = field_values("sizes", table, prefix)
        if not present or sizes is None:
            # (bad sizes are reported; the grid is checked with the default ones, so
            # that its other problems are said at once)
            sizes = tuple(parse_sizes(DEFAULT_SIZES))
        excl, ok_ex = excludes(table, prefix)
        wheres, ok_wh = where_codes(table, prefix)
        # (the checks across fields, with every field read: reported beside
        # the others' problems, not after they are mended; the grid is checked on,
        # each configuration's seeds made canonical below)
        if "ecmp" in values and "seed" in values and "hash" not in values["ecmp"] \
                and any(s != 0 for s in values["seed"]):
            probs.add(seed_loc, "a seed applies only to ecmp = \"hash\" (it picks each flow's "
                                f"path there); this grid's ecmp is {', '.join(values['ecmp'])}")
        if "failures" in values and "failure_seed" in values \
                and all(k == 0 for k in values["failures"]) \
                and any(s != 0 for s in values["failure_seed"]):
            probs.add(locs["failure_seed"], "a failure_seed applies only with failures > 0 "
                                            "(it draws the failed cables); this grid's "
                                            "failures is 0")
        pair = [f for f in ("incast_threshold", "incast_slope") if f in explicit]
        pair = pair if all(f in values for f in pair) else []   # (a bad value: said)
        if len(pair) == 1 and values.get("network", [""]) == [""]:
            # (a preset may hold the other; without one its default turns incast off)
            other = "incast_slope" if pair[0] == "incast_threshold" else "incast_threshold"
            probs.add(locs[pair[0]], f"incast needs both incast_threshold and incast_slope; "
                                     f"give {other} too, or drop {pair[0]}")
        if replaced == "traffic":   # (0 costs nothing either way: allowed)
            for f in sorted(explicit & {"gamma", "delta"}):
                if any(v != 0 for v in values.get(f, [])):
                    probs.add(locs[f], "does not apply beside traffic (it reduces nothing: "
                                       "gamma and delta cost a reduction's bytes)")
        if not (complete and ok_ex and ok_wh):
            continue
        # a routing mode a topology lacks is reported, and the grid's other pairs still
        # go through every check below: the file's problems are said at once
        unrouted = _unrouted(values, ecmp_loc, probs)
        configs, seen, total, reported, misfits = [], {}, 0, set(), Problems()
        priced: dict = {}
        checked: dict = {}
        refused: dict = {}    # (loc, message) -> keys of the configurations refused
        simulated: dict = {}
        n_problems = len(probs.items)
        optkeys = OptionKeys()   # the options the where expressions read
        for combo in itertools.product(*(values[f] for f in GRID_FIELDS)):
            if len(probs.items) > n_problems:
                break   # a where expression failed: reported once, not per configuration
            total += 1
            kw = dict(zip(GRID_FIELDS, combo))
            if (kw["topology"], kw["ecmp"]) in unrouted:
                continue
            if kw["ecmp"] != "hash":
                kw["seed"] = 0   # the seeds of the grid are the hash's; one configuration here
            if not kw["failures"]:
                kw["failure_seed"] = 0   # no draw: the seeds are one configuration
            alg: Alg = kw.pop("algorithm")
            preset = kw.pop("network")
            if preset and not _apply_preset(kw, preset, explicit, locs["network"], probs):
                continue
            cfg = Config(sweep=name, group=gname, algorithm=alg.spec, label=alg.label,
                         sizes=() if alg.traffic or alg.jobs else sizes, network_preset=preset,
                         traffic=alg.traffic, jobs=alg.jobs, collective=alg.collective, **kw)
            if (cfg.incast_slope == 0) != (cfg.incast_threshold == float("inf")):
                # one half of the pair in a grid's cell (slope "0" beside a threshold):
                # incast is off, as in the cell without either (one configuration)
                cfg = replace(cfg, incast_threshold=float("inf"), incast_slope=0.0)
            env = where_env(cfg, alg, optkeys)
            keep = True
            for code, text, loc in wheres:
                if not eval_where(code, text, env, loc, probs):
                    keep = False
                    break
            if keep and any(excluded(ex, cfg, alg, env, probs) for ex in excl):
                keep = False
            if not keep:
                continue
            if not fits(cfg, locs, misfits, reported):
                continue
            if alg.traffic:
                if not check_traffic_config(cfg, locs["algorithm"], misfits):
                    continue
            elif not alg.jobs and not runs_on(cfg, alg, locs, misfits):
                continue
            given = cfg
            cfg = canonical_whatifs(cfg, locs, misfits, checked)
            if cfg is None:
                continue
            if alg.traffic:   # (traffic is always routed around failed links)
                cfg = replace(cfg, fail_policy="strict")
            if alg.jobs and not check_jobs_config(cfg, locs["algorithm"], misfits):
                continue   # (after the what-ifs: the failures a job must survive)
            if cfg.model == "genmodel" and cfg.collective != "allreduce":
                misfits.add(locs["collective"], f"collective = {cfg.collective!r} needs model "
                                                "= \"flow\": GenModel prices allreduce only "
                                                "(split the group or exclude the pair)")
                continue
            if cfg.model == "genmodel" and cfg.sync != "barrier":
                misfits.add(locs["sync"], f"sync = {cfg.sync!r} needs model = \"flow\": "
                                          "GenModel prices barrier-synchronised steps only "
                                          "(split the group or exclude the pair)")
                continue
            if cfg.model == "genmodel" and not priceable(cfg, alg, locs, misfits, priced):
                continue
            if not (alg.traffic or alg.jobs) and not simulable(cfg, given, locs, refused,
                                                               simulated):
                continue
            files = current()
            h = config_hash(files.as_written(cfg.canonical()))
            if h in seen:
                _same_whatifs(given, seen[h], locs, repeats)
                continue
            seen[h] = given
            named = json.dumps(cfg.canonical())
            written = tuple((path, text) for path, text in files.written.items()
                            if path in named)
            cfg = replace(cfg, hash=h, written=written)
            configs.append(replace(cfg, key=cfg.shown(config_key(cfg))))
        for loc, msg in misfits.items:   # after the loop: a where failure stops it early
            probs.add(loc, msg)
        if optkeys.unknown() and len(probs.items) == n_problems:
            # an option no algorithm of the grid has: a misspelling (it reads as None)
            texts = [(text, loc) for _, text, loc in wheres] + \
                [(ex.where_text, f"{ex.loc}.where") for ex in excl if ex.where is not None]
            key = str(optkeys.unknown()[0])
            text, loc = next(((t, lc) for t, lc in texts if key in t), texts[0])
            probs.add(loc, optkeys.problem(text))
        for (loc, msg), keys in refused.items():
            probs.add(loc, _configurations(keys) + msg)
        if len(probs.items) > n_problems:
            continue
        if not configs:
            loc = f"groups.{gname}" if groups_raw is not None else ""
            probs.add(loc, f"the grid is empty: all {total} configurations are removed by "
                           "exclude/where")
        plan.groups[gname] = configs
        plan.configs.extend(configs)
    unused = [f for f in ("sizes", *GRID_FIELDS) if f in doc and f != "algorithm"
              and f not in parsed]
    for f in unused:   # a top-level value every group overrides: checked all the same
        if f == "sizes":
            parse_sizes_field(doc[f], f, probs)
        else:
            parse_field(f, doc[f], f, probs)
    if probs.items:
        raise SweepConfigError(str(path), probs.items)
    plan.notes.extend(f"{f}: every group gives its own; the top-level value is not used"
                      for f in unused)
    plan.notes.extend(repeats)
    idle = sorted({c.slow for c in plan.configs if costless_slow(c)})
    if idle:   # (as `flowemu run --slow` notes it)
        plan.notes.append(f"slow {', '.join(map(repr, idle))}: a slower reduction costs nothing "
                          "in some configurations (gamma and delta 0, or a collective that "
                          "reduces nothing); there only the ranks' network slowdown counts "
                          "(give gamma and delta to charge the reduction)")
    return plan


def _replaces_algorithm(doc: dict, table: dict, prefix: str,
                        probs: Problems) -> str | bool | None:
    """The key a group times in place of an algorithm: ``"traffic"`` (traffic
    files) or ``"jobs"`` (job sets), in the group, or at the top of the file
    when the group gives no algorithm of its own; else False. None after
    reporting ``algorithm`` or ``sizes`` set beside it in one table (a
    traffic file or a job set replaces the algorithm and gives the bytes)."""
    for key in ("traffic", "jobs"):
        source = table if prefix and key in table else doc
        if key not in source or (source is doc and prefix and "algorithm" in table):
            continue
        where = prefix if source is table else ""
        other = "jobs" if key == "traffic" else "traffic"
        clash = [k for k in ("algorithm", "sizes", other) if k in source]
        what = ("a traffic file takes the place of the algorithm and gives every flow's "
                "bytes" if key == "traffic" else
                "a job set takes the place of the algorithm, and each job gives its size")
        for k in clash:
            probs.add(f"{where}{k}", f"does not apply beside {key} ({what})")
        return None if clash else key
    return False


def _apply_preset(kw: dict, preset: str, explicit: set, loc: str, probs: Problems) -> bool:
    """Put the preset's network values into ``kw``, the fields the sweep
    file sets (``explicit``) overriding them; a problem is reported."""
    try:
        net = load_preset(preset).network(si_values({f: kw[f] for f in explicit}))
    except ConfigError as exc:
        probs.add(loc, str(exc))
        return False
    for f in NETWORK_FIELDS:
        kw[f] = canon_float(getattr(net, f))
    return True


def _unrouted(values: dict, loc: str, probs: Problems) -> set:
    """The ``(topology, ecmp)`` pairs of a group whose topology does not route
    by that mode; each topology that lacks one is reported (before anything
    runs)."""
    pairs = set()
    for spec in values["topology"]:
        info = topo_info(spec)
        missing = [m for m in values["ecmp"] if m not in info.modes]
        if missing:
            probs.add(loc, f"{', '.join(map(repr, missing))} does not apply to {info.spec} "
                           f"(its modes: {', '.join(info.modes)}); split the group or give "
                           "each topology its own ecmp")
            pairs.update((spec, m) for m in missing)
    return pairs


def _element_locs(name: str, raw, loc: str) -> dict:
    """``{(name, value): "loc[i]"}`` for the elements of an array value, so a
    what-if the topology refuses is reported at its element."""
    if not isinstance(raw, list):
        return {}
    out = {}
    for i, item in enumerate(raw):
        out.setdefault((name, parse_whatif(name, item)), f"{loc}[{i}]")
    return out


def _configurations(keys: list[str], shown: int = 3) -> str:
    """``configuration KEY: `` (or several, the first ``shown`` named; a
    key the grid made twice, e.g. of two seeds one mode ignores, once)."""
    keys = list(dict.fromkeys(keys))
    if len(keys) == 1:
        return f"configuration {keys[0]}: "
    more = f" and {len(keys) - shown} more" if len(keys) > shown else ""
    return f"{len(keys)} configurations ({', '.join(keys[:shown])}{more}): "
