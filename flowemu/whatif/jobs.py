"""Several jobs at once: what a job is (:class:`JobSpec`, read by
:func:`parse_job` from ``"algorithm=... size=... [ranks=...] [placement=...]
[start=...]"`` or a dict) and where its ranks run (:func:`job_mappings`).
Plain data: :mod:`flowemu.api.jobs` builds each job's schedule and hands the
jobs to the engine's event-driven solve (:mod:`flowemu.engine.dataflow`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core import checks
from ..core.errors import ConfigError, show, suggest
from ..core.placement import FORMS, parse_placement
from ..core.units import parse_size, parse_time

__all__ = ["JOB_KEYS", "JobSpec", "job_mappings", "job_text", "parse_job"]

#: the keys of a job (``"algorithm=ring size=64MiB ranks=512"`` or a dict)
JOB_KEYS = ("algorithm", "size", "ranks", "placement", "start")

#: a job's placements, as its messages list them: packed (the default), then
#: those of a single run
JOB_PLACEMENTS = "\"packed\" (the default: the next endpoints no earlier job took), " + FORMS


@dataclass(frozen=True)
class JobSpec:
    """One job as given, checked: its algorithm spec, size in bytes, ranks
    (None: every endpoint left), placement text ("" for packed) and start."""

    algorithm: str
    size: int
    ranks: int | None
    placement: str
    start: float


#: the latest start of a job (seconds): the bound of every time of a run
MAX_START = 1e9


def parse_job(raw, index: int) -> JobSpec:
    """A job from ``"key=value key=value ..."`` or a dict of :data:`JOB_KEYS`."""
    where = f"jobs[{index}]"
    if isinstance(raw, str):
        items = {}
        for word in raw.split():
            key, eq, value = word.partition("=")
            if not eq or not value:
                raise ConfigError(f"{where}: {word!r} is not key=value (keys: "
                                  f"{', '.join(JOB_KEYS)}), e.g. 'algorithm=ring size=64MiB "
                                  "ranks=512 start=10us'")
            if key in items:
                raise ConfigError(f"{where}: {key!r} given twice")
            items[key] = value
    elif isinstance(raw, dict):
        items = dict(raw)
    else:
        raise ConfigError(f"{where}: {show(raw)} is not allowed; expected a dict or a text "
                          "'algorithm=NAME size=SIZE [ranks=N] [placement=P] [start=TIME]'")
    unknown = sorted(set(items) - set(JOB_KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r}{suggest(unknown[0], JOB_KEYS)}; "
                          f"expected {', '.join(JOB_KEYS)}")
    for key in ("algorithm", "size"):
        if key not in items:
            raise ConfigError(f"{where}: {key} is missing (keys: {', '.join(JOB_KEYS)})")
    algorithm = checks.text(f"{where}.algorithm", items["algorithm"], "ring")
    size = parse_size(items["size"], f"{where}.size")
    ranks = items.get("ranks")
    if ranks is not None:   # an int, as simulate's ranks (a job's text gives digits)
        if isinstance(ranks, str) and ranks.strip().isdigit():
            ranks = int(ranks.strip())
        ranks = checks.integer(f"{where}.ranks", ranks, lo=2)
    placement = items.get("placement", "")
    if not isinstance(placement, str):
        raise ConfigError(f"{where}.placement: {show(placement)} is not allowed; expected "
                          f"{JOB_PLACEMENTS}")
    start = items.get("start", 0.0)
    start = parse_time(start, f"{where}.start") if isinstance(start, str) else start
    if isinstance(start, bool) or not isinstance(start, (int, float)) or not start >= 0 \
            or not start <= MAX_START:
        raise ConfigError(f"{where}.start: {show(items.get('start'))} is not allowed; expected "
                          "a time from 0 to 1e9 s with its unit, e.g. 10us (as every time: "
                          "longer ones overflow a run's total)")
    if start and not isinstance(items.get("start"), str):
        raise ConfigError(f"{where}.start: {show(start)} needs its unit, e.g. '10us' (only 0 "
                          "may be bare)")
    return JobSpec(algorithm, int(size), ranks, placement.strip(), float(start))


def job_mappings(specs: list[JobSpec], topo) -> list[np.ndarray]:
    """Each job's endpoints: packed (the next endpoints no earlier job took,
    in id order), ``linear`` (0..p-1), ``random:SEED`` (drawn from the
    endpoints no earlier job took) or a file. ``linear`` and a file may
    give endpoints an earlier job has: their ranks then share the
    endpoint's links (two communicators on the same nodes)."""
    n = topo.num_endpoints
    owner = np.full(n, -1, dtype=np.int64)
    out = []
    for j, spec in enumerate(specs):
        free = np.flatnonzero(owner < 0)
        try:
            ends, p = _endpoints(spec, free, topo)
        except ConfigError as exc:   # "placement 'x': ..." names the field once
            text = str(exc)
            rest = text[len("placement"):] if text.startswith("placement") else f": {text}"
            raise ConfigError(f"jobs[{j}].placement{rest}") from None
        if ends is None and not len(free):
            raise ConfigError(f"jobs[{j}]: no endpoints are left for it (the jobs before it "
                              f"take all {n} endpoints of {topo.spec}); give the jobs ranks= "
                              "that leave room, or placement=linear or a file to share them")
        if p < 2 or (ends is None and p > len(free)):
            what = "ranks" if spec.ranks is not None or not spec.placement else "placement"
            left = " the jobs before it leave" if j else ""
            raise ConfigError(f"jobs[{j}].{what}: {p} ranks do not fit on the {len(free)} "
                              f"endpoints of {topo.spec}{left}")
        if ends is None:   # packed or random: from the endpoints left
            place = None if spec.placement in ("", "packed") \
                else parse_placement(spec.placement, JOB_PLACEMENTS)
            ends = free[:p] if place is None else \
                np.random.default_rng(place.seed).permutation(free)[:p]
        ends = np.asarray(ends, dtype=np.int64)
        owner[ends] = j
        out.append(ends.astype(np.int32))
    return out


def _endpoints(spec: JobSpec, free, topo):
    """``(endpoints, ranks)`` of a job placed ``linear`` or by a file, or
    ``(None, ranks)`` for a job that takes endpoints left (packed, random)."""
    text = spec.placement
    place = None if text in ("", "packed") else parse_placement(text, JOB_PLACEMENTS)
    if place is None or place.kind == "random":
        return None, spec.ranks if spec.ranks is not None else len(free)
    p = spec.ranks if spec.ranks is not None else place.ranks(topo)
    got = place.mapping(p, topo)
    return (np.arange(p) if got is None else got), p


def job_text(spec: JobSpec) -> str:
    """A job in canonical form, as :func:`parse_job` reads it back (size in
    bytes, start in seconds; defaults left out)."""
    parts = [f"algorithm={spec.algorithm}", f"size={spec.size}"]
    if spec.ranks is not None:
        parts.append(f"ranks={spec.ranks}")
    if spec.placement and spec.placement != "packed":
        parts.append(f"placement={spec.placement}")
    if spec.start:
        parts.append(f"start={spec.start!r}s")
    return " ".join(parts)
