"""``flowemu plan``: GenTree's plan per switch and size, with the GenModel
cost of every candidate (the paper's Table 6)."""

from __future__ import annotations

from ..algorithms import parse_algorithm_spec
from ..api.planning import plan, table6
from ..core.errors import ConfigError
from ..core.outputs import check_writable
from ..core.units import format_size, parse_sizes
from ..study.sweep.dataset import check_output
from .options import (
    add_network_options,
    add_output_options,
    check_incast_pair,
    chosen_format,
    naming_options,
    network_keywords,
    whole_number,
    write_output,
)


def add_arguments(pn) -> None:
    pn.add_argument("--topology", "-t", required=True,
                    help="a tree (e.g. tree:SYM384), leaf-spine or fat tree")
    pn.add_argument("--algorithm", "-a", default="gentree",
                    help="gentree, with rearrange=no (the paper's GenTree*) or flat=no "
                         "(no flat baseline) (default %(default)s)")
    pn.add_argument("--sizes", "-s", default="40MB,128MB,400MB",
                    help="vector sizes (default %(default)s: the paper's 1e7, 3.2e7 and "
                         "1e8 floats)")
    pn.add_argument("--ranks", type=whole_number, help="number of ranks (default: every host)")
    pn.add_argument("--candidates", action="store_true",
                    help="one row per candidate with its GenModel cost (default: the chosen "
                         "plan per switch and size)")
    add_network_options(pn)   # as flowemu run's
    add_output_options(pn, out_help="write here instead of stdout")


def cmd_plan(args) -> int:
    with naming_options(args):   # ranks: ... from the API reads --ranks: ...
        return _plan(args)


def _plan(args) -> int:
    name, opts = parse_algorithm_spec(args.algorithm)
    if name != "gentree":
        raise ConfigError(f"--algorithm: {name!r} is not allowed; flowemu plan shows the plans "
                          "of gentree (gentree or gentree:rearrange=no)")
    unknown = sorted(set(opts) - {"rearrange", "flat"})
    if unknown or any(opts.get(k, "auto") not in ("auto", "no") for k in ("rearrange", "flat")):
        raise ConfigError(f"--algorithm: {args.algorithm!r} is not allowed; expected gentree "
                          "with options rearrange=auto|no and flat=auto|no")
    sizes = parse_sizes(args.sizes, "--sizes")
    check_incast_pair(args)
    fmt = chosen_format(args)
    if args.out:
        check_output(args.out, None, "--out")
        check_writable(args.out, "--out")
    df = plan(args.topology, sizes, **network_keywords(args), ranks=args.ranks,
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
    write_output(df, fmt, args.out, table=lambda d: d.to_string(index=False) + "\n")
    return 0


def _size_labels(sizes) -> list[str]:
    """Column labels for vector sizes: exact where a unit divides the size
    (``40MB``, ``256MiB``), else the rounded binary form, and bytes where two
    labels would be equal."""
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
