"""``flowemu run | list | sweep | compare | plot | fit | verify`` — the command line.

User mistakes print one line ``flowemu: error: ...`` and exit with code 2;
other flowemu failures exit with 1; no tracebacks for either.

The command line never guesses: an option given twice, an option that the
chosen path would ignore, a value without its unit, an output file whose
extension contradicts ``--format`` — each is an error naming the option.
Output paths are checked before any simulation starts
(:mod:`flowemu.core.outputs`).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from .. import __version__
from ..core.errors import ConfigError, FlowEmuError
from ..core.outputs import check_distinct, check_writable, output_format, write_frame, write_text

FORMATS = ("table", "csv", "json", "parquet")
COMPARE_FORMATS = ("table", "csv", "json", "parquet")
CONGESTION_FORMATS = ("csv", "json", "parquet")
FLOWS_FORMATS = ("csv", "parquet")


def _option_name(action) -> str:
    """The long spelling of an option (``--sizes`` for ``-s``), or the positional's name."""
    return max(action.option_strings, key=len) if action.option_strings else action.dest


def _record(action, namespace, shown: str) -> None:
    """Remember that the user gave this option; refuse it the second time."""
    given = namespace.__dict__.setdefault("_given", {})
    if action.dest in given:
        first = given[action.dest]
        both = f" ({first} and {shown})" if shown else ""
        raise ConfigError(f"{_option_name(action)}: given twice{both}; give it once")
    given[action.dest] = shown


class _Once(argparse._StoreAction):
    """``store`` that refuses a repeated option (argparse keeps the last silently)."""

    def __call__(self, parser, namespace, values, option_string=None):
        _record(self, namespace, repr(values) if isinstance(values, str) else str(values))
        setattr(namespace, self.dest, values)


class _OnceTrue(argparse._StoreTrueAction):
    """``store_true`` that refuses a repeated flag."""

    def __call__(self, parser, namespace, values, option_string=None):
        _record(self, namespace, "")
        setattr(namespace, self.dest, True)


class _Parser(argparse.ArgumentParser):
    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        # "-5Gb/s" is a (bad) value, not an option: argparse takes only plain negative
        # numbers for values, and "expected one argument" would not say what is wrong
        self._negative_number_matcher = re.compile(r"^-\.?\d")
        # every parser and subparser: store / store_true refuse repeats and record what
        # was given, so a default can be shown in --help yet told apart from an explicit value
        self.register("action", None, _Once)
        self.register("action", "store", _Once)
        self.register("action", "store_true", _OnceTrue)

    def error(self, message):  # one line, exit 2, like a ConfigError
        raise ConfigError(message)


def _given(args, dest: str) -> bool:
    """Whether the user gave the option (not just its default)."""
    return dest in getattr(args, "_given", {})


