"""``flowemu run``: time one algorithm (or a traffic file) on one topology.

Prints (or writes) the result table; ``--flows-out`` dumps the flows of one
size, ``--congestion`` the per-step congestion report, ``--links`` every
link's load per step (and ``--links-plot`` its figure); the what-if options
(``--fail``, ``--degrade``, ``--slow``, ``--background``) add the slowdown
against the healthy network. Every option this run would ignore, and every
output path, is refused before the simulation starts.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..algorithms.collectives import COLLECTIVES, get_collective
from ..api import simulation
from ..api.flows import write_flows
from ..api.linkloads import link_loads
from ..core.errors import ConfigError
from ..core.outputs import check_distinct, check_writable, output_format, write_frame
from ..core.units import format_rate, format_size, format_time, parse_size, parse_sizes
from ..models.genmodel import MODELS
from ..study.figures.links import plot_links
from ..study.results import slowdown
from ..study.sweep.dataset import check_output
from ..topology import topology_modes
from ..topology.base import ECMP_MODES
from ..whatif.stragglers import slows_compute
from .options import (
    add_network_options,
    add_output_options,
    as_options,
    check_incast_pair,
    chosen_format,
    ecmp_help,
    given,
    max_memory,
    naming_options,
    network_keywords,
    note,
    refuse,
    refuse_empty,
    whole_number,
    write_output,
)

CONGESTION_FORMATS = ("csv", "json", "parquet")
FLOWS_FORMATS = ("csv", "parquet")
LINKS_FORMATS = ("csv", "parquet")
FIGURE_EXTENSIONS = (".png", ".pdf", ".svg")


def add_arguments(r) -> None:
    r.add_argument("--topology", "-t", required=True, help="e.g. torus:16x16, mesh:4x4")
    g = r.add_mutually_exclusive_group(required=True)
    g.add_argument("--algorithm", "-a", help="NAME[:key=val,...], e.g. recdoub:variant=auto")
    g.add_argument("--traffic", help="CSV/parquet with columns step,src,dst,bytes")
    r.add_argument("--collective", "-c", default="allreduce",
                   help="what --algorithm computes: " + ", ".join(COLLECTIVES) + " (default "
                        "allreduce; flowemu list shows each one's algorithms and what its "
                        "size means)")
    r.add_argument("--sizes", "-s", default="32B..512MiB",
                   help="32B..512MiB (powers of two) or a comma list (default %(default)s)")
    r.add_argument("--ranks", type=whole_number, help="number of ranks (default: every endpoint)")
    r.add_argument("--placement", default="linear",
                   help="endpoint of each rank: linear (rank r on endpoint r), random:SEED, "
                        "or a file of endpoint ids, one per rank (default %(default)s)")
    add_network_options(r)
    r.add_argument("--ecmp", default="split", help=ecmp_help(ECMP_MODES, topology_modes()))
    r.add_argument("--seed", type=whole_number, default=0, help="seed of --ecmp hash (default 0)")
    r.add_argument("--model", default="flow",
                   help="flow (the flow-level engine, default) | genmodel (GenModel's analytic "
                        "prediction: Table 2 on a single switch, e.g. tree:24)")
    r.add_argument("--sync", default="barrier",
                   help="barrier (every step starts when every rank ended the one before, "
                        "default) | dataflow (a rank starts its next step when its own flows "
                        "are delivered and its reduction is done)")
    add_output_options(r)
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
                        "'-' prints it, a path writes .csv (or .json, .parquet) steps and "
                        "a _summary file beside it")
    r.add_argument("--links", metavar="FILE",
                   help="every link's load per step (.csv or .parquet): its name, capacity, "
                        "bytes per byte of n (with --traffic: bytes), flows and utilisation "
                        "(links carrying nothing are left out)")
    r.add_argument("--links-steps", help="steps for --links/--links-plot: indices and ranges "
                                         "(0,3,5-7) or step labels; default every step")
    r.add_argument("--links-plot", metavar="FIGURE",
                   help="figure of the link loads (.png, .pdf, .svg): a heat map per "
                        "direction on 2-D tori and meshes (a row per step, at most 16), "
                        "utilisation per tier and direction elsewhere")
    w = r.add_argument_group("what-if (the slowdown against the healthy network is reported)")
    w.add_argument("--fail", action="append", metavar="SELECTOR",
                   help="failed links: link:ID, node:V, grid coordinates X,Y (tori, meshes, "
                        "HyperX, HammingMesh; * any), LEVEL:I (spine:3, core:*), id:NAME "
                        "(graph files), A-B (the cables between two), random:K:SEED "
                        "(flowemu list gives every form); repeat or join with ';'")
    w.add_argument("--degrade", action="append", metavar="SELECTOR=F[:lat=M]",
                   help="scale the bandwidth of the selected links by F in (0, 1] (and their "
                        "latency by M >= 1); repeatable")
    w.add_argument("--fail-policy", default="strict", metavar="{strict,reroute}",
                   help="strict (default: ring and bucket refuse a failure that breaks their "
                        "neighbour links) | reroute (route them around it)")
    w.add_argument("--slow", action="append", metavar="RANKS=F[:compute|:network]",
                   help="slow ranks: 3=0.5, 0-3=0.25:compute, random:4:1=0.5; repeat or join "
                        "with ';'")
    w.add_argument("--background", metavar="SPEC|FILE",
                   help="traffic sharing the network for the whole run: perm:LOAD[:SEED], "
                        "alltoall:LOAD, hotspot:LOAD[:TARGET] or a traffic CSV/parquet file "
                        "(bytes = demand in bytes/s). LOAD in (0, 1] is the fraction of each "
                        "sender's injection bandwidth (all its outgoing links: 1.0 = 4 links' "
                        "worth on a 2-D torus) it offers; every byte crosses every link of "
                        "its route, so the average link is offered LOAD x (average hops) of "
                        "its capacity (perm:0.5 on torus:64x64: 16x, an 11.6x slower "
                        "collective; see the what-if page, 'Why perm:0.5 slows a torus')")


def cmd_run(args) -> int:
    with naming_options(args):   # ecmp: ... from the API reads --ecmp: ...
        return _run(args)


def _run(args) -> int:
    if args.out == "-":   # the usual spelling of standard output
        args.out = None
    net = network_keywords(args)
    _check_run_options(args)
    # everything that can be refused is refused before the (possibly long) simulation
    fmt = chosen_format(args)
    if args.congestion == "-" and args.out is None and fmt != "table":
        raise ConfigError(f"--congestion: '-' prints text into the {fmt} results on standard "
                          "output; give --out FILE or --congestion FILE")
    sizes = None if args.traffic else parse_sizes(args.sizes, "--sizes")
    flows_size = None
    if args.flows_out and not args.traffic:
        flows_size = (parse_size(args.flows_size, "--flows-size") if args.flows_size
                      else max(sizes))
    outputs = {"--out": args.out, "--flows-out": args.flows_out}
    if args.congestion and args.congestion != "-":
        _congestion_format(args.congestion)
        outputs["--congestion"] = args.congestion
        outputs["--congestion (its summary file)"] = str(_congestion_paths(args.congestion)[1])
    for option, path, formats in (("--flows-out", args.flows_out, FLOWS_FORMATS),
                                  ("--links", args.links, LINKS_FORMATS)):
        if path == "-":   # (a file named '-' was written; the tables are for files)
            raise ConfigError(f"{option}: '-' is not allowed; give a file name (.csv or "
                              ".parquet): the table has a row per flow or link")
        if path:   # (their format is their name's: --format is the result table's)
            output_format(path, None, formats, option=option, format_option="",
                          default="csv")
    if args.links:
        outputs["--links"] = args.links
    if args.links_plot:
        if not args.links_plot.lower().endswith(FIGURE_EXTENSIONS):
            raise ConfigError(f"--links-plot: {args.links_plot!r} should end in .png (or .pdf, "
                              ".svg)")
        outputs["--links-plot"] = args.links_plot
    check_distinct({"--traffic": args.traffic, **outputs})   # never overwrite the input
    for option, path in outputs.items():
        if path is not None:   # (not among a dataset's part files: its readers read them all)
            check_output(path, None, option.split(" ")[0])
            check_writable(path, option.split(" ")[0])
    if args.flows_out:   # first: a dump refused (memory, steps) costs no simulation
        _write_flows(args, net, flows_size)
    if args.links or args.links_plot:   # (likewise a link table or its steps refused)
        _write_links(args, net)
    whatif = _whatif(args)
    df = _timed(args, net, sizes, whatif)
    if whatif:   # and the healthy network, for the slowdown
        both = slowdown(pd.concat([df, _timed(args, net, sizes, {})], ignore_index=True))
        df = both.iloc[:len(df)].reset_index(drop=True)
    write_output(df, fmt, args.out, table=_table)
    computes = slows_compute(args.slow)
    if args.slow and computes and not get_collective(args.collective).reduces:
        note(f"--slow: a slower reduction costs nothing here ({args.collective} reduces "
             "nothing); only the ranks' network slowdown counts")
    elif args.slow and computes and not (df["gamma_s_per_B"] > 0).any() \
            and not (df["delta_s_per_B"] > 0).any():
        note("--slow: a slower reduction costs nothing here (gamma and delta are 0; give "
             "--gamma/--delta); only the ranks' network slowdown counts")
    for text in _notes(df):   # fallbacks, said once
        note(text)
    if args.congestion:
        _write_congestion(args, net)
    return 0


def _check_run_options(args) -> None:
    """Refuse every option given explicitly that this run would ignore."""
    if args.traffic:
        # the traffic file fixes the bytes of every flow and the ranks (its ids), and it
        # has no reduction work for γ and δ to cost
        for dest, option in (("sizes", "--sizes"), ("ranks", "--ranks"), ("gamma", "--gamma"),
                             ("delta", "--delta"), ("collective", "--collective")):
            if given(args, dest):
                refuse(option, "does not apply to --traffic (the file gives every flow's "
                               "bytes and ranks, and no reduction)")
        if args.congestion:
            raise ConfigError("--congestion works with --algorithm, not --traffic")
    for dest, option in (("flows_size", "--flows-size"), ("flows_steps", "--flows-steps")):
        if given(args, dest) and not args.flows_out:
            refuse(option, "applies only with --flows-out")
    if given(args, "links_steps") and not (args.links or args.links_plot):
        refuse("--links-steps", "applies only with --links or --links-plot")
    if args.flows_out and args.sync != "barrier":
        refuse("--flows-out", "gives each flow's time within its step at a barrier; it does "
                              "not apply with --sync dataflow")
    if args.traffic and given(args, "flows_size"):
        refuse("--flows-size", "does not apply to --traffic (its flows carry their own bytes)")
    if args.model != "flow":
        if args.model not in MODELS:
            raise ConfigError(f"--model: {args.model!r} is not allowed; expected "
                              f"{' or '.join(MODELS)}")
        for dest, option in (("traffic", "--traffic"), ("congestion", "--congestion"),
                             ("flows_out", "--flows-out"), ("links", "--links"),
                             ("links_plot", "--links-plot"), ("ecmp", "--ecmp")):
            if getattr(args, dest) and (dest != "ecmp" or given(args, "ecmp")):
                refuse(option, f"works with --model flow (the flow engine), not --model "
                               f"{args.model}")
    refuse_empty(args)
    if given(args, "fail_policy") and not args.fail:
        refuse("--fail-policy", "applies only with --fail (no link fails in this run)")
    if given(args, "fail_policy") and getattr(args, "traffic", None):
        refuse("--fail-policy", "applies to an algorithm's schedule (whether a topology-bound "
                                "one such as ring may be rerouted); --traffic is always routed "
                                "over the surviving links")
    if given(args, "seed") and args.ecmp != "hash":
        refuse("--seed", f"applies only to --ecmp hash (this run uses --ecmp {args.ecmp})")
    check_incast_pair(args)


def _notes(df) -> list[str]:
    """The distinct fallback notes of a result table, in order; when rows
    differ in their notes (a selector's choice per size), each says the
    sizes it is of (``4MiB, 8MiB: ...``)."""
    if "note" not in df:
        return []
    sizes: dict = {}
    for text, size in zip(df["note"], df.get("size_bytes", [None] * len(df))):
        if isinstance(text, str) and text:
            sizes.setdefault(text, []).append(size)
    if len(sizes) <= 1:
        return list(sizes)
    out = []
    for text, of in sizes.items():
        shown = [format_size(s) for s in dict.fromkeys(of) if s is not None and not pd.isna(s)]
        out.append(f"{', '.join(shown)}: {text}" if shown else text)
    return out


def _table(df) -> str:
    """The result table as text: the columns worth reading, with units."""
    show = df[["topology", "algorithm", "variant", "size_bytes", "time_s", "goodput_Bps",
               "steps"]].copy()
    show["size"] = show.pop("size_bytes").map(format_size)
    show["time"] = show.pop("time_s").map(format_time)
    show["goodput"] = show.pop("goodput_Bps").map(format_rate)
    cols = ["topology", "algorithm", "variant", "size", "time", "goodput", "steps"]
    if "placement" in df and (df["placement"] != "linear").any():
        show["placement"] = df["placement"]   # where the ranks ran changes the numbers
        cols.insert(1, "placement")
    if "model" in df and (df["model"] != "flow").any():
        show["model"] = df["model"]           # an analytic prediction, not the engine's time
        cols.insert(cols.index("algorithm") + 1, "model")
    if "sync" in df and (df["sync"] == "dataflow").any():
        show["sync"] = df["sync"]             # ranks not held at a barrier each step
        cols.insert(cols.index("algorithm") + 1, "sync")
    if "collective" in df and (df["collective"] != "allreduce").any():
        show["collective"] = df["collective"]   # what the size and the times are of
        cols.insert(cols.index("algorithm"), "collective")
        if ((df["options"] != "") & (df["options"] != df["variant"])).any():
            show["options"] = df["options"]     # root=, segments=: what the variant omits
            cols.insert(cols.index("variant") + 1, "options")
        # nccl-tests' bus bandwidth (none for a traffic file: "-")
        show["busbw"] = df["busbw_Bps"].map(lambda v: "-" if pd.isna(v) else format_rate(v))
        cols.insert(cols.index("goodput") + 1, "busbw")
    if "slowdown" in df:   # a what-if run: beside the healthy network's time
        show["healthy"] = df["healthy_time_s"].map(format_time)
        show["slowdown"] = df["slowdown"].map(lambda v: f"{v:.3f}x")
        cols += ["healthy", "slowdown"]
        for col in ("fail", "degrade", "slow", "background"):
            if (df[col] != "").any():
                show[col] = df[col]
                cols.insert(1, col)
        if (df["background"] != "").any():
            show["bg_throughput"] = df["background_Bps"].map(format_rate)
            cols.append("bg_throughput")
    text = show[cols].to_string(index=False)
    # a fallback changes what the numbers mean: say it under the table, not only on stderr
    return text + "".join(f"\nnote: {line}" for line in _notes(df))


def _whatif(args) -> dict:
    """The what-if options given, as keywords of :func:`flowemu.simulate`."""
    out = {"fail": args.fail, "degrade": args.degrade,
           "slow": ";".join(args.slow) if args.slow else None, "background": args.background}
    out = {k: v for k, v in out.items() if v}
    if out or given(args, "fail_policy"):
        out["fail_policy"] = args.fail_policy
    return out


def _timed(args, net, sizes, whatif: dict):
    """The result rows of ``run`` (an algorithm or a traffic file) with these what-ifs."""
    # through the module: a test may stand in for the simulation
    if args.traffic:
        return simulation.time_traffic(args.topology, args.traffic, ecmp=args.ecmp,
                                       seed=args.seed, placement=args.placement, **net,
                                       max_memory=max_memory(args), sync=args.sync, **whatif)
    return simulation.simulate(args.topology, args.algorithm, sizes, ecmp=args.ecmp,
                               seed=args.seed, ranks=args.ranks, placement=args.placement,
                               **net, max_memory=max_memory(args), model=args.model,
                               sync=args.sync, collective=args.collective, **whatif)


def _congestion_format(path: str) -> str:
    return output_format(path, None, CONGESTION_FORMATS, option="--congestion", default="csv")


def _congestion_paths(path: str) -> tuple[Path, Path]:
    """``--congestion PATH`` writes the steps there and the summary beside it."""
    base = Path(path)
    return base, base.with_name(base.stem + "_summary" + base.suffix)


def _write_congestion(args, net) -> None:
    whatif = _whatif(args)
    unseen = [k for k in ("degrade", "slow", "background") if whatif.pop(k, None)]
    if unseen:
        one = len(unseen) == 1
        note(f"--congestion: Ψ and Ξ count bytes on links, which "
             f"{', '.join('--' + k for k in unseen)} {'does' if one else 'do'} not change; "
             f"the times include {'it' if one else 'them'}, --links shows each link's "
             "utilisation")
    steps, summary = simulation.congestion(args.topology, args.algorithm, ecmp=args.ecmp,
                                           seed=args.seed, ranks=args.ranks,
                                           placement=args.placement, **net,
                                           collective=args.collective, **whatif)
    collective = get_collective(args.collective or "allreduce").name
    against = "" if collective == "allreduce" else \
        f"against an allreduce's optimum, not {collective}'s"
    if args.congestion == "-":
        print("\ncongestion per step (loads in bytes per byte of n):")
        print(steps.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
        print("\ndeficiencies (Ψ bandwidth, Ξ congestion; Ψ·Ξ = bandwidth time / optimal"
              f"{'; ' + against if against else ''}):")
        print(summary.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
        return
    if against:   # (a file has no header to say it in)
        note(f"--congestion: psi, xi and psi_xi are {against}")
    fmt = _congestion_format(args.congestion)
    steps_path, summary_path = _congestion_paths(args.congestion)
    write_frame(steps_path, "--congestion", steps, fmt)
    write_frame(summary_path, "--congestion", summary, fmt)


def _write_flows(args, net, size) -> None:
    """``--flows-out``: the per-flow dump (:func:`flowemu.api.flows.write_flows`)
    of the algorithm at ``size`` or of the traffic, CSV or parquet by
    extension, streamed step by step into a temporary file that is renamed
    into place."""
    if args.flows_steps is not None and not args.flows_steps.strip():
        raise ConfigError("--flows-steps: empty; expected indices such as 0,3,5-7 or labels")
    if args.traffic and args.flows_size:
        raise ConfigError("--flows-size applies to --algorithm; --traffic flows carry their "
                          "own bytes")
    common = {"steps": args.flows_steps, "ecmp": args.ecmp, "seed": args.seed,
              "placement": args.placement, **net, "max_memory": max_memory(args),
              **_whatif(args)}
    try:
        if args.traffic:
            write_flows(args.flows_out, args.topology, traffic=args.traffic, **common)
        else:
            write_flows(args.flows_out, args.topology, args.algorithm, size=size,
                        ranks=args.ranks, collective=args.collective, **common)
    except ConfigError as exc:   # name the option the user typed
        raise ConfigError(as_options(str(exc), {"steps": "--flows-steps",
                                                "path": "--flows-out"})) from None


def _write_links(args, net) -> None:
    """``--links``/``--links-plot``: every link's load per step
    (:func:`flowemu.link_loads`), CSV or parquet by extension, and its figure."""
    if args.links_steps is not None and not args.links_steps.strip():
        raise ConfigError("--links-steps: empty; expected indices such as 0,3,5-7 or labels")
    try:
        mine = {"traffic": args.traffic} if args.traffic else \
            {"algorithm": args.algorithm, "ranks": args.ranks, "collective": args.collective}
        table = link_loads(args.topology, steps=args.links_steps, ecmp=args.ecmp,
                           seed=args.seed, placement=args.placement, **net,
                           max_memory=max_memory(args), **mine, **_whatif(args))
    except ConfigError as exc:   # name the option the user typed
        raise ConfigError(as_options(str(exc), {"steps": "--links-steps"})) from None
    if args.links_plot:   # first: a figure refused (too many steps) leaves no table behind
        plot_links(table, args.topology, args.links_plot, option="--links-plot")
    if args.links:
        fmt = output_format(args.links, None, LINKS_FORMATS, option="--links", default="csv")
        write_frame(args.links, "--links", table, fmt)
