"""The checks of one sweep configuration before anything runs: its what-ifs
made canonical against its topology, whether its algorithm runs on that
family, whether its placement fits, whether GenModel can price it, and every
check :func:`flowemu.simulate` makes before it solves. Each reports a
problem once, at its place in the sweep file (:mod:`.plan` expands the
grid and calls them)."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

from ...algorithms import get_algorithm
from ...algorithms.collectives import get_collective
from ...api.simulation import check_simulation
from ...core.budget import Limit
from ...core.errors import ConfigError, ScheduleError
from ...core.placement import parse_placement
from ...models.genmodel import check_priceable
from ...whatif.background import parse_background
from ...whatif.faults import apply_faults
from ...whatif.stragglers import parse_slow, slows_compute
from .config import Config, background_file, config_key
from .executor import simulate_arguments
from .fields import Alg, Problems, build_topology, topo_info
from .paths import current


def costless_slow(cfg: Config) -> bool:
    """Whether the configuration slows ranks' compute (its ``slow`` has an
    item that is not ``:network``) where compute costs nothing: gamma and
    delta 0, or a collective that reduces nothing."""
    if not cfg.slow or cfg.jobs or cfg.traffic or not slows_compute(cfg.slow):
        return False
    return (cfg.gamma == 0 and cfg.delta == 0) or not get_collective(cfg.collective).reduces


def priceable(cfg: Config, alg: Alg, locs: dict, probs: Problems, priced: dict) -> bool:
    """Whether ``model = "genmodel"`` can price the configuration's topology,
    algorithm and ranks (:func:`flowemu.models.genmodel.check_priceable`); every
    pair it cannot is reported once, before anything runs."""
    info = topo_info(cfg.topology)
    p = cfg.ranks if cfg.ranks is not None else info.nodes
    if p > info.nodes:
        return True    # too many ranks: simulable reports them (as for model flow)
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


def canonical_whatifs(cfg: Config, locs: dict, probs: Problems, checked: dict) -> Config | None:
    """``cfg`` with its failures and degradation in canonical form (the
    ``fail`` column of its rows), or None after reporting what the
    configuration's topology and ranks refuse: a selector
    (:func:`flowemu.whatif.faults.apply_faults`), a slow rank
    (:func:`flowemu.whatif.stragglers.parse_slow`), a background
    (:func:`flowemu.whatif.background.parse_background`: a missing file too), a
    what-if with ``model = "genmodel"``. Each problem is reported once; a
    failure that cuts ranks off is reported by :func:`simulable`. ``checked``
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
    # (too many ranks for the topology: simulable reports them, as without slow ranks)
    if cfg.slow and p <= info.nodes:
        ok &= check("slow", cfg.slow, at("slow", cfg.slow)) is not None
    if cfg.background:
        missing = current().missing(cfg.background) if background_file(cfg.background) \
            else None
        if missing is not None:   # (where it was looked for, as a traffic file's says)
            probs.add(at("background", cfg.background), missing)
            ok = False
        else:
            ok &= check("background", cfg.background,
                        at("background", cfg.background)) is not None
    if not ok:
        return None
    out = replace(cfg, **texts)
    return out if out.fail else replace(out, fail_policy="strict")


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


def runs_on(cfg: Config, alg: Alg, locs: dict, probs: Problems) -> bool:
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


def fits(cfg: Config, locs: dict, probs: Problems, reported: set) -> bool:
    """Whether the configuration's placement gives each rank an endpoint (a
    placement file is read now); each problem is reported once (by topology,
    ranks and placement), before anything runs. Ranks that do not fit the
    topology are reported by :func:`simulable`."""
    info = topo_info(cfg.topology)
    p = cfg.ranks if cfg.ranks is not None else info.nodes
    key = (info.spec, p, cfg.placement)
    if key in reported:
        return False
    if cfg.placement != "linear" and p <= info.nodes:   # too many ranks: simulable
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


def simulable(cfg: Config, given: Config, locs: dict, refused: dict, cache: dict) -> bool:
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