def _build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="flowemu", description="Flow-level emulator for collective communication.")
    p.add_argument("--version", action="version", version=f"flowemu {__version__}")
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
    r.add_argument("--placement", default="linear",
                   help="endpoint of each rank: linear (rank r on endpoint r), random:SEED, "
                        "or a file of endpoint ids, one per rank (default %(default)s)")
    r.add_argument("--network", help="network preset: a built-in name (flowemu list) or a "
                                     ".toml file (flowemu fit --save); the network options "
                                     "given beside it override its values")
    r.add_argument("--bandwidth", default="400Gb/s",
                   help="link bandwidth with its unit: 400Gb/s (bits), 50GB/s (bytes) "
                        "(default %(default)s)")
    r.add_argument("--link-latency", default="100ns", help="per link, with its unit: 100ns, "
                                                           "1us (default %(default)s)")
    r.add_argument("--hop-latency", default="300ns", help="per hop (default %(default)s)")
    r.add_argument("--alpha", default="0", help="per-message overhead α, e.g. 1us (default 0)")
    r.add_argument("--gamma", default="0", help="GenModel reduce cost γ per byte, e.g. 1ps "
                                                "(default 0)")
    r.add_argument("--delta", default="0", help="GenModel memory cost δ per byte, e.g. 1ps "
                                                "(default 0)")
    r.add_argument("--incast-threshold", default="inf",
                   help="GenModel w_t, a flow count; needs --incast-slope (default inf: off)")
    r.add_argument("--incast-slope", default="0",
                   help="GenModel ε per byte, e.g. 1ps; needs --incast-threshold (default 0: off)")
    r.add_argument("--ecmp", default="split",
                   help="split | dor | hash | dmodk | adaptive (default split; dor on tori and meshes, "
                   "dmodk on fat trees)")
    r.add_argument("--seed", type=int, default=0, help="seed of --ecmp hash (default 0)")
    r.add_argument("--model", default="flow",
                   help="flow (the flow-level engine, default) | genmodel (GenModel's analytic "
                        "prediction: Table 2 on a single switch, e.g. tree:24)")
    r.add_argument("--format", "-f", default="table",
                   help="table | csv | json | parquet (default: from --out's extension, "
                        "else table)")
    r.add_argument("--out", "-o", help="write here instead of stdout: .csv, .json, .parquet, "
                                       ".txt (table)")
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
    w = r.add_argument_group("what-if (the slowdown against the healthy network is reported)")
    w.add_argument("--fail", action="append", metavar="SELECTOR",
                   help="failed links: link:ID, node:V, torus coordinates X,Y-X',Y' (with * "
                        "wildcards), LEVEL:I on trees (spine:3, core:*), random:K:SEED; "
                        "repeat or join with ';'")
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
                        "(bytes = demand in bytes/s)")

    sub.add_parser("list", help="list algorithms and topologies with their parameters")

    s = sub.add_parser("sweep", help="run a sweep file (TOML grid) into a parquet dataset; "
                                     "re-running resumes; exit 1 if configurations failed")
    s.add_argument("config", help="sweep file, e.g. configs/smoke.toml")
    s.add_argument("--out", "-o", help="dataset directory (default results/<file name>)")
    s.add_argument("--jobs", "-j", type=int,
                   help="local worker processes (default: every core; 1 = in this process)")
    s.add_argument("--scheduler", help="Dask scheduler address, e.g. tcp://host:8786")
    s.add_argument("--scheduler-timeout", type=float, default=10.0, metavar="SECONDS",
                   help="give up on an unreachable --scheduler after this long "
                        "(default %(default)g)")
    s.add_argument("--retry-errors", action="store_true",
                   help="run again the configurations recorded as failed")
    s.add_argument("--prune", action="store_true",
                   help="delete the rows of configurations no longer in the sweep file "
                        "(or another sweep's results in --out)")
    s.add_argument("--chunk-size", type=int, help="configurations per task and part file "
                                                  "(default: by cost)")
    s.add_argument("--dry-run", action="store_true",
                   help="validate and list the configurations, run nothing")
    s.add_argument("--quiet", "-q", action="store_true", help="no progress output")

    c = sub.add_parser("compare", help="best algorithm and goodput gains per topology and size")
    c.add_argument("dataset", help="a sweep's dataset directory (or a parquet/CSV file)")
    c.add_argument("--format", "-f", default="table",
                   help="table | csv | json | parquet (default: from --out's extension, "
                        "else table)")
    c.add_argument("--out", "-o", help="write here instead of stdout: .csv, .json, .parquet, "
                                       ".txt (table)")
    c.add_argument("--by", default="label",
                   help="label (variants apart, default) | algorithm (best variant) | model "
                        "(flow vs genmodel time of each configuration and their ratio) | "
                        "whatif (slowdown of each what-if against the healthy network; "
                        "random failures: mean, min and max over the seeds)")
    c.add_argument("--where", help="only rows matching this pandas query, e.g. "
                                   "\"topology == 'torus:8x8'\"")

    pl = sub.add_parser("plot", help="goodput, time, gain or slowdown figures of a dataset "
                                     "(PNG)")
    pl.add_argument("dataset", help="a sweep's dataset directory (or a parquet/CSV file)")
    pl.add_argument("--out", "-o",
                    help="FILE.png (default: every figure into DATASET/figures/)")
    pl.add_argument("--kind", "-k", default="goodput",
                    help="goodput | time (vs size) | gain (heatmap) | gain-curve (gain vs "
                         "size, a line per value of --by) | slowdown (vs failed links, "
                         "against the healthy network)")
    pl.add_argument("--group", "-g", help="only this group of the sweep")
    pl.add_argument("--topology", "-t", help="only these topologies (comma list; a spec's own "
                    "options stay with it: hx2mesh:32x32,torus:64x64,leafspine:8x4x2,uplinks=2)")
    pl.add_argument("--algorithm", "-a",
                    help="--kind gain, gain-curve: whose gain (default swing if present; "
                         "gain without it: the best's)")
    pl.add_argument("--by", help="--kind gain-curve: the configuration column with a line "
                                 "per value (default alpha_s)")
    pl.add_argument("--size", help="--kind slowdown: the vector size (default: the largest "
                                   "in the data)")
    pl.add_argument("--where", help="only rows matching this pandas query, e.g. "
                                    "\"bandwidth_Bps == 5e10\"")
    pl.add_argument("--title", help="figure title")

    pn = sub.add_parser("plan", help="GenTree's plan per switch and size with the GenModel "
                                     "cost of every candidate (the paper's Table 6)")
    pn.add_argument("--topology", "-t", required=True,
                    help="a tree (e.g. tree:SYM384), leaf-spine or fat tree")
    pn.add_argument("--algorithm", "-a", default="gentree",
                    help="gentree, with rearrange=no (the paper's GenTree*) or flat=no "
                         "(no flat baseline) (default %(default)s)")
    pn.add_argument("--sizes", "-s", default="40MB,128MB,400MB",
                    help="vector sizes (default %(default)s: the paper's 1e7, 3.2e7 and "
                         "1e8 floats)")
    pn.add_argument("--ranks", type=int, help="number of ranks (default: every host)")
    pn.add_argument("--candidates", action="store_true",
                    help="one row per candidate with its GenModel cost (default: the chosen "
                         "plan per switch and size)")
    for action in r._actions:   # the network options of run, shared
        if action.dest in ("network", "bandwidth", "link_latency", "hop_latency", "alpha",
                           "gamma", "delta", "incast_threshold", "incast_slope"):
            pn._add_action(action)
    pn.add_argument("--format", "-f", default="table",
                    help="table | csv | json | parquet (default: from --out's extension, "
                         "else table)")
    pn.add_argument("--out", "-o", help="write here instead of stdout")

    vf = sub.add_parser("verify", help="prove an algorithm's schedule is an allreduce (block "
                                       "by block); exit 1 at the first step that breaks it")
    vf.add_argument("--algorithm", "-a", required=True,
                    help="NAME[:key=val,...] (plug-ins too); an auto option verifies every "
                         "choice")
    vf.add_argument("--ranks", type=int, help="number of ranks (default: every endpoint of "
                                              "--topology; required without it)")
    vf.add_argument("--topology", "-t", help="arrange ranks on it (grid algorithms, gentree); "
                                             "default: rank ids")
    vf.add_argument("--size", "-s", help="vector size: the plan verified for a size-dependent "
                                         "algorithm (gentree; default 256MiB); also reports "
                                         "bytes")
    vf.add_argument("--network", help="network preset a size-dependent algorithm plans for "
                                      "(a built-in name or a .toml file; default: the "
                                      "default network)")
    vf.add_argument("--all-steps", action="store_true", help="list every step (default: the "
                                                             "first and last 20 of a long one)")
    vf.add_argument("--max-memory", help="refuse a verifier state estimated above this, e.g. "
                                         "8GiB (default: FLOWEMU_MAX_MEMORY or 80%% of "
                                         "available memory)")

    ft = sub.add_parser("fit", help="fit GenModel (α, β+γ/2, δ, ε, w_t) to measured allreduce "
                                    "times; print it, save a network preset, plot it")
    ft.add_argument("data", nargs="+", help="CSV (algorithm,ranks,size,time) or nccl-tests "
                                            "all_reduce_perf output files")
    ft.add_argument("--bandwidth", help="link bandwidth, e.g. 100Gb/s: β = 1/bandwidth and "
                                        "γ = 2·(β+γ/2 − β) are reported apart")
    ft.add_argument("--algorithm", "-a",
                    help="algorithm of nccl-tests output (default ring; only with nccl-tests "
                         "output among DATA)")
    ft.add_argument("--ranks", type=int, help="ranks of nccl-tests output that lists no "
                                              "'#  Rank' lines (only with nccl-tests output)")
    ft.add_argument("--save", metavar="PRESET.toml",
                    help="write the fit as a network preset (flowemu run --network FILE)")
    ft.add_argument("--plot", metavar="FIG.png", help="write fit vs measurement (PNG, PDF "
                                                      "or SVG)")
    return p


