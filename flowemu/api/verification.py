"""``flowemu verify`` and :func:`verify`: build an algorithm with block content
and prove it computes its collective, an allreduce unless another is named
(:func:`flowemu.algorithms.verify.verify`).

The proof replays the schedule block by block: after the last step every rank
must hold every block with every rank's contribution exactly once; no step may
reduce a contribution twice or copy two values into one block; each step's
declared Reduction must equal the work of its REDUCE flows. A schedule that
breaks any of these raises :class:`~flowemu.core.errors.ScheduleError` naming the
first step, rank, block and origin at fault.

The verifier's state is ``p × blocks × buffers × p`` int16 counts, so memory grows as
p³ for the usual p blocks: a run that would not fit the memory limit
(:mod:`flowemu.core.budget`) is refused before anything is allocated — once from
the algorithm's block count before the build (a lower bound for the built-ins),
and exactly from the built schedule before the replay.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ..algorithms import get_algorithm, parse_algorithm_spec
from ..algorithms.base import DEFAULT_AT
from ..algorithms.collectives import COLLECTIVES, get_collective
from ..algorithms.recdoub import largest_power_of_two
from ..algorithms.verify import verify as verify_schedule
from ..core import budget, checks
from ..core.errors import ConfigError, checked_keywords, show
from ..core.network import Network
from ..topology import checks as topology_checks

__all__ = ["Verification", "VerifiedVariant", "verify"]

#: steps listed in full by :meth:`Verification.text` (more: the first and last half)
MAX_STEPS_SHOWN = 40

#: built-ins whose block build has at least p blocks
_PER_RANK_BLOCKS = ("acps", "bucket", "cps", "hcps", "ring")


def min_blocks(name: str, options: dict, p: int, collective: str = "allreduce") -> int:
    """Blocks the block build of a built-in has at least (1 for the others:
    checked exactly once built): p for the reduce-scatter/allgather
    algorithms, the largest power of two <= p for recdoub's bandwidth
    variant, p for swing's, the segments of binomial (twice for dbtree's two
    trees), dualroot's fixed blocks; one for the latency variants."""
    if collective != "allreduce":
        coll = COLLECTIVES[collective]
        return p * p if coll.per_rank_total else (p if coll.owned else 1)
    if name in _PER_RANK_BLOCKS:
        return p
    if name == "recdoub" and options.get("variant") == "bandwidth":
        return largest_power_of_two(p)
    if name == "swing" and options.get("variant") == "bandwidth":
        return p
    if name in ("binomial", "dbtree"):      # a block per segment (per tree)
        k = options.get("segments", 1)
        return (k if isinstance(k, int) else 1) * (2 if name == "dbtree" else 1)
    if name == "dualroot" and isinstance(options.get("blocks"), int):
        return options["blocks"]
    return 1


@dataclass(frozen=True)
class VerifiedVariant:
    """One schedule the verifier proved correct."""

    variant: str
    options: dict
    num_steps: int
    note: str
    report: object   #: :class:`flowemu.algorithms.verify.VerifyReport`


@dataclass(frozen=True)
class Verification:
    """What :func:`verify` proved: one :class:`VerifiedVariant` per schedule
    (every choice of an ``auto_param`` option such as recdoub's
    ``variant=auto``; for an algorithm that plans per size, ``sized``, the
    plans it makes for ``size``)."""

    algorithm: str
    topology: str | None
    p: int
    size: float | None
    auto: str | None
    variants: tuple[VerifiedVariant, ...]
    collective: str = "allreduce"
    sized: bool = False

    def text(self, all_steps: bool = False) -> str:
        return "\n".join(_variant_text(self, v, all_steps) for v in self.variants)


@checked_keywords
def verify(algorithm, ranks=None, topology=None, *, size=None, network=None,
           max_memory=None, collective="allreduce") -> Verification:
    """Prove that an algorithm's schedule computes its collective (default
    an allreduce).

    Parameters
    ----------
    algorithm : str
        ``NAME[:key=val,...]`` of a registered algorithm of ``collective``
        (plug-ins too). With an ``auto`` variant option
        (``recdoub:variant=auto``) every choice is verified. An algorithm
        that plans per size (gentree; butterfly's ``r=auto``, dualroot's
        ``blocks=auto``) is verified for the plan it makes for ``size``.
    ranks : int, optional
        Number of ranks (default: every endpoint of ``topology``; required
        without one).
    topology : str or Topology, optional
        Built for the algorithms that arrange ranks on it (grid algorithms,
        gentree); without it the builders use rank ids.
    size : str or int, optional
        For an algorithm whose schedule depends on the vector size (gentree):
        the size whose plan is verified (default: the builder's default,
        256 MiB). Otherwise it only adds bytes to the report.
    network : Network or preset, optional
        The network a sized algorithm plans for (default: Network()).
    max_memory : str or int, optional
        Memory limit (as for :func:`flowemu.simulate`).
    collective : str
        allreduce (default), reduce_scatter, allgather, broadcast, reduce,
        gather, scatter or alltoall (:mod:`flowemu.algorithms.collectives`):
        the postcondition proved.

    Returns
    -------
    Verification
        ``.text()`` is what ``flowemu verify`` prints.

    Raises
    ------
    ScheduleError
        The first step where a block goes missing, is reduced twice, ...
    ConfigError
        A bad argument, or a verifier state that would not fit in memory.
    """
    head, variants = _prepare(algorithm, ranks, topology, size, network, max_memory,
                              collective=collective)
    return Verification(**head, variants=tuple(variants))


