"""``flowemu fit``: fit GenModel (α, β+γ/2, δ, ε, w_t) to measured allreduce
times; print the fit, save it as a network preset (``--save``), plot it
against the measurements (``--plot``); with ``--compare``, put flowemu's
prediction beside the measurements (:mod:`flowemu.study.measured`)."""

from __future__ import annotations

from pathlib import Path

from ..core.errors import ConfigError
from ..core.outputs import check_distinct, check_writable
from ..study.fit import fit
from ..study.measured import compare_measured
from ..study.sweep.dataset import check_output
from .options import naming_options, whole_number


def add_arguments(ft) -> None:
    ft.add_argument("data", nargs="+", help="CSV (algorithm,ranks,size,time) or nccl-tests "
                                            "all_reduce_perf output files")
    ft.add_argument("--bandwidth", help="link bandwidth, e.g. 100Gb/s: β = 1/bandwidth and "
                                        "γ = 2·(β+γ/2 − β) are reported apart")
    ft.add_argument("--algorithm", "-a",
                    help="algorithm of nccl-tests output (default ring; only with nccl-tests "
                         "output among DATA)")
    ft.add_argument("--ranks", type=whole_number, help="ranks of nccl-tests output that lists no "
                                              "'#  Rank' lines (only with nccl-tests output)")
    ft.add_argument("--save", metavar="PRESET.toml",
                    help="write the fit as a network preset (flowemu run --network FILE)")
    ft.add_argument("--plot", metavar="FIG.png", help="write fit vs measurement (PNG, PDF "
                                                      "or SVG); with --compare, flowemu's "
                                                      "prediction vs measurement")
    c = ft.add_argument_group("measured against predicted")
    c.add_argument("--compare", action="store_true",
                   help="print each measurement beside flowemu's prediction for the same "
                        "algorithm, ranks and size, with the relative error "
                        "(predicted/measured - 1)")
    c.add_argument("--network", metavar="PRESET",
                   help="with --compare: predict with this network (a preset name or .toml "
                        "file) instead of the fitted one (no fit is made)")
    c.add_argument("--topology", "-t",
                   help="with --compare: run every configuration here (default tree:P, one "
                        "switch of its P ranks, the fit's setting)")
    c.add_argument("--model", choices=("flow", "genmodel"), default="flow",
                   help="with --compare: flowemu's flow engine (default) or GenModel")


def cmd_fit(args) -> int:
    for option, value in (("--network", args.network), ("--topology", args.topology),
                          ("--model", None if args.model == "flow" else args.model)):
        if value is not None and not args.compare:
            raise ConfigError(f"{option} applies with --compare only")
    if args.network is not None and args.save:
        raise ConfigError("--save writes the fit; with --network no fit is made")
    if args.network is not None and args.bandwidth:
        raise ConfigError("--bandwidth applies to the fit; with --network no fit is made "
                          "(the network has its bandwidth)")
    outputs = {"--save": args.save, "--plot": args.plot}
    if args.plot and Path(args.plot).suffix.lower() not in (".png", ".pdf", ".svg"):
        raise ConfigError(f"--plot: {args.plot!r} has no figure extension; expected "
                          ".png, .pdf or .svg")
    if args.save and Path(args.save).suffix.lower() != ".toml":
        raise ConfigError(f"--save: {args.save!r}: a preset is a .toml file")
    check_distinct({**{f"DATA {d}": d for d in args.data}, **outputs})
    for option, path in outputs.items():
        if path is not None:
            check_output(path, None, option)
            check_writable(path, option)
    if args.compare:
        return _compare(args)
    with naming_options(args):   # bandwidth: ... from the API reads --bandwidth: ...
        result = fit(args.data, bandwidth=args.bandwidth, algorithm=args.algorithm,
                     ranks=args.ranks)
    print(result.text())
    if args.save:
        print(f"saved the network preset {result.save(args.save)}")
    if args.plot:
        print(f"wrote {result.plot(args.plot)}")
    return 0


def _compare(args) -> int:
    """``--compare``: the fit (unless ``--network``), then measured beside predicted."""
    with naming_options(args):   # topology ...: from the API reads --topology ...:
        result = None if args.network else fit(args.data, bandwidth=args.bandwidth,
                                               algorithm=args.algorithm, ranks=args.ranks)
        network = args.network if result is None else result.network()
        comparison = compare_measured(args.data, network=network, topology=args.topology,
                                      model=args.model, algorithm=args.algorithm,
                                      ranks=args.ranks)
    if result is not None:
        comparison.network_source = "fitted to the measurements"
        print(result.text() + "\n")
        if args.save:
            print(f"saved the network preset {result.save(args.save)}")
    print(comparison.text())
    if args.plot:
        print(f"wrote {comparison.plot(args.plot)}")
    return 0