def _network(args):
    """The run's Network; every value parsed under its CLI option's name."""
    from ..core.network import Network
    from ..core.units import parse_rate, parse_time
    times = {name: parse_time(getattr(args, name), "--" + name.replace("_", "-"))
             for name in ("link_latency", "hop_latency", "alpha", "gamma", "delta",
                          "incast_slope")}
    values = {"bandwidth": parse_rate(args.bandwidth, "--bandwidth"),
              "incast_threshold": args.incast_threshold, **times}
    try:
        if args.network is not None:   # the preset, with the options given overriding it
            from ..core.presets import preset_network
            net = preset_network(args.network, {k: v for k, v in values.items()
                                                if _given(args, k)}, "--network")
            if (_given(args, "incast_slope") or _given(args, "incast_threshold")) \
                    and not net.incast_on:
                raise ConfigError(f"--network {args.network}: incast needs both a threshold "
                                  "and a slope; give --incast-threshold and --incast-slope")
            return net
        return Network(**values)
    except ConfigError as exc:   # only incast_threshold is left unchecked here
        raise ConfigError(re.sub(r"^incast_threshold:", "--incast-threshold:", str(exc))) \
            from None


def _notes(df) -> list[str]:
    """The distinct fallback notes of a result table, in order."""
    return list(dict.fromkeys(n for n in df.get("note", []) if isinstance(n, str) and n))