def verify_each(algorithm, ranks=None, topology=None, *, size=None, network=None,
                max_memory=None, collective="allreduce"
                ) -> tuple[dict, Iterator[VerifiedVariant]]:
    """:func:`verify` one schedule at a time (the command line prints each
    proof before the next schedule is built): ``(head, iterator)``, ``head``
    the :class:`Verification` fields but ``variants``."""
    head, variants = _prepare(algorithm, ranks, topology, size, network, max_memory, lazy=True,
                              collective=collective)
    return head, variants


def _prepare(algorithm, ranks, topology, size, network, max_memory, lazy=False,
             collective="allreduce"):
    lim = budget.limit(max_memory)
    coll = get_collective(collective)
    name, raw = parse_algorithm_spec(checks.text("algorithm", algorithm, "ring"))
    spec = get_algorithm(name, coll.name)
    if spec.unverifiable:
        raise ConfigError(f"algorithm {name}: {spec.unverifiable}")
    opts = spec.parse_options(raw)
    auto = spec.auto_param if spec.auto_param and opts.get(spec.auto_param) == "auto" else None
    candidates = ([dict(opts, **{auto: c}) for c in spec.auto_choices()] if auto else [opts])
    topo = None
    if topology is not None:
        with budget.topology_limit(lim):
            topo = topology_checks.topology(topology)
    if topo is None:
        if ranks is None:
            raise ConfigError("ranks: needed without a topology (the number of ranks to "
                              "verify on), e.g. ranks=8")
        if not checks.is_integer(ranks) or ranks < 2:
            raise ConfigError(f"ranks: {show(ranks)} is not allowed; expected an integer >= 2")
        p = int(ranks)
    else:
        p = checks.ranks(ranks, topo)
    family = None if topo is None else topo.spec.partition(":")[0]
    if spec.families is not None and family not in spec.families:
        if topo is None:
            raise ConfigError(f"algorithm {name}: its schedule depends on the topology (it runs "
                              f"on {', '.join(spec.families)} topologies); give one with "
                              "topology= (--topology)")
        raise ConfigError(f"algorithm {name}: runs on {', '.join(spec.families)} topologies, "
                          f"not on topology {topo.spec}; give one with topology= (--topology)")
    if size is not None:
        sizes = checks.sizes(size, "size")
        if len(sizes) != 1:
            raise ConfigError(f"size: {size!r} gives {len(sizes)} sizes; verify takes one")
        size = float(sizes[0])
    if spec.sized is not None and size is None:
        size = float(DEFAULT_AT)
    net = None
    if spec.sized is not None:
        import inspect
        try:
            takes_blocks = "blocks" in inspect.signature(spec.sized).parameters
        except (TypeError, ValueError):
            takes_blocks = False
        if not takes_blocks:
            raise ConfigError(f"algorithm {name}: its sized hook takes no blocks= keyword; "
                              "verify needs sized(p, topology, network, sizes, options, "
                              "blocks=True) to build the plan with block content")
        net = checks.network(network, {}, "verify", ()) if network is not None else Network()
    elif network is not None:
        raise ConfigError(f"network: algorithm {name} does not plan for a network; "
                          "give it only for a size-dependent algorithm such as gentree")
    width = p if coll.reduces else 1   # origins a (rank, block) row counts
    origins = "·p" if coll.reduces else ""
    for cand in candidates:   # every schedule refused before any is built
        least = min_blocks(name, cand, p, coll.name)
        budget.check(_state_bytes(p, least, 0, width), lim,
                     f"verifying {name} on {p} ranks (a state of p·blocks{origins} = "
                     f"{p}·{least}{origins and '·' + str(p)} counts at least)")
    head = {"algorithm": spec.name if not raw else f"{spec.name}:"
            + ",".join(f"{k}={v}" for k, v in raw.items()),
            "topology": None if topo is None else topo.spec, "p": p, "size": size,
            "auto": auto, "collective": coll.name, "sized": spec.sized is not None}

    def schedules():
        for cand in candidates:
            if spec.sized is not None:
                for sched, _ in spec.sized(p, topo, net, np.array([size]), cand, blocks=True):
                    yield cand, sched
            else:
                yield cand, spec.build(p, topo, True, **cand)

    def proofs():
        for cand, sched in schedules():
            blocks, bufs = int(sched.num_blocks or 1), int(sched.num_buffers)
            entries = max((len(s.traffic.block_idx) for s in sched.steps
                           if s.traffic.has_blocks), default=0)
            tail = f"·{p}" if coll.reduces else ""
            shape = f"p·blocks{origins} = {p}·{blocks}{tail}" if bufs == 1 else \
                f"p·blocks·buffers{origins} = {p}·{blocks}·{bufs}{tail}"
            budget.check(_state_bytes(sched.p, blocks * bufs, entries, width), lim,
                         f"verifying {name} on {p} ranks (a state of {shape} counts and "
                         f"{entries} block entries in a step)")
            report = verify_schedule(sched, coll.name)
            yield VerifiedVariant(sched.variant, cand, sched.num_steps, sched.note, report)

    return head, (proofs() if lazy else list(proofs()))


