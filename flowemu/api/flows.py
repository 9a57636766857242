"""Per-flow detail of a run: :func:`flows` (and ``flowemu run --flows-out``).

One row per flow of the selected steps, with its route, rate and finish
time at one vector size (see :func:`flow_table`). The dump's
memory is estimated before anything is routed — rows and route entries are
counted first — and a dump that would not fit is refused with a ConfigError.
"""

from __future__ import annotations

import io
import re
import sys
import time
from dataclasses import dataclass

import numpy as np

from ..algorithms.base import Schedule
from ..core import budget, checks
from ..core.errors import ConfigError, show
from ..core.network import Network
from ..core.outputs import check_writable, output_format, write_atomic
from ..engine.context import make_context
from ..engine.memory import check_memory
from ..engine.steps import flow_latency, route_step, solve_step, solve_streams
from ..topology.base import Routes, Topology
from ..whatif.conditions import check_whatif
from ..whatif.faults import check_fail_policy
from .run import check_source, prepare_run, prepare_traffic, run_schedules
from .simulation import simulate

#: rows above which a dump reports progress on stderr even when it is not a tty
PROGRESS_ROWS = 100_000


def flows(topology, algorithm=None, *, traffic=None, size=None, steps=None,
          ecmp: str = "split", seed: int = 0, ranks: int | None = None, placement=None,
          network=None, threads: int | None = None, max_memory=None, progress=None,
          fail=None, degrade=None, fail_policy: str = "strict", slow=None, background=None,
          collective: str = "allreduce", **network_params):
    """Per-flow detail of an algorithm (at one vector size) or of user traffic.

    Parameters
    ----------
    topology : str or Topology
    algorithm : str, optional
        ``NAME[:key=val,...]``; with an ``auto`` option the variant fastest
        at ``size`` is detailed. Exactly one of ``algorithm`` and ``traffic``.
    traffic : str, Path, DataFrame, Traffic or list of Traffic, optional
        User traffic as for :func:`flowemu.time_traffic` (absolute bytes;
        ``size`` does not apply).
    size : str or int, optional
        Vector size of the algorithm (``"4MiB"``, bytes; default 1 MiB).
    steps : str, int or list, optional
        Steps to detail (default all): indices (``"0,3,5-7"``, ``3``,
        ``[0, 3]``) or step labels (``"rs0"``, ``"step3"`` for traffic),
        mixed freely; listed order, duplicates dropped.
    ecmp, seed, ranks, placement, network, threads, max_memory, **network_params
        As for :func:`flowemu.simulate` (``ranks`` only with an algorithm).
    collective : str
        The collective the algorithm computes (default ``"allreduce"``), as
        for :func:`flowemu.simulate`.
    fail, degrade, fail_policy, slow, background
        What-ifs, as for :func:`flowemu.simulate`; the dump lists the
        collective's flows (a background shares the links, unlisted).
        ``traffic`` is always routed over the surviving links:
        ``fail_policy`` is ``"strict"`` with it.
    progress : bool, optional
        A progress line per step on stderr; default: when stderr is a
        terminal or the dump has more than 100,000 rows.

    Returns
    -------
    pandas.DataFrame
        Columns ``step, label, src, dst, src_node, dst_node, bytes, hops,
        rate_Bps, finish_s, links, path`` (:data:`FLOW_COLUMNS`);
        ``step`` is the step's index in the schedule, ``label`` its label
        (``step<N>`` with the traffic table's step number N). ``rate_Bps``
        is the flow's max-min rate at the start of its step (where flows
        finish at different times the others' rates change as they do, so
        ``bytes / rate_Bps`` is not its transfer time), ``finish_s`` when
        its last byte arrives, from the step's start (its latency included),
        ``links`` each route entry as ``link_id:fraction`` and
        ``path`` the node sequence (``a>b>c``) of a flow on one path, or its
        directed edges (``a>b b>c ...``, fractions in ``links``) where it is
        spread over several (``split``, ``adaptive``, ``valiant``).

    Raises
    ------
    ConfigError
        A bad argument, or a dump estimated to need more than the memory
        limit (rows and route entries are counted before anything is
        routed; see :func:`flowemu.core.budget.flow_dump_bytes`).
    """
    whatif = check_whatif(fail, degrade, fail_policy, slow, background)
    plan = _plan(topology, algorithm, traffic, size, steps, ecmp, seed, ranks, placement,
                 network, threads, max_memory, progress, network_params, whatif, collective)
    budget.check(budget.flow_dump_bytes(plan.rows, plan.pattern_rows, plan.entries,
                                        plan.largest_entries), plan.limit, plan.what)

    report = plan.progress()
    table = flow_table(plan.schedule, plan.topology, plan.network, plan.size, ecmp=plan.ecmp,
                       seed=plan.seed, mapping=plan.mapping, steps=plan.indices,
                       progress=report, limit=plan.limit, **plan.load)
    if report is not None:
        report.finish()
    return table


