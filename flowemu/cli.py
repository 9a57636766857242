"""``flowemu run | list | sweep | compare | plot`` — the command line.

User mistakes print one line ``flowemu: error: ...`` and exit with code 2;
other flowemu failures exit with 1; no tracebacks for either.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .errors import ConfigError, FlowEmuError

FORMATS = ("table", "csv", "json", "parquet")


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2, like a ConfigError
        raise ConfigError(message)


def _build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="flowemu", description="Flow-level emulator for collective communication.")
    sub = p.add_subparsers(dest="command", parser_class=_Parser)
    sub.required = True

    r = sub.add_parser("run", help="time one algorithm (or a traffic file) on one topology")
    r.add_argument("--topology", "-t", required=True, help="e.g. torus:16x16, mesh:4x4")
    g = r.add_mutually_exclusive_group(required=True)
    g.add_argument("--algorithm", "-a", help="NAME[:key=val,...], e.g. recdoub:variant=auto")
    g.add_argument("--traffic", help="CSV/parquet with columns step,src,dst,bytes")
    r.add_argument("--sizes", "-s", default="32B..512MiB",
                   help="32B..512MiB (powers of two) or a comma list (default %(default)s)")
    r.add_argument("--ranks", type=int, help="number of ranks (default: every endpoint)")
    r.add_argument("--bandwidth", default="400Gb/s", help="link bandwidth (default %(default)s)")
    r.add_argument("--link-latency", default="100ns", help="per link (default %(default)s)")
    r.add_argument("--hop-latency", default="300ns", help="per hop (default %(default)s)")
    r.add_argument("--alpha", default="0", help="per-message overhead α (default 0)")
    r.add_argument("--gamma", default="0", help="GenModel reduce cost γ, s/B (default 0)")
    r.add_argument("--delta", default="0", help="GenModel memory cost δ, s/B (default 0)")
    r.add_argument("--incast-threshold", default="inf", help="GenModel w_t (default inf: off)")
    r.add_argument("--incast-slope", default="0", help="GenModel ε, s/B (default 0: off)")
    r.add_argument("--ecmp", default="split", help="split | dor | hash (default split)")
    r.add_argument("--seed", type=int, default=0, help="seed of --ecmp hash")
    r.add_argument("--format", "-f", default="table", help="table | csv | json | parquet")
    r.add_argument("--out", "-o", help="write here instead of stdout (required for parquet)")
    r.add_argument("--flows-out", help="write per-flow detail (CSV or .parquet) for one size")
    r.add_argument("--flows-size", help="vector size for --flows-out (default: largest size)")
    r.add_argument("--flows-steps", help="steps for --flows-out: indices and ranges (0,3,5-7) "
                                         "or step labels (rs0; step<N> for --traffic); "
                                         "default every step")
    r.add_argument("--max-memory", help="refuse a run (or flow dump) estimated to need more "
                                        "memory, e.g. 8GiB (default: FLOWEMU_MAX_MEMORY or 80%% "
                                        "of available memory)")
    r.add_argument("--congestion", metavar="PATH",
                   help="per-step congestion report and the run's Ψ/Ξ (Swing paper §2.2): "
                        "'-' prints it, a path writes CSV (steps; summary beside it)")

    sub.add_parser("list", help="list algorithms and topologies with their parameters")

    s = sub.add_parser("sweep", help="run a sweep file (TOML grid) into a parquet dataset; "
                                     "re-running resumes")
    s.add_argument("config", help="sweep file, e.g. configs/smoke.toml")
    s.add_argument("--out", "-o", help="dataset directory (default results/<file name>)")
    s.add_argument("--jobs", "-j", type=int,
                   help="local worker processes (default: every core; 1 = in this process)")
    s.add_argument("--scheduler", help="Dask scheduler address, e.g. tcp://host:8786")
    s.add_argument("--retry-errors", action="store_true",
                   help="run again the configurations recorded as failed")
    s.add_argument("--chunk-size", type=int, help="configurations per task and part file "
                                                  "(default: by cost)")
    s.add_argument("--dry-run", action="store_true",
                   help="validate and list the configurations, run nothing")
    s.add_argument("--quiet", "-q", action="store_true", help="no progress output")

    c = sub.add_parser("compare", help="best algorithm and goodput gains per topology and size")
    c.add_argument("dataset", help="a sweep's dataset directory (or a parquet/CSV file)")
    c.add_argument("--format", "-f", default="table", help="table | csv | parquet")
    c.add_argument("--out", "-o", help="write here instead of stdout (required for parquet)")
    c.add_argument("--by", default="label",
                   help="label (variants apart, default) | algorithm (best variant)")
    c.add_argument("--where", help="only rows matching this pandas query, e.g. "
                                   "\"topology == 'torus:8x8'\"")

    pl = sub.add_parser("plot", help="goodput or gain figures of a dataset (PNG)")
    pl.add_argument("dataset", help="a sweep's dataset directory (or a parquet/CSV file)")
    pl.add_argument("--out", "-o",
                    help="FILE.png (default: every figure into DATASET/figures/)")
    pl.add_argument("--kind", "-k", default="goodput", help="goodput | gain")
    pl.add_argument("--group", "-g", help="only this group of the sweep")
    pl.add_argument("--topology", "-t", help="only these topologies (comma list)")
    pl.add_argument("--algorithm", "-a",
                    help="--kind gain: whose gain (default swing if present, else the best's)")
    pl.add_argument("--where", help="only rows matching this pandas query, e.g. "
                                    "\"bandwidth_Bps == 5e10\"")
    pl.add_argument("--title", help="figure title")
    return p


def _network(args):
    from .network import Network
    return Network(bandwidth=args.bandwidth, link_latency=args.link_latency,
                   hop_latency=args.hop_latency, alpha=args.alpha, gamma=args.gamma,
                   delta=args.delta, incast_threshold=args.incast_threshold,
                   incast_slope=args.incast_slope)


def _table(df) -> str:
    from .units import format_rate, format_size, format_time
    show = df[["topology", "algorithm", "variant", "size_bytes", "time_s", "goodput_Bps",
               "steps"]].copy()
    show["size"] = show.pop("size_bytes").map(format_size)
    show["time"] = show.pop("time_s").map(format_time)
    show["goodput"] = show.pop("goodput_Bps").map(format_rate)
    return show[["topology", "algorithm", "variant", "size", "time", "goodput",
                 "steps"]].to_string(index=False)


def _write(df, fmt: str, out: str | None) -> None:
    if fmt not in FORMATS:
        raise ConfigError(f"--format: unknown format {fmt!r}; allowed: {', '.join(FORMATS)}")
    if fmt == "parquet":
        if not out:
            raise ConfigError("--format parquet needs --out PATH")
        _parent(out)
        df.to_parquet(out, index=False)
        return
    text = {"table": _table, "csv": lambda d: d.to_csv(index=False),
            "json": lambda d: d.to_json(orient="records", indent=1)}[fmt](df)
    if out:
        _parent(out)
        Path(out).write_text(text if text.endswith("\n") else text + "\n")
    else:
        print(text)


def _parent(out: str) -> None:
    parent = Path(out).resolve().parent
    if not parent.is_dir():
        raise ConfigError(f"--out: directory {str(parent)!r} does not exist")


def _cmd_run(args) -> int:
    from .api import simulate, time_traffic
    from .units import parse_size, parse_sizes
    net = _network(args)
    if args.format not in FORMATS:
        raise ConfigError(f"--format: unknown format {args.format!r}; allowed: {', '.join(FORMATS)}")
    if args.traffic:
        df = time_traffic(args.topology, args.traffic, ecmp=args.ecmp, seed=args.seed,
                          network=net, max_memory=_max_memory(args))
    else:
        df = simulate(args.topology, args.algorithm, args.sizes, ecmp=args.ecmp, seed=args.seed,
                      ranks=args.ranks, network=net, max_memory=_max_memory(args))
    if args.flows_out:
        size = (parse_size(args.flows_size, "--flows-size") if args.flows_size
                else None if args.traffic else max(parse_sizes(args.sizes)))
        _write_flows(args, net, size)
    _write(df, args.format, args.out)
    for note in dict.fromkeys(n for n in df.get("note", []) if n):   # fallbacks, said once
        print(f"flowemu: note: {note}", file=sys.stderr)
    if args.congestion:
        if args.traffic:
            raise ConfigError("--congestion works with --algorithm, not --traffic")
        _write_congestion(args, net)
    return 0


def _write_congestion(args, net) -> None:
    from .api import congestion
    steps, summary = congestion(args.topology, args.algorithm, ecmp=args.ecmp, seed=args.seed,
                                ranks=args.ranks, network=net)
    if args.congestion == "-":
        print("\ncongestion per step (loads in bytes per byte of n):")
        print(steps.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
        print("\ndeficiencies (Ψ bandwidth, Ξ congestion; Ψ·Ξ = bandwidth time / optimal):")
        print(summary.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
        return
    _parent(args.congestion)
    steps.to_csv(args.congestion, index=False)
    base = Path(args.congestion)
    summary.to_csv(base.with_name(base.stem + "_summary.csv"), index=False)


def _max_memory(args):
    """``--max-memory`` checked as the option it is (None when not given)."""
    if args.max_memory is None:
        return None
    from .budget import Limit, limit
    try:
        return Limit(limit(args.max_memory).bytes, "--max-memory")
    except ConfigError as exc:
        raise ConfigError(f"--max-memory: {str(exc).partition(': ')[2]}") from None


def _write_flows(args, net, size) -> None:
    """``--flows-out``: the per-flow dump (:func:`flowemu.flowdump.write_flows`)
    of the algorithm at ``size`` or of the traffic, CSV or parquet by
    extension, streamed step by step into a temporary file that is renamed
    into place."""
    from .flowdump import write_flows
    if args.flows_steps is not None and not args.flows_steps.strip():
        raise ConfigError("--flows-steps: empty; expected indices such as 0,3,5-7 or labels")
    if args.traffic and args.flows_size:
        raise ConfigError("--flows-size applies to --algorithm; --traffic flows carry their "
                          "own bytes")
    _parent(args.flows_out)
    common = {"steps": args.flows_steps, "ecmp": args.ecmp, "seed": args.seed,
              "network": net, "max_memory": _max_memory(args)}
    try:
        if args.traffic:
            write_flows(args.flows_out, args.topology, traffic=args.traffic, **common)
        else:
            write_flows(args.flows_out, args.topology, args.algorithm, size=size,
                        ranks=args.ranks, **common)
    except ConfigError as exc:
        msg = str(exc)
        for name, option in (("steps:", "--flows-steps:"), ("path:", "--flows-out:")):
            if msg.startswith(name):   # name the option the user typed
                msg = option + msg[len(name):]
        raise ConfigError(msg) from None


def _cmd_list(args) -> int:
    from .algorithms import algorithm_names, get_algorithm
    from .topology import topology_families
    print("algorithms:")
    for name in algorithm_names():
        spec = get_algorithm(name)
        first = (spec.doc.strip().splitlines() or [""])[0]
        print(f"  {name:10s} {first}")
        for prm in spec.params:
            choices = f" one of {', '.join(map(str, prm.choices))}" if prm.choices else ""
            print(f"      {prm.name}={prm.default}{choices}  {prm.doc}")
    print("topologies:")
    for fam, doc in sorted(topology_families().items()):
        print(f"  {fam:10s} {doc}")
    print("ecmp: split (default, even split over minimal next hops), dor, hash")
    return 0


def _cmd_sweep(args) -> int:
    from .sweep import load_sweep, sweep
    if args.dry_run:
        plan = load_sweep(args.config)
        for cfg in plan.configs:
            print(f"{cfg.hash}  {cfg.key}")
        print(f"{len(plan.configs)} configurations in {len(plan.groups)} group(s), "
              f"{sum(len(c.sizes) for c in plan.configs)} rows")
        return 0
    import signal

    def _terminate(signum, frame):   # `kill PID`: stop the workers, keep what is saved
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _terminate)
    summary = sweep(args.config, args.out, jobs=args.jobs, scheduler=args.scheduler,
                    retry_errors=args.retry_errors, progress=not args.quiet,
                    chunk_size=args.chunk_size)
    print(summary.text())
    return 1 if summary.internal else 0


def _cmd_compare(args) -> int:
    from .results import compare, compare_table, load, query
    if args.format not in ("table", "csv", "parquet"):
        raise ConfigError(f"--format: unknown format {args.format!r}; allowed: table, csv, "
                          "parquet")
    if args.format == "parquet" and not args.out:
        raise ConfigError("--format parquet needs --out PATH")
    if args.out:
        _parent(args.out)
    df = load(args.dataset)
    if args.where:
        df = query(df, args.where)
    if df.empty:
        raise ConfigError(f"compare: no results in {args.dataset}"
                          + (f" matching {args.where!r}" if args.where else ""))
    cmp = compare(df, by=args.by)
    if args.format == "parquet":
        cmp.to_parquet(args.out, index=False)
        return 0
    text = compare_table(cmp) if args.format == "table" else cmp.to_csv(index=False)
    if args.out:
        Path(args.out).write_text(text if text.endswith("\n") else text + "\n")
    else:
        print(text.rstrip("\n"))
    return 0


def _cmd_plot(args) -> int:
    from .plots import KINDS, figures, plot
    if args.kind not in KINDS:
        raise ConfigError(f"--kind: unknown kind {args.kind!r}; allowed: {', '.join(KINDS)}")
    if args.out is None:
        for path in figures(args.dataset):
            print(path)
        return 0
    if not args.out.lower().endswith((".png", ".pdf", ".svg")):
        raise ConfigError(f"--out: {args.out!r} should end in .png (or .pdf, .svg)")
    kw = {"group": args.group, "title": args.title, "where": args.where,
          "topologies": [t.strip() for t in args.topology.split(",")] if args.topology else None}
    if args.kind == "gain":
        kw["algorithm"] = args.algorithm
    elif args.algorithm:
        raise ConfigError("--algorithm goes with --kind gain")
    print(plot(args.dataset, args.out, args.kind, **kw))
    return 0


def main(argv=None) -> int:
    try:
        args = _build_parser().parse_args(argv)
        return {"run": _cmd_run, "list": _cmd_list, "sweep": _cmd_sweep,
                "compare": _cmd_compare, "plot": _cmd_plot}[args.command](args)
    except ConfigError as exc:
        print(f"flowemu: error: {exc}", file=sys.stderr)
        return 2
    except FlowEmuError as exc:
        print(f"flowemu: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # e.g. `flowemu compare ... | head`
        import os
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
