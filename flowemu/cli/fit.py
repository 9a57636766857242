"""``flowemu fit``: fit GenModel (α, β+γ/2, δ, ε, w_t) to measured allreduce
times; print the fit, save it as a network preset (``--save``), plot it
against the measurements (``--plot``)."""

from __future__ import annotations

from pathlib import Path

from ..core.errors import ConfigError
from ..core.outputs import check_distinct, check_writable
from ..study.fit import fit
from .options import as_options


def add_arguments(ft) -> None:
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


def cmd_fit(args) -> int:
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
        raise ConfigError(as_options(str(exc), {"bandwidth": "--bandwidth", "ranks": "--ranks",
                                                "algorithm": "--algorithm"})) from None
    print(result.text())
    if args.save:
        print(f"saved the network preset {result.save(args.save)}")
    if args.plot:
        print(f"wrote {result.plot(args.plot)}")
    return 0