def write_flows(path, topology, algorithm=None, *, traffic=None, size=None, steps=None,
                ecmp: str = "split", seed: int = 0, ranks: int | None = None, placement=None,
                network=None, threads: int | None = None, max_memory=None, progress=None,
                fail=None, degrade=None, fail_policy: str = "strict", slow=None,
                background=None, collective: str = "allreduce", **network_params) -> int:
    """Write the flow dump of :func:`flows` to ``path`` step by step.

    CSV, or parquet for a ``.parquet``/``.pq`` name; written to a temporary
    file beside ``path`` and renamed into place, so ``path`` is either the
    whole dump or untouched. Streaming bounds memory by the patterns still to
    be written and one step's rows (not the whole table), so dumps larger
    than memory can be written when the disk holds them. Returns the rows
    written. Arguments as for :func:`flows`.
    """
    from pathlib import Path


    if not isinstance(path, (str, Path)):
        raise ConfigError(f"path: {show(path)} is not a file name")
    # the CLI's one check and extension rule (CSV unless .parquet/.pq)
    parquet = output_format(str(path), None, ("csv", "parquet"), option="path",
                            default="csv") == "parquet"
    target = check_writable(path, "path")
    whatif = check_whatif(fail, degrade, fail_policy, slow, background)
    plan = _plan(topology, algorithm, traffic, size, steps, ecmp, seed, ranks, placement,
                 network, threads, max_memory, progress, network_params, whatif, collective)
    budget.check(budget.flow_dump_bytes(plan.largest_rows, plan.pattern_rows, plan.entries,
                                        plan.largest_entries), plan.limit, plan.what)
    report = plan.progress()
    written = 0

    def stream(fh) -> None:
        nonlocal written
        with _Sink(fh, parquet) as sink:
            for frame in iter_flow_frames(plan.schedule, plan.topology, plan.network, plan.size,
                                          ecmp=plan.ecmp, seed=plan.seed,
                                          mapping=plan.mapping, steps=plan.indices,
                                          progress=report, limit=plan.limit, **plan.load):
                if frame is not None:
                    sink.write(frame)
                    written += len(frame)
            if written == 0:
                sink.write(empty_flow_table())

    try:   # one mechanism for every output: a temporary file renamed into place
        write_atomic(target, "path", stream)
    finally:
        if report is not None:
            report.finish()
    return written


class _Sink:
    """Appends DataFrames to one CSV (header once) or parquet stream in an open
    binary file."""

    def __init__(self, fh, parquet: bool):
        self.fh, self.parquet = fh, parquet
        self.handle = None

    def __enter__(self):
        return self

    def write(self, frame) -> None:
        if self.parquet:
            import pyarrow as pa
            import pyarrow.parquet as pq

            table = pa.Table.from_pandas(frame, preserve_index=False)
            if self.handle is None:
                self.handle = pq.ParquetWriter(self.fh, table.schema)
            self.handle.write_table(table.cast(self.handle.schema))
        else:
            first = self.handle is None
            if first:
                self.handle = io.TextIOWrapper(self.fh, encoding="utf-8", newline="")
            frame.to_csv(self.handle, index=False, header=first)

    def __exit__(self, *exc) -> None:
        if self.handle is None:
            return
        if self.parquet:
            self.handle.close()
        else:
            self.handle.flush()
            self.handle.detach()   # the caller syncs and closes the file itself


