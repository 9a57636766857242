"""``flowemu compare``: the best algorithm and the goodput gains per topology
and size of a dataset (or flow vs GenModel times, or the what-ifs' slowdowns),
as a table, CSV, JSON or parquet."""

from __future__ import annotations

from ..core.errors import ConfigError
from ..core.outputs import check_distinct, check_writable
from ..study import results
from ..study.results import query_with_twins
from ..study.sweep.dataset import check_output
from ..study.sweep.where import nothing_matched
from .options import (
    WHERE_HELP,
    add_output_options,
    chosen_format,
    naming_options,
    write_output,
)

#: the values of --by
BY = ("label", "algorithm", "model", "sync", "whatif")


def add_arguments(c) -> None:
    c.add_argument("dataset", help="a sweep's dataset directory (or a parquet/CSV file)")
    add_output_options(c)
    c.add_argument("--by", default="label",
                   help="label (variants apart, default) | algorithm (best variant) | model "
                        "(flow vs genmodel time of each configuration and their ratio) | sync "
                        "(barrier vs dataflow, likewise) | "
                        "whatif (slowdown of each what-if against the healthy network; "
                        "random failures: mean, min and max over the seeds)")
    c.add_argument("--where", help=WHERE_HELP)


def cmd_compare(args) -> int:
    if args.by not in BY:
        raise ConfigError(f"--by: {args.by!r} is not allowed; expected label, algorithm, "
                          "model, sync or whatif")
    if args.out == "-":
        args.out = None
    fmt = chosen_format(args)
    if args.out:
        check_distinct({"the dataset": args.dataset, "--out": args.out})
        check_output(args.out, args.dataset, "--out")   # (makes its _ directory)
        check_writable(args.out, "--out")
    # through the module: a test may stand in for the loading
    with naming_options(args):   # where: ... from the API reads --where: ...
        df = whole = results.load(args.dataset)
        if args.where and args.by == "whatif":   # keep the baselines of what is chosen
            df = query_with_twins(df, args.where)
        elif args.where:
            df = results.query(df, args.where)
        if df.empty:
            raise ConfigError(f"compare: no results in {args.dataset}"
                              + (f" matching {args.where!r}"
                                 f"{nothing_matched(whole, args.where)}" if args.where else ""))
        cmp = results.compare(df, by=args.by)
        if fmt != "table":
            cmp = with_fixed_columns(cmp, df)
        write_output(cmp, fmt, args.out, table=results.compare_table)
    return 0


def with_fixed_columns(cmp, df):
    """``cmp`` with the scenario columns its rows share in ``df`` (one value
    in all of them) put first: :func:`flowemu.results.compare` keeps only
    those that vary, and a file (CSV, JSON, parquet) of a filtered dataset
    would lose what its rows hold (the background, the group): two such
    files could not be told apart, and their columns would change with the
    data."""
    fixed = {c: df[c].iloc[0] for c in results.SCENARIO_COLUMNS
             if c in df.columns and c not in cmp.columns and df[c].nunique(dropna=False) == 1}
    if not fixed:
        return cmp
    return cmp.assign(**fixed)[list(fixed) + list(cmp.columns)]
