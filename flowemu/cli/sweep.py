"""``flowemu sweep``: run a sweep file (a TOML grid) into a parquet dataset.

Re-running resumes; ``--dry-run`` lists the configurations and runs nothing;
exit 1 when configurations failed (their rows are kept, the dataset is
incomplete).
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path

from ..core.errors import ConfigError
from ..study.sweep import dataset as ds
from ..study.sweep import load_sweep, sweep
from ..study.sweep.journal import journaled
from ..study.sweep.run import counted, foreign_files, other_sweep
from .options import as_options, given, note, refuse, whole_number

#: sweep() arguments and the options that set them (messages name the option)
SWEEP_OPTIONS = {"out": "--out", "jobs": "--jobs", "scheduler": "--scheduler",
                 "scheduler_timeout": "--scheduler-timeout", "retry_errors": "--retry-errors",
                 "prune": "--prune", "chunk_size": "--chunk-size"}


def add_arguments(s) -> None:
    s.add_argument("config", help="sweep file, e.g. configs/smoke.toml")
    s.add_argument("--out", "-o", help="dataset directory (default results/<file name>)")
    s.add_argument("--jobs", "-j", type=whole_number,
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
    s.add_argument("--chunk-size", type=whole_number, help="configurations per task and part file "
                                                  "(default: by cost; on a Dask cluster one "
                                                  "per task)")
    s.add_argument("--dry-run", action="store_true",
                   help="validate and list the configurations, run nothing; with an existing "
                        "dataset (--out, or the default), say which would be reused or run")
    s.add_argument("--quiet", "-q", action="store_true", help="no progress output")


#: what --dry-run previews beside the configurations: the dataset they go to
DRY_RUN_OPTIONS = ("out", "retry_errors")


def cmd_sweep(args) -> int:
    if args.dry_run:
        for dest, option in SWEEP_OPTIONS.items():
            if given(args, dest) and dest not in DRY_RUN_OPTIONS:
                refuse(option, "does not apply to --dry-run (it runs nothing)")
    if given(args, "scheduler_timeout") and not args.scheduler:
        refuse("--scheduler-timeout", "applies only with --scheduler")
    if args.dry_run:
        return _dry_run(args)

    def _terminate(signum, frame):   # `kill PID`: stop the workers, keep what is saved
        raise KeyboardInterrupt

    before = signal.signal(signal.SIGTERM, _terminate)
    try:
        summary = sweep(args.config, args.out, jobs=args.jobs, scheduler=args.scheduler,
                        scheduler_timeout=args.scheduler_timeout if args.scheduler else None,
                        retry_errors=args.retry_errors, prune=args.prune,
                        progress=not args.quiet, chunk_size=args.chunk_size)
    except ConfigError as exc:   # name the option the user typed, not the argument
        msg = as_options(str(exc), SWEEP_OPTIONS)
        if msg != str(exc):
            raise ConfigError(msg) from None
        raise
    finally:   # (called in a process that goes on, e.g. flowemu.cli.main in Python)
        signal.signal(signal.SIGTERM, before)
    print(summary.text())
    if summary.errors:   # the results are kept, but the dataset is incomplete
        print(summary.failure_text(), file=sys.stderr)
        return 1
    return 0


def _dry_run(args) -> int:
    """List the configurations; where the dataset they go to exists, say of
    each whether the run would reuse its rows, compute it, or leave it as
    failed earlier (without --retry-errors). Nothing is written."""
    plan = load_sweep(args.config)
    for message in plan.notes:
        note(message)
    out = Path(args.out) if args.out else Path("results") / plan.name
    known = out.is_dir()
    other = other_sweep(out, plan) if known else ""
    foreign = foreign_files(out)
    if foreign:   # as the run would refuse it
        note(f"{out} holds files that are no dataset's ({', '.join(foreign[:3])}"
             f"{' ...' if len(foreign) > 3 else ''}): a run into it is refused (choose a new or "
             "empty directory)")
        known = False
    if other:   # as the run would refuse it
        note(f"{out} holds the results of sweep {other!r}, not of {plan.name!r}: a run into "
             "it is refused (choose another --out, or add --prune to replace them)")
        known = False
    # what a killed run journaled counts as the run would count it (it saves them first)
    kept, dropped = journaled(out) if known else (set(), set())
    done = ds.result_hashes(out) | kept if known else set()
    failed = (ds.error_hashes(out) | dropped) - done if known and not args.retry_errors \
        else set()
    what = {"reuse": 0, "run": 0, "failed earlier": 0}
    for cfg in plan.configs:
        state = ("reuse" if cfg.hash in done else "failed earlier" if cfg.hash in failed
                 else "run")
        what[state] += 1
        print(f"{cfg.hash}  {cfg.key}" + (f"  ({state})" if known else ""))
    print(f"{counted(len(plan.configs), 'configuration')} in "
          f"{counted(len(plan.groups), 'group')}, "
          f"{counted(sum(c.num_rows for c in plan.configs), 'row')}")
    if known:
        # as the run would count them: rows of configurations the file no longer lists
        aside = len((done | (ds.error_hashes(out) | dropped)) - {c.hash for c in plan.configs})
        print(f"into {out}: {what['run']} to run, {what['reuse']} reused"
              + (f", {what['failed earlier']} failed earlier (--retry-errors runs them)"
                 if what["failed earlier"] else "")
              + (f", {aside} set aside (the file no longer lists "
                 f"{'it' if aside == 1 else 'them'}; --prune deletes them)" if aside else ""))
    return 0
