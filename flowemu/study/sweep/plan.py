"""A sweep file read, validated and expanded into its configurations."""

from __future__ import annotations

import itertools
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import SimpleNamespace

from ...algorithms import get_algorithm
from ...algorithms.collectives import get_collective
from ...api.simulation import check_simulation
from ...core.budget import Limit
from ...core.errors import ConfigError, ScheduleError, suggest
from ...core.network import si_values
from ...core.placement import parse_placement
from ...core.presets import load_preset
from ...core.units import parse_sizes
from ...models.genmodel import check_priceable
from ...whatif.background import parse_background
from ...whatif.faults import apply_faults
from ...whatif.stragglers import parse_slow, slows_compute
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
from .executor import simulate_arguments
from .fields import (
    Alg,
    Problems,
    SweepConfigError,
    build_topology,
    parse_field,
    parse_sizes_field,
    parse_whatif,
    topo_info,
    type_name,
)
from .jobs import check_jobs_config, parse_jobs_field
from .paths import current, reading
from .traffic import check_traffic_config, parse_traffic_field
from .where import compile_where, eval_where, excluded, parse_exclude, where_env


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
        with path.open("rb") as fh:
            return tomllib.load(fh)
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
    path = Path(path)
    doc = _read_toml(path)
    with reading(path) as files:
        plan = _expand(path, doc)
    plan.notes = files.notes + plan.notes
    return plan


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
        if not (complete and ok_ex and ok_wh):
            continue
        # a routing mode a topology lacks is reported, and the grid's other pairs still
        # go through every check below: the file's problems are said at once
        unrouted = _unrouted(values, ecmp_loc, probs)
        configs, seen, total, reported, misfits = [], set(), 0, set(), Problems()
        priced: dict = {}
        checked: dict = {}
        refused: dict = {}    # (loc, message) -> keys of the configurations refused
        simulated: dict = {}
        n_problems = len(probs.items)
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
            env = where_env(cfg, alg)
            keep = True
            for code, text, loc in wheres:
                if not eval_where(code, text, env, loc, probs):
                    keep = False
                    break
            if keep and any(excluded(ex, cfg, alg, env, probs) for ex in excl):
                keep = False
            if not keep:
                continue
            if not _fits(cfg, locs, misfits, reported):
                continue
            if alg.traffic:
                if not check_traffic_config(cfg, locs["algorithm"], misfits):
                    continue
            elif not alg.jobs and not _runs_on(cfg, alg, locs, misfits):
                continue
            given = cfg
            cfg = _whatif(cfg, locs, misfits, checked)
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
            if cfg.model == "genmodel" and not _priceable(cfg, alg, locs, misfits, priced):
                continue
            if not (alg.traffic or alg.jobs) and not _simulable(cfg, given, locs, refused,
                                                                simulated):
                continue
            h = config_hash(current().as_written(cfg.canonical()))
            if h in seen:
                continue
            seen.add(h)
            configs.append(replace(cfg, hash=h, key=config_key(cfg)))
        for loc, msg in misfits.items:   # after the loop: a where failure stops it early
            probs.add(loc, msg)
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
    if probs.items:
        raise SweepConfigError(str(path), probs.items)
    idle = sorted({c.slow for c in plan.configs if _costless_slow(c)})
    if idle:   # (as `flowemu run --slow` notes it)
        plan.notes.append(f"slow {', '.join(map(repr, idle))}: a slower reduction costs nothing "
                          "in some configurations (gamma and delta 0, or a collective that "
                          "reduces nothing); there only the ranks' network slowdown counts "
                          "(give gamma and delta to charge the reduction)")
    return plan


def _costless_slow(cfg: Config) -> bool:
    """Whether the configuration slows ranks' compute (its ``slow`` has an
    item that is not ``:network``) where compute costs nothing: gamma and
    delta 0, or a collective that reduces nothing."""
    if not cfg.slow or cfg.jobs or cfg.traffic or not slows_compute(cfg.slow):
        return False
    return (cfg.gamma == 0 and cfg.delta == 0) or not get_collective(cfg.collective).reduces


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