def _count(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


def _state_bytes(p: int, blocks: int, entries: int, width: int | None = None) -> int:
    """The verifier's peak: int16 counts of every (rank, block·buffer,
    origin) — one origin a block (``width`` 1) for a collective that
    combines nothing — and per block entry of a step the senders' rows it
    gathers (three copies, int32 at most)."""
    width = p if width is None else width
    return 2 * p * blocks * width + 3 * 4 * entries * width


def _variant_text(ver: Verification, v: VerifiedVariant, all_steps: bool) -> str:
    rep = v.report
    where = f" on {ver.topology}" if ver.topology else " (rank ids, no topology)"
    opts = ",".join(f"{k}={x}" for k, x in sorted(v.options.items()))
    lines = [f"verified {ver.algorithm} on {ver.p} ranks{where}: variant "
             f"{v.variant or '-'}" + (f" ({opts})" if opts and opts != v.variant else "")]
    if ver.auto:
        lines[0] += f" [{ver.auto}=auto: every choice is verified]"
    if ver.size is not None:
        lines.append(f"  vector size n = {ver.size:.0f} bytes"
                     + (": the plan made for this size (an algorithm that plans per size; "
                        "another size's plan may differ)" if ver.sized else ""))
    proved = ("every rank holds every block with the contribution of each of the "
              f"{ver.p} ranks exactly once" if ver.collective == "allreduce"
              else COLLECTIVES[ver.collective].computes + ", exactly once")
    which = "" if ver.collective == "allreduce" else f" ({ver.collective})"
    lines.append(f"  proved{which}: {_count(rep.num_steps, 'step')}, "
                 f"{_count(rep.num_blocks, 'block')}"
                 + (f" ({rep.num_buffers} buffers each)" if rep.num_buffers > 1 else "") + "; "
                 f"after the last step {proved}; no contribution is reduced twice; no block "
                 "receives two copies in a step; each step's declared reduction work equals "
                 "its REDUCE flows'")
    if v.note:
        lines.append(f"  note: {v.note}")
    lines.append("  per step (busiest rank, fractions of n):")
    lines.append(f"  {'step':>5} {'label':<12} {'flows':>7} {'sent':>10} {'received':>10} "
                 f"{'reduced':>10}")
    rows = list(enumerate(rep.steps))
    # (hiding one step would take the line it saves)
    if not all_steps and len(rows) > MAX_STEPS_SHOWN + 1:
        half = MAX_STEPS_SHOWN // 2
        skipped = len(rows) - 2 * half
        rows = rows[:half] + [None] + rows[-half:]
    for row in rows:
        if row is None:
            lines.append(f"  {'…':>5} ({skipped} steps not shown; --all-steps lists them)")
            continue
        i, s = row
        lines.append(f"  {i:>5} {s.label[:12]:<12} {s.flows:>7} {s.max_sent:>10.4g} "
                     f"{s.max_received:>10.4g} {s.max_reduced:>10.4g}")
    unit = "" if ver.size is None else " (bytes at n)"
    lines.append(f"  per rank over the schedule, fractions of n{unit}: min / mean / max")
    for what, arr in (("sent", rep.sent), ("received", rep.received),
                      ("reduced", rep.reduced)):
        text = " / ".join(f"{x:.4g}" for x in (arr.min(), arr.mean(), arr.max()))
        if ver.size is not None:
            text += " (" + " / ".join(f"{x * ver.size:.4g}" for x in
                                      (arr.min(), arr.mean(), arr.max())) + ")"
        lines.append(f"    {what:<9} {text}")
    lines.append(f"  critical path (Σ over steps of the busiest rank): sent "
                 f"{rep.sent_path:.4g}·n, received {rep.received_path:.4g}·n, "
                 f"γ {rep.gamma_path:.4g}·n, δ {rep.delta_path:.4g}·n")
    return "\n".join(lines)
