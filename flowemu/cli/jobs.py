"""``flowemu jobs``: several jobs' allreduces sharing one network
(:func:`flowemu.simulate_jobs`), one row per job with its time alone and the
slowdown."""

from __future__ import annotations

import re

from ..api.jobs import simulate_jobs
from ..core.errors import ConfigError
from ..core.units import format_rate, format_size, format_time
from ..topology import topology_modes
from ..topology.base import ECMP_MODES
from .options import (
    add_network_options,
    add_output_options,
    check_incast_pair,
    chosen_format,
    ecmp_help,
    given,
    max_memory,
    naming_options,
    network_keywords,
    refuse,
    refuse_empty,
    whole_number,
    write_output,
)


def add_arguments(j) -> None:
    j.add_argument("--topology", "-t", required=True, help="e.g. fattree:k=16, torus:32x32")
    j.add_argument("--job", "-j", action="append", required=True, metavar="'KEY=VALUE ...'",
                   help="one job, repeat for each: algorithm=NAME[:opts] size=SIZE "
                        "[ranks=N] [placement=packed|linear|random:SEED|FILE] [start=TIME], "
                        "e.g. --job 'algorithm=ring size=64MiB ranks=512' --job "
                        "'algorithm=swing size=64MiB ranks=512 start=20us' (ranks default: "
                        "every endpoint left; placement default packed: the next free "
                        "endpoints; linear or a file may share endpoints with earlier jobs); "
                        "the table and error messages number the jobs from 0")
    j.add_argument("--sync", default="barrier",
                   help="barrier (each job's step ends when all its flows are delivered, "
                        "default) | dataflow (each rank goes on when its own are)")
    add_network_options(j)
    j.add_argument("--ecmp", default="split", help=ecmp_help(ECMP_MODES, topology_modes()))
    j.add_argument("--seed", type=whole_number, default=0, help="seed of --ecmp hash (default 0)")
    add_output_options(j)
    j.add_argument("--max-memory", help="refuse a run estimated to need more memory, e.g. 8GiB "
                                        "(default: FLOWEMU_MAX_MEMORY or 80%% of available "
                                        "memory)")
    w = j.add_argument_group("what-if (every job runs under it, alone and together)")
    w.add_argument("--fail", action="append", metavar="SELECTOR", help="failed links (as run)")
    w.add_argument("--degrade", action="append", metavar="SELECTOR=F[:lat=M]",
                   help="degraded links (as run)")
    w.add_argument("--fail-policy", default="strict", metavar="{strict,reroute}",
                   help="as run")
    w.add_argument("--background", metavar="SPEC|FILE", help="background traffic (as run)")


def _table(df) -> str:
    show = df[["job", "algorithm", "variant", "ranks", "placement"]].copy()
    show["size"] = df["size_bytes"].map(format_size)
    show["start"] = df["start_s"].map(format_time)
    show["time"] = df["time_s"].map(format_time)
    show["alone"] = df["alone_s"].map(format_time)
    show["slowdown"] = df["slowdown"].map(lambda v: f"{v:.3f}x")
    show["goodput"] = df["goodput_Bps"].map(format_rate)
    text = show.to_string(index=False)
    head = [df["topology"].iloc[0], f"sync={df['sync'].iloc[0]}"]
    head += [f"{c}={df[c].iloc[0]}" for c in ("fail", "degrade", "background")
             if isinstance(df[c].iloc[0], str) and df[c].iloc[0]]
    return ", ".join(head) + "\n" + text


def cmd_jobs(args) -> int:
    with naming_options(args):   # ecmp: ... from the API reads --ecmp: ...
        return _jobs(args)


def _jobs(args) -> int:
    if args.out == "-":
        args.out = None
    check_incast_pair(args)   # (before the network: it names the option given alone)
    net = network_keywords(args)
    refuse_empty(args)
    if given(args, "seed") and args.ecmp != "hash":
        refuse("--seed", f"applies only to --ecmp hash (this run uses --ecmp {args.ecmp})")
    if given(args, "fail_policy") and not args.fail:
        refuse("--fail-policy", "applies only with --fail (no link fails in this run)")
    fmt = chosen_format(args)
    try:
        df = simulate_jobs(args.topology, args.job, sync=args.sync, ecmp=args.ecmp,
                           seed=args.seed, **net, max_memory=max_memory(args),
                           fail=args.fail, degrade=args.degrade, fail_policy=args.fail_policy,
                           background=args.background)
    except ConfigError as exc:   # jobs[1].ranks -> job 1 (the 2nd --job), ranks
        msg = re.sub(r"^jobs\[(\d+)\]\.?(\w*)",
                     lambda m: _job_named(int(m[1])) + (f", {m[2]}" if m[2] else ""), str(exc))
        raise ConfigError(msg) from None
    write_output(df, fmt, args.out, table=_table)
    return 0


def _job_named(j: int) -> str:
    """Job ``j`` as the table numbers it (from 0, as the ``job`` column of
    :func:`flowemu.simulate_jobs` and its ``jobs[j]`` messages do), and the
    ``--job`` the user typed for it, counted as they would."""
    nth = j + 1
    suffix = "th" if 10 <= nth % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(nth % 10, "th")
    return f"job {j} (the {nth}{suffix} --job)"