def _table(df) -> str:
    from ..core.units import format_rate, format_size, format_time
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
    return text + "".join(f"\nnote: {note}" for note in _notes(df))


def _write(df, fmt: str, out: str | None) -> None:
    """Write the result table as ``fmt`` to ``out`` (checked before) or stdout."""
    if fmt == "parquet":
        write_frame(out, "--out", df, fmt)
        return
    text = _table(df) if fmt == "table" else (
        df.to_csv(index=False) if fmt == "csv" else df.to_json(orient="records", indent=1))
    if out:
        write_text(out, "--out", text)
    else:
        print(text.rstrip("\n"))


def _flows_format(path: str) -> str:
    return output_format(path, None, FLOWS_FORMATS, option="--flows-out", default="csv")


def _congestion_paths(path: str) -> tuple[Path, Path]:
    """``--congestion PATH`` writes the steps there and the summary beside it."""
    base = Path(path)
    return base, base.with_name(base.stem + "_summary" + base.suffix)


def _refuse(option: str, why: str) -> None:
    raise ConfigError(f"{option}: {why}; drop it")


def _check_run_options(args) -> None:
    """Refuse every option given explicitly that this run would ignore."""
    if args.traffic:
        # the traffic file fixes the bytes of every flow and the ranks (its ids), and it
        # has no reduction work for γ and δ to cost
        for dest, option in (("sizes", "--sizes"), ("ranks", "--ranks"), ("gamma", "--gamma"),
                             ("delta", "--delta")):
            if _given(args, dest):
                _refuse(option, "does not apply to --traffic (the file gives every flow's "
                                "bytes and ranks, and no reduction)")
        if args.congestion:
            raise ConfigError("--congestion works with --algorithm, not --traffic")
    for dest, option in (("flows_size", "--flows-size"), ("flows_steps", "--flows-steps")):
        if _given(args, dest) and not args.flows_out:
            _refuse(option, "applies only with --flows-out")
    if args.traffic and _given(args, "flows_size"):
        _refuse("--flows-size", "does not apply to --traffic (its flows carry their own bytes)")
    if args.model != "flow":
        from ..models.genmodel import MODELS
        if args.model not in MODELS:
            raise ConfigError(f"--model: {args.model!r} is not allowed; expected "
                              f"{' or '.join(MODELS)}")
        for dest, option in (("traffic", "--traffic"), ("congestion", "--congestion"),
                             ("flows_out", "--flows-out"), ("ecmp", "--ecmp")):
            if getattr(args, dest) and (dest != "ecmp" or _given(args, "ecmp")):
                _refuse(option, f"works with --model flow (the flow engine), not --model "
                                f"{args.model}")
    for dest, option in (("fail", "--fail"), ("degrade", "--degrade"), ("slow", "--slow")):
        for value in getattr(args, dest) or ():
            if not value.replace(";", "").strip():
                raise ConfigError(f"{option}: {value!r} is empty; give a selector (see flowemu "
                                  "list, what-ifs) or drop the option")
    if _given(args, "fail_policy") and not args.fail:
        _refuse("--fail-policy", "applies only with --fail (no link fails in this run)")
    if _given(args, "seed") and args.ecmp != "hash":
        _refuse("--seed", f"applies only to --ecmp hash (this run uses --ecmp {args.ecmp})")
    _check_incast_pair(args)


def _check_incast_pair(args) -> None:
    """One of --incast-threshold/--incast-slope without the other (and no
    preset that may hold it) is refused."""
    slope, threshold = _given(args, "incast_slope"), _given(args, "incast_threshold")
    if slope != threshold and args.network is None:   # a preset may hold the other one
        given, missing = (("--incast-slope", "--incast-threshold") if slope
                          else ("--incast-threshold", "--incast-slope"))
        raise ConfigError(f"{given}: incast needs both --incast-threshold and --incast-slope; "
                          f"give {missing} too, or drop {given}")