@dataclass
class _Plan:
    """A checked flow dump: what to detail and how big it is."""

    schedule: object
    topology: object
    network: object
    size: float
    ecmp: str
    seed: int
    mapping: object
    indices: list
    limit: budget.Limit
    what: str
    rows: int
    largest_rows: int
    pattern_rows: int
    entries: int
    largest_entries: int
    show_progress: bool | None
    load: dict   #: ``background``/``slow`` of the what-ifs (None for none)

    def progress(self):
        show_it = (sys.stderr.isatty() or self.rows > PROGRESS_ROWS) \
            if self.show_progress is None else self.show_progress
        return _Progress(self.schedule, self.rows) if show_it else None


def _plan(topology, algorithm, traffic, size, steps, ecmp, seed, ranks, placement, network,
          threads, max_memory, progress, network_params, whatif,
          collective="allreduce") -> _Plan:
    """Check every argument of a dump, build its schedule, select its steps
    and count its rows and route entries (nothing routed yet)."""

    if progress is not None:
        progress = checks.flag("progress", progress)
    check_source("flows", algorithm, traffic)
    if traffic is not None:
        run, sched = prepare_traffic("flows", topology, traffic, ecmp=ecmp, seed=seed,
                                     network=network, network_params=network_params,
                                     threads=threads, max_memory=max_memory,
                                     placement=placement, whatif=whatif, ranks=ranks,
                                     size=size, collective=collective)
        nbytes, what = 1.0, "traffic"
    else:
        sizes = checks.sizes(["1MiB" if size is None else size], "size")
        run = prepare_run("flows", topology, algorithm, ecmp=ecmp, seed=seed, ranks=ranks,
                       network=network, network_params=network_params, sizes=sizes,
                       threads=threads, max_memory=max_memory, placement=placement,
                       whatif=whatif, collective=collective)
        nbytes = float(run.sizes[0])
        cand = run.candidates[0]
        if len(run.candidates) > 1:   # an auto option: detail the variant fastest at size
            best = simulate(topology, algorithm, [nbytes], ecmp=run.ecmp, seed=run.seed,
                            ranks=ranks, placement=run.placement, network=run.network,
                            threads=run.threads, max_memory=run.limit,
                            fail=whatif.fail or None, degrade=whatif.degrade or None,
                            fail_policy=whatif.fail_policy, slow=whatif.slow or None,
                            background=whatif.background or None)
            cand = next(c for c in run.candidates
                        if c[run.spec.auto_param] == best["variant"].iloc[0])
        sched = run_schedules(run, cand, np.array([nbytes]))[0][0]
        what = run.spec.name
    # (run.topology has the what-ifs' faults)
    topo, net, lim, ecmp, seed, mapping = (run.topology, run.network, run.limit, run.ecmp,
                                           run.seed, run.mapping)
    what = f"{topo.spec} {what}"
    indices = select_steps(sched, steps)
    load = {"background": None, "slow": None}
    if run.whatif is not None:
        check_fail_policy(sched, topo, mapping, whatif.fail_policy)
        load = {"background": run.whatif.background, "slow": run.whatif.slow}
    ctx = make_context(topo, net, ecmp, seed, mapping, sched.p, **load, limit=lim)
    check_memory(ctx, sched, 1, lim)   # the dump solves one step at a time
    rows, largest_rows, pattern_rows, entries, largest = _dump_size(ctx, sched, indices)
    what = f"the flow dump of {what} ({rows} flows, {entries} route entries)"
    return _Plan(sched, topo, net, nbytes, ecmp, seed, mapping, indices, lim, what, rows, largest_rows,
                 pattern_rows, entries, largest, progress, load)


