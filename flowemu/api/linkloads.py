"""Every link's load per step: :func:`link_loads` (and ``flowemu run --links``).

:func:`flowemu.congestion` reports each step's busiest link; this reports
every link a step uses, with its name, capacity, bytes per byte of the
vector size n, flows and utilisation (:mod:`flowemu.engine.linkloads`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..core import budget
from ..core.errors import ConfigError
from ..core.network import Network
from ..engine.linkloads import schedule_loads
from ..engine.memory import check_memory
from ..engine.profiles import default_threads, make_context
from ..whatif.conditions import check_whatif
from ..whatif.faults import check_fail_policy
from .flows import select_steps
from .linknames import link_names
from .run import check_source, prepare_run, prepare_traffic, run_schedules

__all__ = ["LINK_COLUMNS", "NAME_BYTES", "ROW_BYTES", "link_loads"]

#: columns of :func:`link_loads`
LINK_COLUMNS = ["variant", "step", "label", "link", "src_node", "dst_node", "name", "tier",
                "direction", "capacity_Bps", "bytes_per_n", "flows", "utilisation",
                "step_fluid_s_per_B"]

#: bytes a row of the table holds (the texts are categories: a code per row)
ROW_BYTES = 64
#: bytes of the texts of one link used (its name, once in the categories)
NAME_BYTES = 100


def link_loads(topology, algorithm=None, *, traffic=None, steps=None, ecmp: str = "split",
               seed: int = 0,
               ranks: int | None = None, placement=None, network: Network | None = None,
               threads: int | None = None, max_memory=None, fail=None, degrade=None,
               fail_policy: str = "strict", slow=None, background=None,
               collective: str = "allreduce", **network_params) -> pd.DataFrame:
    """Every link's load in each step of an algorithm.

    Parameters
    ----------
    topology, algorithm
        As for :func:`flowemu.simulate` (no sizes: loads are per byte of the
        vector size n, so one table serves every size). With an ``auto``
        option every variant is reported (the ``variant`` column).
    traffic : str, Path, pandas.DataFrame, Traffic or list of Traffic, optional
        A user's traffic instead of an algorithm, as for
        :func:`flowemu.time_traffic` (give exactly one of the two). Its
        flows carry their own bytes, so n is one byte: ``bytes_per_n`` is
        the bytes a link carries in the step and ``step_fluid_s_per_B`` the
        step's fluid time in seconds; ``variant`` is the traffic's name (the
        file name, or ``traffic``); ``ranks`` and ``collective`` do not
        apply.
    steps : str, int or list, optional
        Steps to report (default all), as for :func:`flowemu.flows`:
        indices (``"0,3,5-7"``) or step labels (``"rs0"``). With an ``auto``
        option, each variant reports the steps it has of the selection
        (recdoub's ``rs1`` is a step of its bandwidth variant only); a
        selection no variant has is refused.
    ecmp, seed, ranks, placement, network, threads, max_memory, **network_params
        As for :func:`flowemu.simulate`.
    collective : str
        The collective the algorithm computes (default ``"allreduce"``), as
        for :func:`flowemu.simulate`.
    fail, degrade, fail_policy, slow, background
        What-ifs, as for :func:`flowemu.simulate`: failed links carry
        nothing, degraded ones have their lower capacity; a background
        shares the solve (so it slows the step) but its own bytes are not
        counted on the links.

    Returns
    -------
    pandas.DataFrame
        One row per (variant, step, link) for the links that carry bytes in
        that step (a link with load 0 has no row), columns
        :data:`LINK_COLUMNS`:

        ``variant`` (category), ``step`` (int64, the step's index),
        ``label`` (category); ``link`` (int32, the link id), ``src_node``,
        ``dst_node`` (int32 vertex ids), ``name``, ``tier``, ``direction``
        (categories, :mod:`flowemu.api.linknames`: ``3,4 +x`` on a torus,
        ``edge:3>agg:5`` on a fat tree); ``capacity_Bps`` (float64,
        bytes/s); ``bytes_per_n`` (float64: bytes carried per byte of n,
        the sum over flows of share × fraction; × n for bytes);
        ``flows`` (int32, flows crossing the link); ``utilisation``
        (float64: ``bytes_per_n / (capacity_Bps · step_fluid_s_per_B)``,
        1.0 = busy for the step's whole fluid phase at its max-min rates);
        ``step_fluid_s_per_B`` (float64: the step's fluid time, without
        latencies, per byte of n).

        Size: ~64 bytes a row (:data:`ROW_BYTES`) and ~100 per distinct
        link for its texts (:data:`NAME_BYTES`), rows = Σ over steps of
        the links used: 16k rows per step of a ring on 16,384 nodes, 64k per
        step of an algorithm using all four links of every node of a
        128×128 torus (~4 MB a step). The whole table is estimated after the
        distinct patterns are solved and refused beyond ``max_memory``;
        select steps with ``steps`` (a ring's 2(p−1) steps are alike).

    Raises
    ------
    ConfigError
        A bad argument, or a table estimated beyond the memory limit.
    """
    whatif = check_whatif(fail, degrade, fail_policy, slow, background)
    check_source("link_loads", algorithm, traffic)
    if traffic is not None:
        run, sched = prepare_traffic("link_loads", topology, traffic, ecmp=ecmp, seed=seed,
                                     network=network, network_params=network_params,
                                     threads=threads, max_memory=max_memory,
                                     placement=placement, whatif=whatif, ranks=ranks,
                                     collective=collective)
        scheds = [sched]
    else:
        run = prepare_run("link_loads", topology, algorithm, ecmp=ecmp, seed=seed, ranks=ranks,
                          network=network, network_params=network_params, threads=threads,
                          max_memory=max_memory, placement=placement, whatif=whatif,
                          collective=collective)
        scheds = [run_schedules(run, cand, None)[0][0] for cand in run.candidates]
    threads = run.threads if run.threads is not None else default_threads()
    w = run.whatif
    parts, rows = [], 0
    for sched, indices in zip(scheds, _selections(scheds, steps), strict=True):
        if not indices:
            continue
        if w is not None:
            check_fail_policy(sched, run.topology, run.mapping, w.columns["fail_policy"],
                              run.spec)
        ctx = make_context(run.topology, run.network, run.ecmp, run.seed, run.mapping, sched.p,
                           None if w is None else w.background, None if w is None else w.slow,
                           run.limit)
        check_memory(ctx, sched, threads, run.limit)
        loads = schedule_loads(ctx, sched, indices, threads)
        rows += sum(p.num_links for p in loads)
        need = rows * ROW_BYTES + min(rows, run.topology.num_links) * NAME_BYTES
        try:
            what = "traffic" if run.spec is None else run.spec.name
            budget.check(need, run.limit,
                         f"the link table of {run.topology.spec} {what} ({rows} rows)")
        except ConfigError as exc:
            raise ConfigError(f"{exc}; or select fewer steps (steps=, --links-steps)") \
                from None
        parts.append((sched, indices, loads, ctx.link_capacity))
    if not parts:
        raise ConfigError(f"steps: {steps!r} selects no step")
    return _table(run.topology, parts)


def _selections(scheds: list, steps) -> list[list[int]]:
    """The step indices ``steps`` selects in each schedule: all of it in the
    one schedule of a run, else each item in the schedules that have it (an
    item no schedule has is refused)."""
    if steps is None or len(scheds) == 1:
        return [select_steps(s, steps) for s in scheds]
    items = [steps] if isinstance(steps, str) and "," not in steps else \
        (steps.split(",") if isinstance(steps, str) else
         ([steps] if not isinstance(steps, (list, tuple, range, np.ndarray)) else list(steps)))
    out: list[list[int]] = [[] for _ in scheds]
    for item in items:
        errors = []
        for i, sched in enumerate(scheds):
            try:
                out[i].extend(select_steps(sched, [item.strip() if isinstance(item, str)
                                                   else item]))
            except ConfigError as exc:
                errors.append(exc)
        if len(errors) == len(scheds):
            has = "; ".join(f"{s.variant}: steps 0..{s.num_steps - 1} "
                            f"({s.steps[0].label}..{s.steps[s.num_steps - 1].label})"
                            for s in scheds if s.num_steps)
            raise ConfigError(f"steps: {item!r} is a step of no variant ({has})")
    return [list(dict.fromkeys(o)) for o in out]


def _table(topology, parts) -> pd.DataFrame:
    """The rows of every variant's selected steps, texts as categories."""
    used = np.unique(np.concatenate([p.link for _, _, loads, _ in parts for p in loads]
                                    or [np.zeros(0, dtype=np.int32)]))
    name, tier, direction = link_names(topology, used)
    variants = [sched.variant for sched, _, _, _ in parts]
    labels = sorted({sched.steps[k].label for sched, indices, _, _ in parts for k in indices})
    label_code = {label: i for i, label in enumerate(labels)}
    columns = {c: [] for c in ("variant", "step", "label", "link", "fluid", "load", "flows",
                               "capacity")}
    for v, (sched, indices, loads, capacity) in enumerate(parts):
        for k, p in zip(indices, loads, strict=True):
            m = p.num_links
            columns["variant"].append(np.full(m, v, dtype=np.int32))
            columns["step"].append(np.full(m, k, dtype=np.int64))
            columns["label"].append(np.full(m, label_code[sched.steps[k].label],
                                            dtype=np.int32))
            columns["link"].append(p.link)
            columns["fluid"].append(np.full(m, p.fluid_spb))
            columns["load"].append(p.load)
            columns["flows"].append(p.flows)
            columns["capacity"].append(capacity[p.link])
    c = {key: np.concatenate(val) if val else np.zeros(0) for key, val in columns.items()}
    link = c["link"].astype(np.int32)
    at = np.searchsorted(used, link)

    def category(codes, values):
        return pd.Categorical.from_codes(np.asarray(codes, dtype=np.int64),
                                         categories=pd.Index(values, dtype=object))

    def texts(values):   # a category per distinct text, a code per row
        uniq, inverse = np.unique(values.astype(str), return_inverse=True)
        return category(inverse[at], list(uniq))

    with np.errstate(divide="ignore", invalid="ignore"):
        util = c["load"] / (c["capacity"] * c["fluid"])
    return pd.DataFrame({
        "variant": category(c["variant"], variants) if len(set(variants)) == len(variants)
        else np.asarray(variants, dtype=object)[c["variant"].astype(np.int64)],
        "step": c["step"].astype(np.int64),
        "label": category(c["label"], labels),
        "link": link,
        "src_node": np.asarray(topology.link_src, dtype=np.int32)[link],
        "dst_node": np.asarray(topology.link_dst, dtype=np.int32)[link],
        "name": texts(name), "tier": texts(tier), "direction": texts(direction),
        "capacity_Bps": c["capacity"].astype(np.float64),
        "bytes_per_n": c["load"].astype(np.float64),
        "flows": c["flows"].astype(np.int32),
        "utilisation": util.astype(np.float64),
        "step_fluid_s_per_B": c["fluid"].astype(np.float64),
    }, columns=LINK_COLUMNS)