def _cmd_run(args) -> int:
    from ..core.units import parse_size, parse_sizes
    if args.out == "-":   # the usual spelling of standard output
        args.out = None
    net = _network(args)
    _check_run_options(args)
    # everything that can be refused is refused before the (possibly long) simulation
    fmt = output_format(args.out, args.format if _given(args, "format") else None, FORMATS)
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
        output_format(args.congestion, None, CONGESTION_FORMATS, option="--congestion",
                      default="csv")
        outputs["--congestion"] = args.congestion
        outputs["--congestion (its summary file)"] = str(_congestion_paths(args.congestion)[1])
    if args.flows_out:
        _flows_format(args.flows_out)
    check_distinct({"--traffic": args.traffic, **outputs})   # never overwrite the input
    for option, path in outputs.items():
        if path is not None:
            check_writable(path, option.split(" ")[0])
    if args.flows_out:   # first: a dump refused (memory, steps) costs no simulation
        _write_flows(args, net, flows_size)
    whatif = _whatif(args)
    df = _timed(args, net, sizes, whatif)
    if whatif:   # and the healthy network, for the slowdown
        import pandas as pd

        from ..study.results import slowdown
        both = slowdown(pd.concat([df, _timed(args, net, sizes, {})], ignore_index=True))
        df = both.iloc[:len(df)].reset_index(drop=True)
    _write(df, fmt, args.out)
    if args.slow and not (df["gamma_s_per_B"] > 0).any() and not (df["delta_s_per_B"] > 0).any() \
            and not all(item.strip().endswith(":network") for value in args.slow
                        for item in value.split(";") if item.strip()):
        print("flowemu: note: --slow: a slower reduction costs nothing here (gamma and delta "
              "are 0; give --gamma/--delta); only the ranks' network slowdown counts",
              file=sys.stderr)
    for note in _notes(df):   # fallbacks, said once
        print(f"flowemu: note: {note}", file=sys.stderr)
    if args.congestion:
        _write_congestion(args, net)
    return 0


def _whatif(args) -> dict:
    """The what-if options given, as keywords of :func:`flowemu.simulate`."""
    out = {"fail": args.fail, "degrade": args.degrade,
           "slow": ";".join(args.slow) if args.slow else None, "background": args.background}
    out = {k: v for k, v in out.items() if v}
    if out or _given(args, "fail_policy"):
        out["fail_policy"] = args.fail_policy
    return out


def _timed(args, net, sizes, whatif: dict):
    """The result rows of ``run`` (an algorithm or a traffic file) with these what-ifs."""
    from ..api.simulation import simulate, time_traffic
    if args.traffic:
        return time_traffic(args.topology, args.traffic, ecmp=args.ecmp, seed=args.seed,
                            placement=args.placement, network=net,
                            max_memory=_max_memory(args), **whatif)
    return simulate(args.topology, args.algorithm, sizes, ecmp=args.ecmp, seed=args.seed,
                    ranks=args.ranks, placement=args.placement, network=net,
                    max_memory=_max_memory(args), model=args.model, **whatif)