def _dump_size(ctx, schedule, indices) -> tuple[int, int, int, int, int]:
    """``(rows, largest step's rows, pattern rows, pattern entries, largest
    pattern's entries)`` of the selected steps: every step is a block of
    rows; a repeated traffic pattern's texts are built once and shared."""
    counted: dict = {}
    rows = largest_rows = 0
    for k in indices:
        tr = schedule.steps[k].traffic
        if not tr.num_flows:
            continue
        if id(tr) not in counted:
            counted[id(tr)] = (tr.num_flows, ctx.topology.route_entries(
                ctx.mapping[tr.src], ctx.mapping[tr.dst], ctx.ecmp))
        rows += tr.num_flows
        largest_rows = max(largest_rows, tr.num_flows)
    pattern_rows = sum(f for f, _ in counted.values())
    entries = [e for _, e in counted.values()]
    return rows, largest_rows, pattern_rows, sum(entries), max(entries, default=0)


_RANGE = re.compile(r"^(\d+)\s*-\s*(\d+)$")


def select_steps(schedule, steps) -> list[int]:
    """Step indices selected by ``steps`` (see :func:`flows`), in the listed
    order without duplicates; None selects every step."""
    n = schedule.num_steps
    if steps is None:
        return list(range(n))
    if isinstance(steps, str):
        items = [s.strip() for s in steps.split(",")]
    elif checks.is_integer(steps):
        items = [steps]
    elif isinstance(steps, (list, tuple, range, np.ndarray)):
        items = list(steps.tolist() if isinstance(steps, np.ndarray) else steps)
    else:
        raise ConfigError(f"steps: {show(steps)} is not allowed; expected step indices or "
                          "labels such as '0,3,5-7' or 'rs0'")
    labels: dict = {}
    for k, step in enumerate(schedule.steps):
        labels.setdefault(step.label, []).append(k)
    out: list[int] = []
    for item in items:
        out.extend(_one_selection(item, n, labels))
    if not out:
        raise ConfigError(f"steps: {show(steps)} selects no step")
    return list(dict.fromkeys(out))


def _one_selection(item, n: int, labels: dict) -> list[int]:
    if isinstance(item, np.generic):
        item = item.item()
    if checks.is_integer(item):
        item = int(item)
        if not 0 <= item < n:
            raise ConfigError(f"steps: step {item} does not exist; the schedule has steps "
                              f"0..{n - 1}")
        return [item]
    if not isinstance(item, str) or not item:
        raise ConfigError(f"steps: {show(item)} is not allowed; expected a step index, a "
                          "range a-b or a step label")
    if item in labels:   # a label wins over an index reading
        return labels[item]
    if item.isascii() and item.isdigit():
        return _one_selection(int(item), n, labels)
    m = _RANGE.match(item)
    if m:
        lo, hi = int(m.group(1)), int(m.group(2))
        if lo > hi or hi >= n:
            raise ConfigError(f"steps: range {item!r} is not allowed; expected a-b with "
                              f"0 <= a <= b <= {n - 1}")
        return list(range(lo, hi + 1))
    known = list(labels)
    shown = ", ".join(known[:8]) + (", ..." if len(known) > 8 else "")
    raise ConfigError(f"steps: no step is labelled {item!r}; labels: {shown} (or indices "
                      f"0..{n - 1})")


class _Progress:
    """A line per step on stderr (rewritten in place on a terminal)."""

    def __init__(self, schedule, rows: int):
        self.schedule = schedule
        self.rows = rows
        self.done_rows = 0
        self.start = time.monotonic()
        self.tty = sys.stderr.isatty()

    def __call__(self, done: int, total: int, index: int, flows: int) -> None:
        self.done_rows += flows
        label = self.schedule.steps[index].label
        share = self.done_rows / self.rows if self.rows else 1.0
        line = (f"flowemu: flows: step {done}/{total} ({label}), {self.done_rows}/{self.rows} "
                f"rows ({share:.0%}), {time.monotonic() - self.start:.1f} s")
        print(("\r" + line) if self.tty else line, end="" if self.tty else "\n",
              file=sys.stderr, flush=True)

    def finish(self) -> None:
        if self.tty:
            print(file=sys.stderr, flush=True)