def _priceable(cfg: Config, alg: Alg, locs: dict, probs: Problems, priced: dict) -> bool:
    """Whether ``model = "genmodel"`` can price the configuration's topology,
    algorithm and ranks (:func:`flowemu.models.genmodel.check_priceable`); every
    pair it cannot is reported once, before anything runs."""
    info = topo_info(cfg.topology)
    p = cfg.ranks if cfg.ranks is not None else info.nodes
    if p > info.nodes:
        return True    # too many ranks: _simulable reports them (as for model flow)
    key = (info.spec, alg.spec, p)
    if key not in priced:
        try:
            check_priceable(build_topology(cfg.topology), p, alg.name, dict(alg.options),
                            cfg.network())
            priced[key] = True
        except ConfigError as exc:
            priced[key] = False
            why = str(exc).removeprefix("model genmodel: ")
            probs.add(locs["model"], f"genmodel cannot price {alg.label} on {info.spec} "
                                     f"({p} ranks): {why}")
    return priced[key]


def _whatif(cfg: Config, locs: dict, probs: Problems, checked: dict) -> Config | None:
    """``cfg`` with its failures and degradation in canonical form (the
    ``fail`` column of its rows), or None after reporting what the
    configuration's topology and ranks refuse: a selector
    (:func:`flowemu.whatif.faults.apply_faults`), a slow rank
    (:func:`flowemu.whatif.stragglers.parse_slow`), a background
    (:func:`flowemu.whatif.background.parse_background`: a missing file too), a
    what-if with ``model = "genmodel"``. Each problem is reported once; a
    failure that cuts ranks off is reported by :func:`_simulable`. ``checked``
    caches the outcomes within one plan."""
    if not (cfg.fail or cfg.failures or cfg.degrade or cfg.slow or cfg.background):
        return replace(cfg, fail_policy="strict")   # the policy acts on failed links only
    if cfg.model == "genmodel":
        probs.add(locs["model"], "genmodel does not model failures, degraded links, slow "
                                 "ranks or background traffic; use model = \"flow\" for the "
                                 "what-if configurations (split the group or exclude the pair)")
        return None
    info = topo_info(cfg.topology)
    p = cfg.ranks if cfg.ranks is not None else info.nodes

    def at(name: str, value) -> str:   # the element of an array, else the key
        return locs.get((name, value), locs[name])

    def check(kind: str, text: str, loc: str, why: str = ""):
        """The canonical text of one what-if on this topology (and ranks), or
        None after reporting why not."""
        key = (kind, info.spec, p if kind == "slow" else None, text)
        if key not in checked:
            try:
                checked[key] = (_canonical(kind, text, cfg.topology, p), "")
            except ConfigError as exc:
                checked[key] = (None, str(exc))
        canon, error = checked[key]
        if canon is None:
            where = f"on {info.spec}, {p} ranks" if kind == "slow" else \
                "" if info.spec in error else f"on {info.spec}"
            where = ", ".join(filter(None, (where, why.removeprefix(", "))))
            probs.add(loc, _strip(error, kind) + (f" ({where})" if where else ""))
        return canon

    texts, ok = {}, True   # every what-if checked, each problem reported
    if cfg.fail or cfg.failures:   # a Monte-Carlo draw is one more failure selector
        draw = f"random:{cfg.failures}:{cfg.failure_seed}" if cfg.failures else ""
        parts = [check("fail", text, loc, why) for text, loc, why in (
            (cfg.fail, at("fail", cfg.fail), ""),
            (draw, at("failures", cfg.failures), f", failure_seed {cfg.failure_seed}"))
            if text]
        ok &= None not in parts
        texts["fail"] = ";".join(filter(None, parts))
    if cfg.degrade:
        texts["degrade"] = check("degrade", cfg.degrade, at("degrade", cfg.degrade))
        ok &= texts["degrade"] is not None
    # (too many ranks for the topology: _simulable reports them, as without slow ranks)
    if cfg.slow and p <= info.nodes:
        ok &= check("slow", cfg.slow, at("slow", cfg.slow)) is not None
    if cfg.background:
        ok &= check("background", cfg.background, at("background", cfg.background)) is not None
    if not ok:
        return None
    out = replace(cfg, **texts)
    return out if out.fail else replace(out, fail_policy="strict")


def _element_locs(name: str, raw, loc: str) -> dict:
    """``{(name, value): "loc[i]"}`` for the elements of an array value, so a
    what-if the topology refuses is reported at its element."""
    if not isinstance(raw, list):
        return {}
    out = {}
    for i, item in enumerate(raw):
        out.setdefault((name, parse_whatif(name, item)), f"{loc}[{i}]")
    return out


