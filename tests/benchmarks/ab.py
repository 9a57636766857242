"""Time the event-driven solver of this checkout against another commit's,
side by side in one process: the honest figure for a change smaller than
the spread between pytest-benchmark runs in separate processes (10-30 %
here, on the background profile and the small fat-tree rows).

    python -m tests.benchmarks.ab REF [WORKLOAD ...] [--rounds N]

``REF`` is a git revision (a commit, ``HEAD~1``); its ``flowemu`` package is
extracted into a temporary directory and imported as ``flowemu_ref`` beside
this checkout's ``flowemu`` (the package imports itself relatively, so the
two do not mix). A workload is one of issue 25's
(:data:`tests.benchmarks.simgrid.problems.WORKLOADS`: ``taper2-split``,
``swing64-background``, ...; ``tiny`` is for the tests): its solver
problems are recorded as this checkout's engine builds them, then each is
solved by both ``solve_completion``\\ s ``--rounds`` times, alternating (the
first round of each left out: it compiles or loads the kernels). The best
and median of each side are printed with their ratio, beside a 1 GiB copy
timed in the same process. The two solutions must agree (finish times and
bytes moved, to 1e-12 relative), or the line says so and the exit status is
1.
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from tests.benchmarks.simgrid.problems import WORKLOADS, permutation_run, recorded
from tests.benchmarks.yardstick import copy_1gib_ms

ROOT = Path(__file__).resolve().parents[2]
REF_NAME = "flowemu_ref"
#: issue 25's workloads, and a small one for the tests
AB_WORKLOADS = {**WORKLOADS, "tiny": ("random permutation, torus:4x4, split",
                                      permutation_run("torus:4x4", "split"))}


def extract(ref: str, into: Path) -> Path:
    """``REF``'s flowemu package as ``into/flowemu_ref``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "flowemu"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    (into / "flowemu").rename(into / REF_NAME)
    return into / REF_NAME


def _agree(a, b) -> bool:
    """Finish times and bytes moved equal to 1e-12 relative (inf with inf)."""
    pairs = [(a.finish, b.finish)] + ([(a.moved, b.moved)] if a.moved is not None else [])
    return all(np.allclose(x, y, rtol=1e-12, atol=0.0) for x, y in pairs)


def compare(ref: str, names, rounds: int = 5, out=sys.stdout) -> bool:
    """Solve the problems of each workload of ``names`` here and at ``ref``,
    alternating; print a line each. Returns whether every pair agreed."""
    agreed = True
    with tempfile.TemporaryDirectory() as tmp:
        extract(ref, Path(tmp))
        sys.path.insert(0, tmp)
        try:
            solvers = {"here": importlib.import_module("flowemu.kernels.maxmin"),
                       "ref": importlib.import_module(f"{REF_NAME}.kernels.maxmin")}
            print(f"1 GiB copy: {copy_1gib_ms():.0f} ms", file=out)
            for name in names:
                what, run = AB_WORKLOADS[name]
                problems = [p for p in recorded(run, name) if p.finishing.any()]
                times = {side: [] for side in solvers}
                same = True
                for k in range(rounds + 1):
                    for side in (("here", "ref") if k % 2 else ("ref", "here")):
                        mm = solvers[side]
                        t = time.perf_counter()
                        got = [mm.solve_completion(
                            p.routes, p.capacity, p.flow_bytes,
                            persistent=p.persistent if p.persistent.any() else None)
                            for p in problems]
                        if k:
                            times[side].append(time.perf_counter() - t)
                        if side == "ref":
                            ref_got = got
                        else:
                            here_got = got
                    same &= all(_agree(a, b) for a, b in zip(here_got, ref_got))
                agreed &= same
                best = {side: 1e3 * min(v) for side, v in times.items()}
                median = {side: 1e3 * statistics.median(v) for side, v in times.items()}
                print(f"{name}: here {best['here']:.1f} ms (median {median['here']:.1f}), "
                      f"{ref} {best['ref']:.1f} ms (median {median['ref']:.1f}), "
                      f"ratio {best['here'] / best['ref']:.3f}"
                      + ("" if same else "; RESULTS DIFFER")
                      + f"  [{what}; {len(problems)} problem(s)]", file=out)
        finally:
            sys.path.remove(tmp)
            for mod in [m for m in sys.modules if m == REF_NAME or m.startswith(REF_NAME + ".")]:
                del sys.modules[mod]
    return agreed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.benchmarks.ab",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("ref", help="git revision to compare with (e.g. HEAD~1)")
    parser.add_argument("workloads", nargs="*", default=["taper2-split", "swing64-background"],
                        help=f"of: {', '.join(AB_WORKLOADS)} (default taper2-split "
                             "swing64-background)")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds each (default 5)")
    args = parser.parse_args(argv)
    unknown = [w for w in args.workloads if w not in AB_WORKLOADS]
    if unknown:
        parser.error(f"unknown workload(s) {', '.join(unknown)}; known: "
                     f"{', '.join(AB_WORKLOADS)}")
    if args.rounds < 1:
        parser.error("--rounds: at least 1")
    return 0 if compare(args.ref, args.workloads, args.rounds) else 1


if __name__ == "__main__":
    sys.exit(main())