# ------------------------------------------------------------------ flow detail

#: columns of :func:`flow_table`
FLOW_COLUMNS = ["step", "label", "src", "dst", "src_node", "dst_node", "bytes", "hops",
                "rate_Bps", "finish_s", "links", "path"]


def flow_table(schedule: Schedule, topology: Topology, network: Network | None, size: float, *,
               ecmp: str = "split", seed: int = 0, mapping=None, steps=None, progress=None,
               background=None, slow=None, limit=None):
    """Per-flow detail at one vector size: a DataFrame with columns
    ``step, label, src, dst, src_node, dst_node, bytes, hops, rate_Bps,
    finish_s, links, path`` as :func:`flows` describes them.

    Parameters
    ----------
    steps : sequence of int, optional
        Indices of the steps to detail (default: every step), in this order.
    progress : callable ``(done, total, step_index, flows)``, optional
        Called after each step.
    background, slow : optional
        A background and slow ranks (:mod:`flowemu.whatif.background`,
        :mod:`flowemu.whatif.stragglers`) sharing every step.
    limit : optional
        The memory limit routing a background is checked against
        (:func:`flowemu.core.budget.limit`; default: the environment's).
    """
    import pandas as pd

    frames = [f for f in iter_flow_frames(schedule, topology, network, size, ecmp=ecmp,
                                          seed=seed, mapping=mapping, steps=steps,
                                          progress=progress, background=background, slow=slow,
                                          limit=limit)
              if f is not None]
    if not frames:
        return empty_flow_table()
    return pd.concat(frames, ignore_index=True)


def empty_flow_table():
    """A flow table without rows, with the columns' dtypes."""
    import pandas as pd

    return pd.DataFrame({"step": np.zeros(0, np.int64), "label": np.zeros(0, str),
                         "src": np.zeros(0, np.int32), "dst": np.zeros(0, np.int32),
                         "src_node": np.zeros(0, np.int32), "dst_node": np.zeros(0, np.int32),
                         "bytes": np.zeros(0), "hops": np.zeros(0, np.int32),
                         "rate_Bps": np.zeros(0), "finish_s": np.zeros(0),
                         "links": np.zeros(0, str), "path": np.zeros(0, str)})


def iter_flow_frames(schedule: Schedule, topology: Topology, network: Network | None,
                     size: float, *, ecmp: str = "split", seed: int = 0, mapping=None,
                     steps=None, progress=None, background=None, slow=None, limit=None):
    """:func:`flow_table` one step at a time: yields a DataFrame per selected
    step (None for a step without flows), so that a writer can stream them.

    Steps that repeat one traffic pattern are routed, solved and described
    once; a pattern's routes and texts are dropped after its last selected
    step, so memory holds only the patterns still to be used.
    """
    import pandas as pd

    network = network or Network()
    ctx = make_context(topology, network, ecmp, seed, mapping, schedule.p, background, slow,
                       limit)
    indices = list(range(schedule.num_steps) if steps is None else steps)
    last_use = {id(schedule.steps[k].traffic): i for i, k in enumerate(indices)}
    done, names = {}, {}
    for i, k in enumerate(indices):
        step = schedule.steps[k]
        tr = step.traffic
        frame = None
        if tr.num_flows:
            hit = done.get(id(tr))
            if hit is None:
                if tr.aggregation is not None:   # streams: one row each, its tree's links
                    sol, streams = solve_streams(ctx, tr, tr.share * size, step.label)
                    routes, src, dst = streams.link_routes, streams.root, streams.root
                    latency, how = streams.latency, "split"
                else:
                    routes, src, dst = route_step(ctx, tr)
                    sol = solve_step(ctx, routes, dst, tr.share * size, step.label, src)
                    latency, how = flow_latency(ctx, routes), ecmp
                links, paths = describe_paths(topology, routes, src, how, names)
                hit = done[id(tr)] = (routes, src, dst, sol, links, paths, latency)
            routes, src, dst, sol, links, paths, latency = hit
            frame = pd.DataFrame({
                "step": np.full(tr.num_flows, k, dtype=np.int64), "label": step.label,
                "src": tr.src, "dst": tr.dst, "src_node": src,
                "dst_node": dst, "bytes": tr.share * size,
                "hops": routes.hops, "rate_Bps": sol.rate0,
                "finish_s": latency + sol.finish,
                "links": links, "path": paths,
            })
            if last_use[id(tr)] == i:
                del done[id(tr)]
        if progress is not None:
            progress(i + 1, len(indices), k, tr.num_flows)
        yield frame


