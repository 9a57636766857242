"""What a plug-in's code gets wrong, named: its builder and its ``sized``
hook wrapped so that an exception of its own, or what it returns (not a
Schedule, another number of ranks, no step, a flow to itself, a share that
is not a finite number >= 0, sizes served twice) is a ScheduleError naming
the plug-in (:mod:`.registry` registers them wrapped)."""

from __future__ import annotations

import numpy as np

from ..core.errors import FlowEmuError, ScheduleError, show
from .base import Schedule


def _naming(name: str, exc: FlowEmuError) -> FlowEmuError:
    """A flowemu error raised within a plug-in's builder (its own, or one of
    flowemu's checks it ran into, such as a Traffic of unequal lengths), as
    the same kind of error naming the plug-in, unless it does already."""
    text = str(exc)
    if text.startswith(f"algorithm {name}"):
        return exc
    try:
        return type(exc)(f"algorithm {name} (plug-in): {text}")
    except TypeError:   # (an error class with other arguments: kept as it is)
        return exc


def guarded(name: str, build):
    """The builder, with what a plug-in gets wrong turned into a
    ScheduleError naming it (one line on the command line, the cause chained
    for the Python user): an exception of its own, or not a Schedule."""
    def guarded(p, topology=None, blocks=False, **options):
        try:
            sched = build(p, topology, blocks, **options)
        except FlowEmuError as exc:
            raise _naming(name, exc) from exc
        except Exception as exc:
            raise ScheduleError(f"algorithm {name} (plug-in): its builder raised "
                                f"{type(exc).__name__}: {error_line(exc)}") from exc
        if not isinstance(sched, Schedule):
            raise ScheduleError(f"algorithm {name} (plug-in): its builder returned "
                                f"{show(sched)}, not a flowemu.algorithms.Schedule")
        _check_schedule(f"algorithm {name} (plug-in): its builder", sched, p)
        return sched
    guarded.__doc__ = build.__doc__
    guarded.__wrapped__ = build
    return guarded


def _check_schedule(where: str, sched: Schedule, p: int) -> None:
    """A ScheduleError when a plug-in's schedule is not of the ``p`` ranks
    asked for, has no step, a flow from a rank to itself, or a share that
    is not a finite number >= 0 (a user's traffic is refused alike; the
    solver would stop on it with its own words)."""
    if sched.p != p:
        raise ScheduleError(f"{where} was asked for {p} ranks but returned a schedule of "
                            f"p={sched.p}")
    if sched.num_steps == 0:
        raise ScheduleError(f"{where} returned a schedule with no steps")
    for step in sched.steps.patterns:
        tr = step.traffic
        bad = np.flatnonzero(~np.isfinite(tr.share) | (tr.share < 0))
        if bad.size:
            share = float(tr.share[bad[0]])
            raise ScheduleError(f"{where} returned a flow whose share is {share!r} (step "
                                f"{step.label!r}, flow {int(bad[0])}); expected a finite "
                                "number >= 0 (bytes per byte of n)")
        same = np.flatnonzero(tr.src == tr.dst)
        if same.size:
            raise ScheduleError(f"{where} returned a flow from rank {int(tr.src[same[0]])} to "
                                f"itself (step {step.label!r}, flow {int(same[0])})")


def guarded_sized(name: str, sized):
    """The ``sized`` hook, checked as :func:`guarded` checks a builder: each
    item a Schedule of ``p`` ranks with integer size indices, every size
    served exactly once."""
    def guarded(p, topology, network, sizes, options, blocks=False):
        where = f"algorithm {name} (plug-in): its sized hook"
        try:
            got = sized(p, topology, network, sizes, options, blocks=blocks)
        except FlowEmuError:
            raise
        except Exception as exc:
            raise ScheduleError(f"{where} raised {type(exc).__name__}: {error_line(exc)}") from exc
        if not isinstance(got, (list, tuple)):
            raise ScheduleError(f"{where} returned {show(got)}; expected a list of (Schedule, "
                                "size indices) pairs")
        out = list(got)
        served = np.zeros(len(sizes), np.int64)
        checked = []
        for item in out:
            if not (isinstance(item, tuple) and len(item) == 2
                    and isinstance(item[0], Schedule)):
                raise ScheduleError(f"{where} returned {show(item)}; expected (Schedule, "
                                    "size indices) pairs")
            sched, idx = item
            idx = np.asarray(idx)
            _check_schedule(where, sched, p)
            if idx.ndim != 1 or (idx.size and (idx.dtype.kind not in "iu" or idx.min() < 0
                                               or idx.max() >= len(sizes))):
                raise ScheduleError(f"{where} returned size indices {show(item[1])}; "
                                    f"expected integers in 0..{len(sizes) - 1}")
            np.add.at(served, idx, 1)
            checked.append((sched, idx.astype(np.int64)))
        if np.any(served != 1):
            k = int(np.flatnonzero(served != 1)[0])
            raise ScheduleError(f"{where} serves size index {k} ({sizes[k]:.0f} bytes) "
                                f"{int(served[k])} times; every size must be served by exactly "
                                "one schedule")
        return checked
    guarded.__wrapped__ = sized
    return guarded


def error_line(exc: BaseException) -> str:
    """An exception's text on one line, cut at 300 characters (its type
    when it has none)."""
    text = " ".join(str(exc).split())
    return text[:300] + ("…" if len(text) > 300 else "") if text else type(exc).__name__