def _canonical(kind: str, text: str, spec: str, p: int) -> str:
    """The canonical text of a what-if checked against a topology (ConfigError
    naming ``kind`` when it refuses it)."""
    if kind == "fail":
        return apply_faults(build_topology(spec), text).fail
    if kind == "degrade":
        return apply_faults(build_topology(spec), None, text).degrade
    if kind == "slow":
        return parse_slow(text, p).spec
    return parse_background(text, build_topology(spec)).spec


def _strip(msg: str, kind: str) -> str:
    """A library message without its ``kind: `` prefix (the location names it)."""
    return msg[len(kind) + 2:] if msg.startswith(f"{kind}: ") else msg


def _runs_on(cfg: Config, alg: Alg, locs: dict, probs: Problems) -> bool:
    """Whether the algorithm runs on the configuration's topology family
    (``AlgorithmSpec.families``, e.g. gentree on trees only); each pair that
    does not is reported once, before anything runs."""
    try:
        get_algorithm(alg.name, alg.collective).check_family(topo_info(cfg.topology).spec,
                                                             alg.label)
    except ConfigError as exc:
        probs.add(locs["algorithm"], f"{str(exc).removeprefix('algorithm: ')}; split the "
                                     "group or exclude the pair")
        return False
    return True


def _fits(cfg: Config, locs: dict, probs: Problems, reported: set) -> bool:
    """Whether the configuration's placement gives each rank an endpoint (a
    placement file is read now); each problem is reported once (by topology,
    ranks and placement), before anything runs. Ranks that do not fit the
    topology are reported by :func:`_simulable`."""
    info = topo_info(cfg.topology)
    p = cfg.ranks if cfg.ranks is not None else info.nodes
    key = (info.spec, p, cfg.placement)
    if key in reported:
        return False
    if cfg.placement != "linear" and p <= info.nodes:   # too many ranks: _simulable
        try:
            parse_placement(cfg.placement).mapping(
                p, SimpleNamespace(num_endpoints=info.nodes, spec=info.spec))
        except ConfigError as exc:
            reported.add(key)
            probs.add(locs["placement"], f"{exc} (on {info.spec}, {p} ranks)")
            return False
    return True


#: the memory limit of the up-front check: none (memory is checked when a
#: configuration runs, against the share of the machine its worker has)
_NO_MEMORY_LIMIT = Limit(2**62, "the sweep's up-front check")


def _simulable(cfg: Config, given: Config, locs: dict, refused: dict, cache: dict) -> bool:
    """Whether :func:`flowemu.api.simulation.check_simulation` (every check
    ``simulate`` makes before it solves, its schedules built) accepts the
    configuration; what it
    refuses is collected in ``refused`` by the field it names (its location
    in the file) and message, with the configuration's key. ``given`` is the
    configuration before its what-ifs were made canonical (a failure message
    is reported at ``failures`` when the random draw is the one at fault)."""
    args, kwargs = simulate_arguments(cfg)
    key = (cfg.topology, cfg.algorithm, tuple(sorted((k, str(v)) for k, v in kwargs.items())))
    if key not in cache:
        try:
            check_simulation(*args, max_memory=_NO_MEMORY_LIMIT, schedules=True, **kwargs)
            cache[key] = None
        except (ConfigError, ScheduleError) as exc:   # (a schedule that cannot be built)
            cache[key] = str(exc)
    msg = cache[key]
    if msg is None:
        return True
    loc = _location(msg, given, locs)
    refused.setdefault((loc, msg), []).append(config_key(cfg))
    return False


def _location(msg: str, given: Config, locs: dict) -> str:
    """The location in the file of the field a library message names (its
    first word: ``ranks: ...``, ``fail: ...``, ``model genmodel: ...``)."""
    name = msg.split(":", 1)[0].split(" ", 1)[0]
    if name == "fail" and given.failures and (
            not given.fail or f"random:{given.failures}:{given.failure_seed}" in msg):
        name = "failures"
    value = getattr(given, name, None)
    return locs.get((name, value), locs.get(name, locs["topology"]))


def _configurations(keys: list[str], shown: int = 3) -> str:
    """``configuration KEY: `` (or several, the first ``shown`` named)."""
    if len(keys) == 1:
        return f"configuration {keys[0]}: "
    more = f" and {len(keys) - shown} more" if len(keys) > shown else ""
    return f"{len(keys)} configurations ({', '.join(keys[:shown])}{more}): "