def _write_congestion(args, net) -> None:
    from ..api.simulation import congestion
    steps, summary = congestion(args.topology, args.algorithm, ecmp=args.ecmp, seed=args.seed,
                                ranks=args.ranks, placement=args.placement, network=net,
                                **_whatif(args))
    if args.congestion == "-":
        print("\ncongestion per step (loads in bytes per byte of n):")
        print(steps.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
        print("\ndeficiencies (Ψ bandwidth, Ξ congestion; Ψ·Ξ = bandwidth time / optimal):")
        print(summary.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
        return
    fmt = output_format(args.congestion, None, CONGESTION_FORMATS, option="--congestion",
                        default="csv")
    steps_path, summary_path = _congestion_paths(args.congestion)
    write_frame(steps_path, "--congestion", steps, fmt)
    write_frame(summary_path, "--congestion", summary, fmt)


def _max_memory(args):
    """``--max-memory`` checked as the option it is (None when not given)."""
    if args.max_memory is None:
        return None
    from ..core.budget import Limit, limit
    try:
        return Limit(limit(args.max_memory).bytes, "--max-memory")
    except ConfigError as exc:
        raise ConfigError(f"--max-memory: {str(exc).partition(': ')[2]}") from None


def _write_flows(args, net, size) -> None:
    """``--flows-out``: the per-flow dump (:func:`flowemu.api.flows.write_flows`)
    of the algorithm at ``size`` or of the traffic, CSV or parquet by
    extension, streamed step by step into a temporary file that is renamed
    into place."""
    from ..api.flows import write_flows
    if args.flows_steps is not None and not args.flows_steps.strip():
        raise ConfigError("--flows-steps: empty; expected indices such as 0,3,5-7 or labels")
    if args.traffic and args.flows_size:
        raise ConfigError("--flows-size applies to --algorithm; --traffic flows carry their "
                          "own bytes")
    common = {"steps": args.flows_steps, "ecmp": args.ecmp, "seed": args.seed,
              "placement": args.placement, "network": net, "max_memory": _max_memory(args),
              **_whatif(args)}
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


#: ``flowemu list``: the what-if options, one line each
WHATIF_DOCS = {
    "fail": "failed links, selectors joined by ';': link:ID[-ID], node:V, grid coordinates "
            "X,Y ('*' any; torus, mesh, hyperx, hammingmesh), LEVEL:I or LEVEL:* (fattree "
            "host/edge/agg/core or leaf/spine, leafspine host/leaf/spine, tree "
            "host/root/depthD, dragonfly host/router/group, hammingmesh colswitch/rowswitch), "
            "id:NAME (graph), A-B (the cables between two), random:K:SEED",
    "degrade": "SELECTOR=F[:lat=M]: bandwidth x F (0 < F <= 1), latency x M (M >= 1)",
    "fail_policy": "strict (default: ring and bucket refuse a failure that takes their "
                   "neighbour links) | reroute (route them around it)",
    "slow": "RANKS=F[:compute|:network] joined by ';', RANKS 3 | 3,5 | 7-9 | random:K:SEED, "
            "F in (0, 1] (speed fraction)",
    "background": "perm:LOAD[:SEED] | alltoall:LOAD | hotspot:LOAD[:TARGET] | a traffic file "
                  "(step,src,dst,bytes: endpoints, bytes/s of demand); LOAD in (0, 1]",
}


def _cmd_list(args) -> int:
    from ..algorithms import algorithm_names, get_algorithm
    from ..topology import MODE_DOCS, topology_families, topology_modes
    print("algorithms:")
    for name in algorithm_names():
        spec = get_algorithm(name)
        first = (spec.doc.strip().splitlines() or [""])[0]
        print(f"  {name:10s} {first}")
        for prm in spec.params:
            choices = f" one of {', '.join(map(str, prm.choices))}" if prm.choices else ""
            print(f"      {prm.name}={prm.default}{choices}  {prm.doc}")
    from ..algorithms.registry import plugin_errors
    for msg in plugin_errors().values():   # a broken plug-in: said, the rest listed
        print(f"flowemu: note: {msg}", file=sys.stderr)
    print("topologies:")
    modes = topology_modes()
    for fam, doc in sorted(topology_families().items()):
        print(f"  {fam:10s} {doc}")
        engine = (*modes[fam], "adaptive") if "split" in modes[fam] else modes[fam]
        print(f"      ecmp: {', '.join(engine)} (default split)")
    print("ecmp modes:")
    for mode, doc in MODE_DOCS.items():
        print(f"  {mode:10s} {doc}")
    print("what-ifs (run --fail/--degrade/--fail-policy/--slow/--background; simulate and "
          "sweep fields fail, degrade, fail_policy, slow, background, failures, failure_seed):")
    for name, doc in WHATIF_DOCS.items():
        print(f"  {name:11s} {doc}")
    from ..core.presets import builtin_presets
    print("network presets (--network NAME, or a .toml file):")
    for name, doc in builtin_presets().items():
        print(f"  {name:10s} {doc}")
    return 0


#: sweep() arguments and the options that set them (messages name the option)
_SWEEP_OPTIONS = {"out": "--out", "jobs": "--jobs", "scheduler": "--scheduler",
                  "scheduler_timeout": "--scheduler-timeout", "retry_errors": "--retry-errors",
                  "prune": "--prune", "chunk_size": "--chunk-size"}


def _cmd_sweep(args) -> int:
    from ..study.sweep import load_sweep, sweep
    if args.dry_run:
        for dest, option in _SWEEP_OPTIONS.items():
            if _given(args, dest):
                _refuse(option, "does not apply to --dry-run (it runs nothing)")
    if _given(args, "scheduler_timeout") and not args.scheduler:
        _refuse("--scheduler-timeout", "applies only with --scheduler")
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
    try:
        summary = sweep(args.config, args.out, jobs=args.jobs, scheduler=args.scheduler,
                        scheduler_timeout=args.scheduler_timeout,
                        retry_errors=args.retry_errors, prune=args.prune,
                        progress=not args.quiet, chunk_size=args.chunk_size)
    except ConfigError as exc:   # name the option the user typed, not the argument
        name, sep, rest = str(exc).partition(": ")
        if sep and name in _SWEEP_OPTIONS:
            raise ConfigError(f"{_SWEEP_OPTIONS[name]}: {rest}") from None
        raise
    print(summary.text())
    if summary.errors:   # the results are kept, but the dataset is incomplete
        print(summary.failure_text(), file=sys.stderr)
        return 1
    return 0


def _cmd_compare(args) -> int:
    from ..study.results import compare, compare_table, load, query
    if args.by not in ("label", "algorithm", "model", "whatif"):
        raise ConfigError(f"--by: {args.by!r} is not allowed; expected label, algorithm, "
                          "model or whatif")
    if args.out == "-":
        args.out = None
    fmt = output_format(args.out, args.format if _given(args, "format") else None,
                        COMPARE_FORMATS)
    if args.out:
        check_distinct({"the dataset": args.dataset, "--out": args.out})
        check_writable(args.out, "--out")
    df = load(args.dataset)
    if args.where and args.by == "whatif":   # keep the baselines of what is chosen
        from ..study.results import query_with_twins
        df = query_with_twins(df, args.where)
    elif args.where:
        df = query(df, args.where)
    if df.empty:
        raise ConfigError(f"compare: no results in {args.dataset}"
                          + (f" matching {args.where!r}" if args.where else ""))
    cmp = compare(df, by=args.by)
    if fmt == "parquet":
        write_frame(args.out, "--out", cmp, fmt)
        return 0
    text = compare_table(cmp) if fmt == "table" else (
        cmp.to_csv(index=False) if fmt == "csv" else cmp.to_json(orient="records", indent=1))
    if args.out:
        write_text(args.out, "--out", text)
    else:
        print(text.rstrip("\n"))
    return 0


def _cmd_plot(args) -> int:
    from ..study.figures.plots import KINDS, figures, plot
    if args.kind not in KINDS:
        raise ConfigError(f"--kind: unknown kind {args.kind!r}; allowed: {', '.join(KINDS)}")
    if args.out is None:   # every standard figure, unfiltered: the choices need --out
        for dest in ("kind", "group", "topology", "algorithm", "where", "title", "by", "size"):
            if _given(args, dest):
                _refuse(f"--{dest}", "needs --out FILE (without it, plot draws every standard "
                                     "figure of the dataset into DATASET/figures/)")
        for path in figures(args.dataset):
            print(path)
        return 0
    if not args.out.lower().endswith((".png", ".pdf", ".svg")):
        raise ConfigError(f"--out: {args.out!r} should end in .png (or .pdf, .svg)")
    kw = {"group": args.group, "title": args.title, "where": args.where,
          "topologies": _split_specs(args.topology) if args.topology else None}
    if args.kind in ("gain", "gain-curve"):
        kw["algorithm"] = args.algorithm
    elif args.algorithm:
        raise ConfigError(f"--algorithm goes with --kind gain or gain-curve, not {args.kind}")
    if args.kind == "gain-curve":
        kw["by"] = args.by or "alpha_s"
    elif args.by:
        raise ConfigError(f"--by goes with --kind gain-curve, not {args.kind}")
    if args.kind == "slowdown":
        kw["size"] = args.size
    elif args.size is not None:
        raise ConfigError(f"--size goes with --kind slowdown, not {args.kind}")
    print(plot(args.dataset, args.out, args.kind, **kw))
    return 0


def _cmd_plan(args) -> int:
    from ..algorithms import parse_algorithm_spec
    from ..algorithms.gentree.planner import table6
    from ..api.planning import plan
    from ..core.units import parse_sizes
    name, opts = parse_algorithm_spec(args.algorithm)
    if name != "gentree":
        raise ConfigError(f"--algorithm: {name!r} is not allowed; flowemu plan shows the plans "
                          "of gentree (gentree or gentree:rearrange=no)")
    unknown = sorted(set(opts) - {"rearrange", "flat"})
    if unknown or any(opts.get(k, "auto") not in ("auto", "no") for k in ("rearrange", "flat")):
        raise ConfigError(f"--algorithm: {args.algorithm!r} is not allowed; expected gentree "
                          "with options rearrange=auto|no and flat=auto|no")
    sizes = parse_sizes(args.sizes, "--sizes")
    _check_incast_pair(args)
    fmt = output_format(args.out, args.format if _given(args, "format") else None, FORMATS)
    if args.out:
        check_writable(args.out, "--out")
    df = plan(args.topology, sizes, network=_network(args), ranks=args.ranks,
              rearrange=opts.get("rearrange", "auto"), flat=opts.get("flat", "auto"))
    if not args.candidates and fmt == "table":   # the paper's Table 6 form, for reading
        wide = table6(df)
        wide.columns = _size_labels(float(c) for c in wide.columns)
        times = df.groupby("size_bytes", sort=True)["plan_time_s"].first()
        wide.loc["GenModel time (s)"] = [f"{t:.4g}" for t in times]
        df = wide.reset_index()
    elif not args.candidates:                     # data: one row per switch and size
        df = df[df["chosen"]].drop(columns=["candidate", "chosen"]).assign(
            plan=df.loc[df["chosen"], "candidate"])
    if fmt == "table":
        text = df.to_string(index=False)
        if args.out:
            write_text(args.out, "--out", text + "\n")
        else:
            print(text)
        return 0
    _write(df, fmt, args.out)
    return 0


def _size_labels(sizes) -> list[str]:
    """Column labels for vector sizes: exact where a unit divides the size
    (``40MB``, ``256MiB``), else the rounded binary form, and bytes where two
    labels would be equal."""
    from ..core.units import format_size
    sizes = [int(s) for s in sizes]
    out = []
    for s in sizes:
        exact = [(s // size, unit) for unit, size in (
            ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10), ("GB", 10**9), ("MB", 10**6),
            ("kB", 10**3)) if s >= size and s % size == 0]
        out.append(f"{min(exact)[0]}{min(exact)[1]}" if exact else format_size(s))
    if len(set(out)) < len(out):
        out = [f"{s}B" for s in sizes]
    return out


def _cmd_verify(args) -> int:
    """``flowemu verify``: each schedule's proof printed as it is done; the
    first failure on stderr (its step named), exit 1."""
    from ..core.errors import ScheduleError
    from ..api.verification import Verification, verify_each
    try:
        head, proofs = verify_each(args.algorithm, args.ranks, args.topology, size=args.size,
                                   network=args.network, max_memory=_max_memory(args))
    except ConfigError as exc:   # name the option the user typed
        msg = str(exc)
        for name in ("ranks", "size", "network"):
            if msg.startswith(name + ": "):
                msg = "--" + msg
        raise ConfigError(msg.replace("topology= (--topology)", "--topology")) from None
    try:
        for i, proof in enumerate(proofs):
            text = Verification(**head, variants=(proof,)).text(all_steps=args.all_steps)
            print(("\n" if i else "") + text, flush=True)
    except ScheduleError as exc:
        print(f"flowemu: verify: FAILED: {exc}", file=sys.stderr)
        return 1
    return 0


def _cmd_fit(args) -> int:
    from ..study.fit import fit
    outputs = {"--save": args.save, "--plot": args.plot}
    if args.plot and Path(args.plot).suffix.lower() not in (".png", ".pdf", ".svg"):
        raise ConfigError(f"--plot: {args.plot!r} has no figure extension; expected "
                          ".png, .pdf or .svg")
    if args.save and Path(args.save).suffix.lower() != ".toml":
        raise ConfigError(f"--save: {args.save!r}: a preset is a .toml file")
    check_distinct({**{f"DATA {d}": d for d in args.data}, **outputs})
    for option, path in outputs.items():
        if path is not None:
            check_writable(path, option)
    try:
        result = fit(args.data, bandwidth=args.bandwidth, algorithm=args.algorithm,
                     ranks=args.ranks)
    except ConfigError as exc:   # name the options the user typed
        msg = str(exc)
        head, sep, tail = msg.partition(": ")
        names = head.split(", ")
        if sep and set(names) <= {"bandwidth", "ranks", "algorithm"}:
            msg = ", ".join("--" + name for name in names) + sep + tail
        raise ConfigError(msg) from None
    print(result.text())
    if args.save:
        print(f"saved the network preset {result.save(args.save)}")
    if args.plot:
        print(f"wrote {result.plot(args.plot)}")
    return 0


def main(argv=None) -> int:
    try:
        try:
            args = _build_parser().parse_args(argv)
        except SystemExit as exc:   # --help, --version: printed, done
            return exc.code if isinstance(exc.code, int) else 0
        return {"run": _cmd_run, "list": _cmd_list, "sweep": _cmd_sweep,
                "compare": _cmd_compare, "plot": _cmd_plot,
                "fit": _cmd_fit, "plan": _cmd_plan, "verify": _cmd_verify}[args.command](args)
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
    except OSError as exc:   # the system refused (disk full mid-sweep, ...): one line, what
        # was written before stays (every output is written whole or not at all)
        where = f" {exc.filename!r}" if exc.filename else ""
        print(f"flowemu: error: cannot complete:{where} {exc.strerror or exc}", file=sys.stderr)
        return 1


def _split_specs(text: str) -> list[str]:
    from ..topology import split_specs
    return split_specs(text)
