"""The ``jobs`` field of a sweep file: several jobs sharing the network
(:func:`flowemu.simulate_jobs`), timed in place of an algorithm.

A value is one *job set*, a list of jobs (each ``"algorithm=... size=...
[ranks=...] [placement=...] [start=...]"`` or a table of those keys); an
array of job sets is a grid dimension, as an array of algorithms is. A job
set's configuration is labelled ``jobs:ALG+ALG+...`` and writes one row per
job: the job's algorithm, variant, ranks, placement and size, its time, and
the columns :data:`~flowemu.study.sweep.dataset.JOB_DATASET_COLUMNS` (the job's index, start, time alone
and slowdown). Every job is checked against each topology of the grid when
the sweep file is read.
"""

from __future__ import annotations

from dataclasses import replace

from ...api.jobs import (
    check_job_failures,
    check_job_schedules,
    job_text,
    parse_job,
    simulate_jobs,
)
from ...core.errors import ConfigError
from .config import Config
from .fields import Alg, Problems, build_topology, placement_beside, type_name

#: the algorithm name of a job-set configuration
JOBS = "jobs"


def parse_jobs_field(raw, loc: str, probs: Problems) -> list[Alg] | None:
    """The grid values of a ``jobs`` field: one job set (a list of jobs) or
    an array of job sets; each job parsed now. None after recording every
    problem."""
    if not isinstance(raw, list) or not raw:
        probs.add(loc, "expected a list of jobs (one job set, e.g. [\"algorithm=ring "
                       "size=64MiB ranks=512\", \"algorithm=swing size=64MiB ranks=512\"]) or "
                       f"an array of such lists, got {type_name(raw) if raw != [] else '[]'}")
        return None
    nested = all(isinstance(x, list) for x in raw)
    if not nested and any(isinstance(x, list) for x in raw):
        probs.add(loc, "mixes job sets (arrays) and jobs (texts or tables); write one job set "
                       "as a list of jobs, or several as a list of such lists")
        return None
    sets = raw if nested else [raw]
    out, ok = [], True
    for i, jobs in enumerate(sets):
        sloc = f"{loc}[{i}]" if nested else loc
        if not jobs:
            probs.add(sloc, "an empty job set; give at least one job")
            ok = False
            continue
        specs = []
        for j, item in enumerate(jobs):
            try:
                spec = parse_job(item, j)
                if spec.placement not in ("", "packed"):   # a file: beside the sweep file
                    spec = replace(spec, placement=placement_beside(spec.placement,
                                                                    f"{sloc}[{j}]"))
                specs.append(spec)
            except ConfigError as exc:
                probs.add(f"{sloc}[{j}]", str(exc).split(": ", 1)[-1]
                          if str(exc).startswith(f"jobs[{j}]") else str(exc))
                ok = False
        if len(specs) == len(jobs):
            alg = jobs_alg(specs)
            if alg not in out:
                out.append(alg)
    return out if ok else None


def jobs_alg(specs) -> Alg:
    """The grid value of one job set: algorithm ``jobs``, its canonical jobs
    as the spec, labelled by the jobs' algorithms."""
    texts = tuple(job_text(s) for s in specs)
    label = f"{JOBS}:" + "+".join(s.algorithm for s in specs)
    return Alg(JOBS, (), f"{JOBS}[" + " | ".join(texts) + "]", label, jobs=texts)


def check_jobs_config(cfg: Config, loc: str, probs: Problems) -> bool:
    """Whether a job-set configuration runs: the flow model, no ``ranks``,
    ``placement`` or slow ranks of its own (each job has its ranks and
    placement), and every job fits the topology."""
    fixed = [(name, why) for name, bad, why in (
        ("model", cfg.model != "flow", "jobs run on model = \"flow\" only"),
        ("ranks", cfg.ranks is not None, "each job gives its own ranks"),
        ("placement", cfg.placement != "linear", "each job gives its own placement"),
        ("slow", bool(cfg.slow), "slow ranks are per run, not per job"),
    ) if bad]
    for name, why in fixed:
        probs.add(loc, f"{name} does not apply to a job set ({why}); leave it out of the group")
    if fixed:
        return False
    try:
        topo = build_topology(cfg.topology)
        if cfg.fail or cfg.degrade:   # (checks the jobs too, on the faulted topology)
            check_job_failures(topo, list(cfg.jobs), cfg.network(), cfg.fail or None,
                               cfg.degrade or None, cfg.fail_policy)
        else:   # (the schedules built, as a configuration of an algorithm's are)
            check_job_schedules(topo, list(cfg.jobs), cfg.network())
    except ConfigError as exc:
        probs.add(loc, f"on {cfg.topology}, job set {cfg.label}: {exc}")
        return False
    return True


def job_rows(cfg: Config, threads: int | None = None, max_memory=None) -> list[dict]:
    """One result row per job of a job-set configuration (the result columns
    plus :data:`~flowemu.study.sweep.dataset.JOB_DATASET_COLUMNS`)."""
    del threads   # (one event-driven solve: no steps to spread over threads)
    df = simulate_jobs(build_topology(cfg.topology), list(cfg.jobs), sync=cfg.sync,
                       ecmp=cfg.ecmp, seed=cfg.seed, network=cfg.network(),
                       max_memory=max_memory, fail=cfg.fail or None,
                       degrade=cfg.degrade or None, fail_policy=cfg.fail_policy,
                       background=cfg.background or None)
    rows = []
    for rec in df.to_dict("records"):
        rec = dict(rec)
        j = rec.pop("job")
        # a label per job: compare keeps each job's row (jobs of a set may share a placement)
        rows.append({**rec, "label": f"{cfg.label}#{j}", "model": "flow", "job": float(j),
                     "job_start_s": rec.pop("start_s"),
                     "job_alone_s": rec.pop("alone_s"), "job_slowdown": rec.pop("slowdown"),
                     "note": f"job {j} of {len(df)}; ends at {rec.pop('end_s'):.6g} s"})
    return rows
