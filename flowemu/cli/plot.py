"""``flowemu plot``: goodput, time, gain or slowdown figures of a dataset.

Without ``--out`` every standard figure goes into ``DATASET/_figures/``; with
``--out FILE.png`` (or .pdf, .svg) one figure, chosen by ``--kind`` and
filtered by the other options.
"""

from __future__ import annotations

import os

from ..core.errors import ConfigError, suggest
from ..study.figures.plots import KINDS, figures, plot
from ..topology import split_specs
from .options import WHERE_HELP, given, naming_options, note

#: plot()'s arguments as this command's options (its messages name the former)
PLOT_OPTIONS = {"kind": "--kind", "group": "--group", "topologies": "--topology",
                "algorithm": "--algorithm", "by": "--by", "size": "--size", "where": "--where",
                "title": "--title", "relative": "--relative"}


def add_arguments(pl) -> None:
    pl.add_argument("dataset", help="a sweep's dataset directory (or a parquet/CSV file)")
    pl.add_argument("--out", "-o",
                    help="FILE.png (default: every figure into DATASET/_figures/)")
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
    pl.add_argument("--relative", action="store_true",
                    help="--kind goodput: a second panel under each, every algorithm's "
                         "goodput in percent of the best at each size (linear axis)")
    pl.add_argument("--where", help=WHERE_HELP)
    pl.add_argument("--title", help="figure title")


def cmd_plot(args) -> int:
    if args.kind not in KINDS:
        raise ConfigError(f"--kind: unknown kind {args.kind!r}{suggest(args.kind, KINDS)}; "
                          f"allowed: {', '.join(KINDS)}")
    if args.out is None:   # every standard figure, unfiltered: the choices need --out
        for dest in ("kind", "group", "topology", "algorithm", "where", "title", "by", "size",
                     "relative"):
            if given(args, dest):   # (a choice of one figure: give --out, not "drop it")
                raise ConfigError(f"--{dest}: chooses one figure, which needs --out FILE "
                                  "(without --out, plot draws every standard figure of the "
                                  "dataset into DATASET/_figures/)")
        if os.path.isfile(args.dataset):   # (its figures would go to FILE/_figures/)
            raise ConfigError(f"plot: {args.dataset} is a file; the standard figures are a "
                              "sweep dataset's (a directory: DATASET/_figures/); for a file "
                              "give --out FIG.png (and --kind)")
        left_out: list[str] = []
        for path in figures(args.dataset, notes=left_out):
            print(path)
        for text in left_out:
            note(text)
        return 0
    kw = {"group": args.group, "title": args.title, "where": args.where,
          "topologies": split_specs(args.topology) if args.topology else None}
    if args.kind in ("gain", "gain-curve"):
        kw["algorithm"] = args.algorithm
    elif args.algorithm:
        raise ConfigError(f"--algorithm goes with --kind gain or gain-curve, not {args.kind}")
    if args.kind == "gain-curve":
        kw["by"] = args.by or "alpha_s"
    elif args.by:
        raise ConfigError(f"--by goes with --kind gain-curve, not {args.kind}")
    if args.kind == "goodput":
        kw["relative"] = args.relative
    elif args.relative:
        raise ConfigError(f"--relative goes with --kind goodput, not {args.kind}")
    if args.kind == "slowdown":
        kw["size"] = args.size
    elif args.size is not None:
        raise ConfigError(f"--size goes with --kind slowdown, not {args.kind}")
    with naming_options(args, PLOT_OPTIONS):   # the figures name plot()'s arguments
        print(plot(args.dataset, args.out, args.kind, **kw))
    return 0