def describe_paths(topology: Topology, routes: Routes, src: np.ndarray, ecmp: str,
                   names: dict | None = None):
    """The ``links`` and ``path`` texts of every flow, object[F] each.

    Vectorized for large dumps (~0.5 µs per route entry, several times a
    Python loop over flows): node and link ids become text once per
    topology (kept in ``names`` across steps), each entry's pieces are
    gathered into one object array by fancy indexing, and a step's texts are
    made by one ``str.join`` and ``split``."""
    link = routes.link
    names = {} if names is None else names
    if "link" not in names and topology.num_links <= 4 * max(len(link), 1):
        names["link"] = _text(np.arange(topology.num_links))
        names["node"] = _text(np.arange(topology.num_nodes))
    if "link" in names:
        link_text, head, tail = (names["link"][link], names["node"][topology.link_src[link]],
                                 names["node"][topology.link_dst[link]])
    else:   # a few flows on a huge topology: only their ids become text
        link_text, head, tail = (_text(link), _text(topology.link_src[link]),
                                 _text(topology.link_dst[link]))
    frac_values, frac_index = np.unique(routes.frac, return_inverse=True)
    frac_text = np.array([f":{v:.6g}" for v in frac_values.tolist()], dtype=object)
    ptr = routes.flow_ptr
    links = _join_per_flow([link_text, frac_text[frac_index.reshape(-1)]], ptr, " ")
    # a flow spread over several paths (split, adaptive, valiant's intermediate
    # groups) has an entry below 1: its path is every entry as one hop
    spread = np.ones(len(ptr) - 1, dtype=bool) if ecmp in ("split", "adaptive") else \
        _spread(routes.frac, ptr)
    hops = _join_per_flow([head, ">", tail], ptr, " ") if spread.any() else None
    if spread.all():
        return links, hops
    paths = _text(src) + _join_per_flow([">", tail], ptr, "")
    if hops is not None:
        paths = np.where(spread, hops, paths)
    return links, paths


def _spread(frac: np.ndarray, flow_ptr: np.ndarray) -> np.ndarray:
    """bool[F]: the flow has an entry whose fraction is below 1 (it is not
    one path)."""
    below = np.concatenate([[0], np.cumsum(frac < 1.0)])
    return below[flow_ptr[1:]] > below[flow_ptr[:-1]]


def _text(values: np.ndarray) -> np.ndarray:
    """Integers as Python strings, object[n]."""
    return np.asarray(values).astype(str).astype(object)


def _join_per_flow(pieces: list, flow_ptr: np.ndarray, sep: str) -> np.ndarray:
    """Each flow's entries, every entry the concatenation of ``pieces``
    (object[E] arrays or constant strings), joined with ``sep``: object[F]
    ("" for a flow without entries)."""
    num_flows = len(flow_ptr) - 1
    out = np.full(num_flows, "", dtype=object)
    num_entries = int(flow_ptr[-1])
    if num_entries == 0:
        return out
    has = np.diff(flow_ptr) > 0
    width = len(pieces) + 1
    cells = np.empty((num_entries, width), dtype=object)
    for j, piece in enumerate(pieces):
        cells[:, j] = piece
    # a separator after each entry, "\n" after each flow's last: one join, one split
    cells[:, -1] = sep
    cells[flow_ptr[1:][has] - 1, -1] = "\n"
    out[has] = "".join(cells.reshape(-1).tolist()).split("\n")[:-1]
    return out
