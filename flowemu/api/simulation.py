"""The public Python entry points: :func:`simulate`, :func:`time_traffic`,
:func:`congestion` (and :func:`flowemu.flows`, in :mod:`flowemu.api.flows`).

Every argument is checked before any work (:mod:`.run`, :mod:`flowemu.core.checks`):
what a numpy/pandas user passes is accepted, anything else is a ConfigError
naming the argument; the memory a run needs is estimated before it is
allocated (:mod:`flowemu.core.budget`).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from ..algorithms import parse_algorithm_spec
from ..algorithms.collectives import get_collective
from ..algorithms.usertraffic import read_traffic
from ..core import checks
from ..core.errors import ConfigError
from ..core.network import Network
from ..engine.dataflow import check_sync
from ..engine.locality import cross_group_share
from ..models.genmodel import check_model, check_priceable, prediction
from ..whatif.conditions import WHATIF_COLUMNS, check_whatif
from ..whatif.faults import check_fail_policy
from .run import Run, placement_note, prepare_run, prepare_traffic, run_schedules

__all__ = ["RESULT_COLUMNS", "check_simulation", "congestion", "read_traffic", "simulate",
           "time_traffic"]

#: columns every result table starts with (one row per configuration and size)
RESULT_COLUMNS = ["topology", "nodes", "ranks", "algorithm", "model", "variant", "options",
                  "size_bytes", "time_s", "goodput_Bps", "steps", "ecmp", "seed", "placement",
                  "bandwidth_Bps", "link_latency_s", "hop_latency_s", "alpha_s", "gamma_s_per_B",
                  "delta_s_per_B", "incast_threshold", "incast_slope_s_per_B",
                  *WHATIF_COLUMNS, "note", "flowemu_version",
                  # added after the others (every earlier column keeps its place)
                  "sync", "collective", "algbw_Bps", "busbw_Bps", "cross_group_bytes"]


def _options_text(opts: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(opts.items()))


def simulate(topology, algorithm, sizes="32B..512MiB", *, ecmp: str = "split", seed: int = 0,
             ranks: int | None = None, placement=None, network: Network | str | None = None,
             threads: int | None = None, max_memory=None, model: str = "flow",
             fail=None, degrade=None, fail_policy: str = "strict", slow=None,
             background=None, sync: str = "barrier", collective: str = "allreduce",
             slowdown: bool = False, **network_params) -> pd.DataFrame:
    """Time a collective algorithm (an allreduce unless ``collective`` names
    another) on a topology for many sizes.

    Parameters
    ----------
    topology : str or Topology
        e.g. ``"torus:16x16"``.
    algorithm : str
        ``NAME[:key=val,...]`` of an algorithm of ``collective``, e.g.
        ``"recdoub:variant=auto"`` (``flowemu list`` shows each collective's).
    sizes : str, int, list, numpy array or pandas Series
        ``"32B..512MiB"``, ``"1KiB,1MiB"``, one byte count, or a sequence
        of byte counts / size strings: the size ``n`` as the collective
        reads it (:mod:`flowemu.algorithms.collectives`, nccl-tests'
        meaning: allgather the gathered vector, all-to-all what each rank
        sends in all, ...). A range ``LO..HI`` is every power of two within
        it, so ``"1MB..1GB"`` is 1MiB..512MiB. The sizes are sorted and a
        repeated size is run once: one row per distinct size, ascending.
    ecmp : {"split", "dor", "hash", "valiant", "dmodk", "adaptive"}
        The routing mode. ``"split"`` and ``"hash"`` apply to every family,
        ``"dor"`` to the grids (torus, mesh, HyperX, HammingMesh),
        ``"valiant"`` to Dragonfly, ``"dmodk"`` to fat trees. ``"adaptive"``
        applies to every family with ``"split"``: each step's split is
        rebalanced to minimise the most loaded link
        (:mod:`flowemu.engine.adaptive`).
    seed : int
        Seed of ``ecmp="hash"`` (0..2**63-1; numpy integers are fine).
    ranks : int, optional
        Number of ranks (default: every endpoint).
    placement : str, optional
        Where the ranks run (:mod:`flowemu.core.placement`): ``"linear"`` (the
        default: rank r on endpoint r), ``"random:SEED"`` or a file of
        endpoint ids, one per rank.
    network : Network, str or path, optional
        A Network, or a preset (:mod:`flowemu.core.presets`): a built-in name
        such as ``"genmodel-table5"`` or a TOML file (``flowemu fit --save``
        writes one). Or pass its fields as keywords: ``bandwidth="400Gb/s"``,
        ``link_latency="100ns"``, ``hop_latency``, ``alpha``, ``gamma``,
        ``delta``, ``incast_threshold``, ``incast_slope``; beside a preset,
        they override its values.
    threads : int, optional
        Distinct steps solved at once (default: ``FLOWEMU_THREADS`` or every
        core); the results do not depend on it.
    max_memory : str or int, optional
        Memory limit (``"8GiB"`` or bytes; default ``FLOWEMU_MAX_MEMORY`` or
        80 % of the available memory). A run estimated to need more is
        refused with a ConfigError before it allocates (see
        :mod:`flowemu.core.budget`).
    model : {"flow", "genmodel"}
        ``"flow"`` (default): the flow-level engine. ``"genmodel"``: the
        analytic GenModel prediction (:func:`flowemu.models.genmodel.prediction`;
        Table 2 rows of ring, recdoub, cps, hcps and reduce-broadcast on a
        single switch, plus registered predictors); no schedule is solved.
    fail : str or list of str, optional
        Failed links (:mod:`flowemu.whatif.faults`): selectors such as
        ``"random:4:7"``, ``"0,0-1,0"``, ``"spine:3"``, several joined by
        ``;`` or in a list. Routing takes the surviving graph.
    degrade : str or list of str, optional
        ``SELECTOR=F[:lat=M]``: bandwidth × F (0 < F <= 1), latency × M.
    fail_policy : {"strict", "reroute"}
        ``"strict"`` (default): a topology-bound algorithm (ring, bucket)
        whose flow lost every minimal path is refused; ``"reroute"`` routes
        it around the failure.
    slow : str, optional
        Slow ranks (:mod:`flowemu.whatif.stragglers`): ``"3=0.5"``,
        ``"0-3=0.25:compute"``, ``"random:4:1=0.5:network"``.
    background : str or path, optional
        Traffic sharing the network for the whole run
        (:mod:`flowemu.whatif.background`): ``"perm:0.5"``, ``"alltoall:0.2"``,
        ``"hotspot:0.8:0"`` or a traffic file.
    sync : {"barrier", "dataflow"}
        ``"barrier"`` (default): every step starts when every rank has ended
        the one before. ``"dataflow"``: a rank starts its next step when its
        own flows of this step are delivered and its reduction is done; flows
        enter and leave the max-min solve as they start and finish
        (:mod:`flowemu.engine.dataflow`; solved once per size).
    collective : str
        ``"allreduce"`` (default), ``"reduce_scatter"``, ``"allgather"``,
        ``"broadcast"``, ``"reduce"``, ``"gather"``, ``"scatter"`` or
        ``"alltoall"``.
    slowdown : bool
        Time the healthy network too (the same call without ``fail``,
        ``degrade``, ``slow`` and ``background``) and add
        ``healthy_time_s`` and ``slowdown`` (``time_s / healthy_time_s``,
        size by size; 1 without a what-if), as ``flowemu run`` prints them.

    Returns
    -------
    pandas.DataFrame
        One row per size with :data:`RESULT_COLUMNS`; ``goodput_Bps`` is
        size / time (so is ``algbw_Bps``, nccl-tests' algorithm bandwidth;
        ``busbw_Bps`` is it times nccl-tests' factor of the collective,
        2(p−1)/p for allreduce), ``model`` the model that timed it. With an ``auto``
        option the fastest variant per size is reported in ``variant``
        (model genmodel: the variant its predictor priced). The what-if
        columns hold the failures and degradation in canonical form, the
        policy, slow ranks and background (``""`` for none),
        ``failed_links`` (cables, both directions counted once) and
        ``background_Bps`` (the background's throughput over the run; NaN
        without one). ``slowdown=True`` (or :func:`flowemu.results.slowdown`
        on rows with their healthy twins) adds the slowdown against the
        healthy network.

    Raises
    ------
    ConfigError
        Any bad argument, named in the message (an unknown keyword too).
    """
    slowdown = checks.flag("slowdown", slowdown)
    common = {"ecmp": ecmp, "seed": seed, "ranks": ranks, "placement": placement,
              "network": network, "threads": threads, "max_memory": max_memory, "model": model,
              "sync": sync, "collective": collective, **network_params}
    df = pd.DataFrame(simulate_rows(topology, algorithm, sizes, fail=fail, degrade=degrade,
                                    fail_policy=fail_policy, slow=slow, background=background,
                                    **common), columns=RESULT_COLUMNS)
    if not slowdown:
        return df
    healthy = df if _healthy(fail, degrade, slow, background) else \
        pd.DataFrame(simulate_rows(topology, algorithm, sizes, **common), columns=RESULT_COLUMNS)
    return against_healthy(df, healthy)


def _healthy(*whatifs) -> bool:
    """Whether no what-if is given (None or empty text each)."""
    return all(w is None or (isinstance(w, str) and not w.strip()) for w in whatifs)


def against_healthy(df: pd.DataFrame, healthy: pd.DataFrame) -> pd.DataFrame:
    """``df`` with ``healthy_time_s``, the time of ``healthy``'s row of the
    same size (the same configuration on the healthy network), and
    ``slowdown`` = ``time_s / healthy_time_s``."""
    times = healthy.set_index("size_bytes")["time_s"]
    out = df.assign(healthy_time_s=df["size_bytes"].map(times))
    return out.assign(slowdown=out["time_s"] / out["healthy_time_s"])


def simulate_rows(topology, algorithm, sizes="32B..512MiB", *, ecmp: str = "split",
                  seed: int = 0, ranks: int | None = None, placement=None,
                  network: Network | str | None = None, threads: int | None = None,
                  max_memory=None, model: str = "flow", fail=None, degrade=None,
                  fail_policy: str = "strict", slow=None, background=None,
                  sync: str = "barrier", collective: str = "allreduce",
                  **network_params) -> list[dict]:
    """The rows of :func:`simulate` as dicts, one per size (keys
    :data:`RESULT_COLUMNS`): for a sweep, which builds one frame per batch of
    configurations (a frame per configuration would cost about a quarter of
    the time of a small one)."""
    run = check_simulation(topology, algorithm, sizes, ecmp=ecmp, seed=seed, ranks=ranks,
                           placement=placement, network=network, threads=threads,
                           max_memory=max_memory, model=model, fail=fail, degrade=degrade,
                           fail_policy=fail_policy, slow=slow, background=background,
                           sync=sync, collective=collective, **network_params)
    if run.model == "genmodel":
        return _predicted(run, algorithm)
    n, spec = run.sizes, run.spec
    times, chosen, carried = [], [], []
    for cand in run.candidates:
        for sched, serves in run_schedules(run, cand, n):
            if run.sync == "dataflow":
                t, bg = run.dataflow(sched).times_and_background(n)
            else:
                prof = run.profile(sched)
                t = prof.times(n)
                bg = prof.background_throughput(n) if "background_rate" in prof.info \
                    else np.full(len(n), np.nan)
                del prof
            if serves is not None:   # a plan per size (gentree): only its sizes
                t = np.where(np.isin(np.arange(len(n)), serves), t, np.inf)
            times.append(t)
            chosen.append((sched.variant, sched.num_steps, sched.note, cand,
                           cross_group_share(sched, run.topology, run.mapping),
                           sched.collective))
            carried.append(bg)
            # what a row needs is kept, not the schedule: an `auto` option's
            # candidates are built one after the other, each freed before the
            # next (the memory estimate charges one schedule at a time)
            del sched
    times = np.vstack(times)
    best = np.argmin(times, axis=0)
    base = run.row
    rows = []
    for j, size in enumerate(n):
        variant, num_steps, note, cand, cross, collective = chosen[best[j]]
        # (an allreduce algorithm may compute another collective: ina:collective=reduce)
        factor = get_collective(collective).busbw_factor(run.p)
        t = float(times[best[j], j])
        algbw = size / t if t > 0 else np.inf
        rows.append({**base, "algorithm": spec.name, "model": "flow", "variant": variant,
                     "options": _options_text(cand), "size_bytes": int(size), "time_s": t,
                     "goodput_Bps": algbw, "steps": num_steps,
                     "background_Bps": float(carried[best[j]][j]), "note": note,
                     "algbw_Bps": algbw, "busbw_Bps": algbw * factor, "collective": collective,
                     "cross_group_bytes": cross * size})
    return rows


def check_simulation(topology, algorithm, sizes="32B..512MiB", *, ecmp: str = "split",
                     seed: int = 0, ranks: int | None = None, placement=None,
                     network: Network | str | None = None, threads: int | None = None,
                     max_memory=None, model: str = "flow", fail=None, degrade=None,
                     fail_policy: str = "strict", slow=None, background=None,
                     sync: str = "barrier", collective: str = "allreduce",
                     schedules: bool = False, **network_params) -> Run:
    """Every check :func:`simulate` makes before it solves, and nothing more:
    the arguments, the topology, the ranks on it, the placement, the what-ifs
    applied (a rank cut off by failures), the memory estimate and, under
    ``fail_policy="strict"``, a topology-bound algorithm (ring, bucket) that
    relies on a failed link (its schedule is built for that check only);
    with ``model="genmodel"``, whether GenModel can price the run. Arguments
    as for :func:`simulate`; with ``schedules=True`` every schedule the run
    would time is also built (and dropped) here, so that what only building
    finds (an option the topology's shape does not allow, such as ring's
    ``ports=4`` off a 2-D torus) is refused now: a sweep's up-front check
    does so, once per topology, algorithm and arguments.

    Returns
    -------
    Run
        The checked run (``simulate`` times it); ``run.model`` is the model.

    Raises
    ------
    ConfigError
        What ``simulate`` would refuse, named as it names it. What only a
        solve finds (a SolverError) and the memory of the schedule's real
        routes are not checked here.
    """
    model = check_model(model)
    sync = check_sync(sync)
    collective = get_collective(collective).name
    if model == "genmodel" and collective != "allreduce":
        raise ConfigError(f"collective: {collective!r} needs model='flow' (--model flow): "
                          "GenModel prices allreduce algorithms only")
    if model == "genmodel" and sync != "barrier":
        raise ConfigError(f"sync: {sync!r} needs model='flow' (--model flow): the analytic "
                          "GenModel prices barrier-synchronised steps only")
    whatif = check_whatif(fail, degrade, fail_policy, slow, background)
    if model == "genmodel" and not whatif.healthy:
        given = ", ".join(f"{k} {v!r}" for k, v in (("fail", whatif.fail),
                          ("degrade", whatif.degrade), ("slow", whatif.slow),
                          ("background", whatif.background)) if v)
        raise ConfigError(f"model genmodel: {given}: failures, degraded links, slow ranks and "
                          "background traffic are not in the analytic model; use model='flow' "
                          "(--model flow)")
    run = prepare_run("simulate", topology, algorithm, ecmp=ecmp, seed=seed, ranks=ranks,
                   network=network, network_params=network_params, sizes=sizes,
                   threads=threads, max_memory=max_memory, placement=placement, whatif=whatif,
                   collective=collective)
    if sync != "barrier" and getattr(run.spec, "barrier_only", False):
        raise ConfigError(f"sync: {sync!r} does not apply to {run.spec.name} (its in-network "
                          "aggregation streams are timed at a barrier); use sync='barrier'")
    run = replace(run, model=model, sync=sync)
    if model == "genmodel" and run.whatif is not None:   # (the faults of a faulted topology)
        raise ConfigError(f"model genmodel: {run.topology.spec} has failed or degraded links "
                          f"(fail {run.whatif.columns['fail']!r}); they are not in the "
                          "analytic model; use model='flow' (--model flow)")
    if model == "genmodel":
        _, raw = parse_algorithm_spec(algorithm)
        check_priceable(run.topology, run.p, run.spec.name, run.spec.parse_options(raw),
                        run.network)
    elif schedules or run.breaks_bound_algorithm():
        strict = run.breaks_bound_algorithm()
        # a plan per size (gentree) is checked at every size only where a failure
        # may break it; what its options ask of the shape shows at any size
        sizes = run.sizes if strict else run.sizes[:1]
        for cand in run.candidates:
            for sched, _ in run_schedules(run, cand, sizes):
                if strict:
                    check_fail_policy(sched, run.topology, run.mapping, "strict", run.spec)
                del sched
    return run


def _predicted(run: Run, algorithm: str) -> list[dict]:
    """The rows of ``model="genmodel"``: the algorithm's GenModel predictor
    (options parsed, ``auto`` left to it) instead of a schedule and a solve."""
    _, raw = parse_algorithm_spec(algorithm)
    opts = run.spec.parse_options(raw)
    pred = prediction(run.topology, run.p, run.spec.name, opts, run.sizes, run.network)
    if run.placement.kind != "linear" and run.spec.sized is not None:
        pred = replace(pred, note="; ".join(filter(None, (pred.note, placement_note(run)))))
    base = run.row
    n, t = run.sizes, pred.seconds
    with np.errstate(divide="ignore"):
        goodput = np.where(t > 0, n / np.where(t > 0, t, 1.0), np.inf)
    per = lambda v, j: v if np.isscalar(v) else v[j]
    rows = [{**base, "algorithm": run.spec.name, "model": "genmodel",
             "variant": per(pred.variant, j), "options": _options_text(opts),
             "size_bytes": int(size), "time_s": float(t[j]), "goodput_Bps": float(goodput[j]),
             "steps": per(pred.steps, j), "note": pred.note}
            for j, size in enumerate(n)]
    return rows


def _whole(total: float):
    """A traffic's bytes as ``size_bytes``: an integer, as an algorithm's
    sizes are, unless its flows carry fractions of a byte."""
    return int(total) if float(total).is_integer() else float(total)


def time_traffic(topology, traffic, *, ecmp: str = "split", seed: int = 0, placement=None,
                 network: Network | None = None, name: str | None = None,
                 threads: int | None = None, max_memory=None, fail=None, degrade=None,
                 fail_policy: str = "strict", slow=None, background=None,
                 sync: str = "barrier", slowdown: bool = False,
                 **network_params) -> pd.DataFrame:
    """Time a user-supplied step-wise traffic matrix.

    Parameters
    ----------
    topology : str or Topology
    traffic : str, Path, pandas.DataFrame, Traffic or list of Traffic
        A CSV/parquet file or a DataFrame with exactly the columns ``step,
        src, dst, bytes`` (src/dst rank ids; one step per distinct ``step``,
        in ascending order), or Traffic objects with absolute bytes in
        ``share``.
    ecmp, seed, placement, network, threads, max_memory, **network_params
        As for :func:`simulate` (the placement maps the traffic's ranks).
    fail, degrade, fail_policy, slow, background, slowdown
        What-ifs, and their slowdown against the healthy network, as for
        :func:`simulate`; the traffic is always routed over the surviving
        links, so ``fail_policy`` can only be ``"strict"`` (a ConfigError
        otherwise).
    sync : {"barrier", "dataflow"}
        As for :func:`simulate`: under ``"dataflow"`` a rank's step starts
        when its own flows of the step before are delivered.
    name : str, optional
        The ``variant`` of the result row (default: the file name, or
        ``"traffic"``).

    Returns
    -------
    pandas.DataFrame
        One row with :data:`RESULT_COLUMNS`: ``size_bytes`` is the total
        bytes of all flows and ``goodput_Bps`` that total over the time.
    """
    if checks.flag("slowdown", slowdown):   # the same call, and without the what-ifs
        common = {"ecmp": ecmp, "seed": seed, "placement": placement, "network": network,
                  "name": name, "threads": threads, "max_memory": max_memory, "sync": sync,
                  **network_params}
        df = time_traffic(topology, traffic, fail=fail, degrade=degrade,
                          fail_policy=fail_policy, slow=slow, background=background, **common)
        healthy = df if _healthy(fail, degrade, slow, background) else \
            time_traffic(topology, traffic, **common)
        return against_healthy(df, healthy)
    sync = check_sync(sync)
    whatif = check_whatif(fail, degrade, fail_policy, slow, background)
    run, sched = prepare_traffic("time_traffic", topology, traffic, ecmp=ecmp, seed=seed,
                                 network=network, network_params=network_params,
                                 threads=threads, max_memory=max_memory, placement=placement,
                                 whatif=whatif, name=name, sync=sync)
    if sync == "dataflow":
        times, bg = run.dataflow(sched).times_and_background([1.0])
        t, carried = float(times[0]), float(bg[0])
    else:
        prof = run.profile(sched)
        t = float(prof.times([1.0])[0])
        carried = float(prof.background_throughput([1.0])[0]) \
            if "background_rate" in prof.info else np.nan
    total = float(sum(s.traffic.share.sum() * k
                      for s, k in zip(sched.steps.patterns, sched.steps.counts().tolist())))
    row = {**run.row, "algorithm": "traffic",
           "cross_group_bytes": cross_group_share(sched, run.topology, run.mapping),
           "model": "flow", "variant": sched.variant, "options": "", "size_bytes": _whole(total),
           "time_s": t, "goodput_Bps": total / t if t > 0 else np.inf, "steps": sched.num_steps,
           "background_Bps": carried, "note": sched.note}
    return pd.DataFrame([row], columns=RESULT_COLUMNS)


def congestion(topology, algorithm, *, ecmp: str = "split", seed: int = 0,
               ranks: int | None = None, placement=None, network: Network | None = None,
               threads: int | None = None, max_memory=None, fail=None, degrade=None,
               fail_policy: str = "strict", slow=None, background=None,
               collective: str = "allreduce",
               **network_params) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-step congestion of an algorithm and its deficiencies (Swing paper §2.2).

    Arguments as for :func:`simulate` (without sizes). Returns ``(steps,
    summary)``: ``steps`` has one row per step and variant (``variant,
    step, label, flows, max_flows_per_link, max_link_load,
    max_port_injection, load_vs_ideal``; loads in bytes per byte of the
    vector size n); ``summary`` one row per variant with ``steps``, ``psi``
    (bandwidth deficiency Ψ), ``xi`` (congestion deficiency Ξ), ``psi_xi``
    (their product: bandwidth time relative to the optimal 2(p−1)/p·n spread
    over every port) and ``note`` (as in the result rows: what the algorithm
    did that was not asked for). See
    :meth:`flowemu.engine.steptimes.Profile.congestion_report` for the definitions.
    With an ``auto`` option every variant is reported.

    Ψ and Ξ count bytes on links and ports, not their capacities: failed
    links (``fail``) change them through the routes, while degraded links,
    slow ranks and a background do not, and are refused here (a fat tree's
    taper is accepted: Ψ and Ξ count the bytes on its links, not the
    capacity the taper leaves them); :func:`link_loads` gives each link's
    utilisation and
    :func:`simulate` the times under them.
    """
    unseen = [name for name, value in (("degrade", degrade), ("slow", slow),
                                       ("background", background))
              if value is not None and value != "" and value != []]
    if unseen:
        raise ConfigError(f"{', '.join(unseen)}: congestion counts the bytes on links and ports "
                          "(Ψ, Ξ), which degraded links, slow ranks and a background do not "
                          "change; leave them out, or use link_loads(...) for each link's "
                          "utilisation and simulate(...) for the times under them")
    whatif = check_whatif(fail, degrade, fail_policy, slow, background)
    run = prepare_run("congestion", topology, algorithm, ecmp=ecmp, seed=seed, ranks=ranks,
                   network=network, network_params=network_params, threads=threads,
                   max_memory=max_memory, placement=placement, whatif=whatif,
                   collective=collective)
    step_frames, rows = [], []
    for cand in run.candidates:
        sched = run_schedules(run, cand, None)[0][0]
        prof = run.profile(sched, congestion=True)
        steps, summary = prof.congestion_report()
        steps.insert(0, "variant", sched.variant)
        step_frames.append(steps)
        rows.append({"topology": run.topology.spec, "algorithm": run.spec.name,
                     "collective": sched.collective,
                     "variant": sched.variant, "options": _options_text(cand),
                     "steps": sched.num_steps, **summary, "note": sched.note})
        del sched, prof   # freed before the next candidate is built (see simulate_rows)
    return pd.concat(step_frames, ignore_index=True), pd.DataFrame(rows)
