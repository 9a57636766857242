"""``flowemu global``: global (all-to-all) bandwidth of a topology as a
fraction of its endpoints' injection bandwidth, or a table file's rows (a
paper's global and allreduce columns beside flowemu's)."""

from __future__ import annotations

from ..api.globalbw import global_bandwidth
from ..core.errors import ConfigError
from ..core.outputs import check_writable
from ..study.bwtable import bandwidth_table
from ..study.sweep.dataset import check_output
from .options import (
    add_network_options,
    add_output_options,
    chosen_format,
    given,
    naming_options,
    network,
    refuse,
    write_output,
)


def add_arguments(g) -> None:
    g.add_argument("table", nargs="?",
                   help="a table file (e.g. configs/tables/hammingmesh-table2.toml): every row's "
                        "global and allreduce bandwidth beside the paper's; or give -t")
    g.add_argument("--topology", "-t", help="one topology (instead of a table file)")
    g.add_argument("--ecmp", default="split", help="routing of the all-to-all (default split)")
    g.add_argument("--injection", help="what 1.0 is, a rate (default: --nic, else the "
                                       "capacity of the links leaving an endpoint)")
    g.add_argument("--nic", help="endpoints reach the topology through a NIC of this rate")
    add_network_options(g)
    add_output_options(g, out_help="write here instead of stdout")


def cmd_global(args) -> int:
    if (args.table is None) == (args.topology is None):
        raise ConfigError("flowemu global: give either a table file or --topology (one of them)")
    if args.table is not None:
        for opt in ("injection", "nic"):
            if getattr(args, opt) is not None:
                raise ConfigError(f"--{opt}: a table file gives it per row")
    for dest in ("link_latency", "hop_latency", "alpha", "gamma", "delta", "incast_threshold",
                 "incast_slope"):
        if given(args, dest):   # (a rate over injection: of the network only the bandwidth)
            refuse(f"--{dest.replace('_', '-')}", "does not change a global bandwidth (a rate "
                                                  "over injection: only the links' bandwidth "
                                                  "counts)")
    fmt = chosen_format(args)
    if args.out:
        check_output(args.out, None, "--out")
        check_writable(args.out, "--out")
    if args.table is not None:
        df = bandwidth_table(args.table)
    else:
        with naming_options(args):   # ecmp: ... from the API reads --ecmp: ...
            df = global_bandwidth(args.topology, ecmp=args.ecmp, injection=args.injection,
                                  nic=args.nic, network=network(args))
    write_output(df, fmt, args.out, table=lambda d: d.to_string(index=False) + "\n")
    return 0
