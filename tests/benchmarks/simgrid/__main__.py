"""flowemu's solver against SimGrid's LMM solver on the same problems.

    python -m tests.benchmarks.simgrid --simgrid DIR [--limit S] [WORKLOAD ...]

DIR is a SimGrid 4.1 source tree built with cmake in DIR/build (docs/model.md,
"Against SimGrid", gives the commands). For each workload (default: all of
``problems.WORKLOADS``) and each of its problems, prints flowemu's solve time
(the fastest of three, beside a 1 GiB copy timed in the same run), SimGrid's
event loop time (``lmmrun.cpp``; stopped after ``--limit`` seconds, with the
share of flows finished by then), and the largest relative difference of the
finish times of the flows both finished."""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from tests.benchmarks.simgrid.problems import WORKLOADS, Problem, warm, workload_problems
from tests.benchmarks.yardstick import copy_1gib_ms

HERE = Path(__file__).resolve().parent
#: finish times are scaled to end near this many seconds, far above SimGrid's
#: timing precision (1e-9 s)
END_S = 1e4


def build_driver(simgrid: Path, out: Path) -> Path:
    """Compile ``lmmrun.cpp`` against the SimGrid tree ``simgrid``."""
    lib = simgrid / "build" / "lib"
    if not (lib / "libsimgrid.so").exists():
        raise SystemExit(f"--simgrid: {simgrid} has no build/lib/libsimgrid.so; build SimGrid "
                         "first (docs/model.md, 'Against SimGrid')")
    exe = out / "lmmrun"
    cmd = ["g++", "-O3", "-DNDEBUG", "-std=c++17", f"-I{simgrid}", f"-I{simgrid / 'include'}",
           f"-I{simgrid / 'build' / 'include'}", f"-I{simgrid / 'build'}", "-o", str(exe),
           str(HERE / "lmmrun.cpp"), f"-L{lib}", "-lsimgrid", f"-Wl,-rpath,{lib}"]
    subprocess.run(cmd, check=True)
    return exe


def run_simgrid(exe: Path, problem: Problem, scale: float, limit: float, work: Path):
    """SimGrid's figures (a dict) and finish times (scaled unit; -1: not finished)."""
    src, out = work / "problem.bin", work / "finish.bin"
    problem.write(src)
    line = subprocess.run([str(exe), str(src), repr(float(scale)), repr(float(limit)), str(out)], check=True,
                          capture_output=True, text=True).stdout.strip()
    figures = {k: float(v) for k, v in (kv.split("=") for kv in line.split())}
    return figures, np.fromfile(out, np.float64)


def compare(exe: Path, problem: Problem, limit: float, work: Path) -> dict:
    ours_s = float("inf")
    for _ in range(3):   # (the fastest of three; the kernels are warm: problems.warm)
        t0 = time.perf_counter()
        sol = problem.solve()
        ours_s = min(ours_s, time.perf_counter() - t0)
    finite = problem.finishing
    scale = END_S / sol.finish[finite].max()
    sg, sg_finish = run_simgrid(exe, problem, scale, limit, work)
    both = finite & (sg_finish >= 0)
    ours = sol.finish[both] * scale
    diff = float(np.max(np.abs(sg_finish[both] - ours) / ours)) if both.any() else float("nan")
    return {"problem": problem.name, "flows": int(finite.sum()),
            "persistent": int(problem.persistent.sum()), "entries": int(problem.flow_ptr[-1]),
            "flowemu_s": ours_s, "simgrid_s": sg["run_s"], "simgrid_done": int(sg["done"]),
            "stopped": bool(sg["stopped"]), "max_rel_diff": diff}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.benchmarks.simgrid", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("workloads", nargs="*", metavar="WORKLOAD",
                    help=f"one of {', '.join(WORKLOADS)} (default: all)")
    ap.add_argument("--simgrid", type=Path, required=True,
                    help="a SimGrid 4.1 source tree built in DIR/build")
    ap.add_argument("--limit", type=float, default=300.0,
                    help="seconds SimGrid may solve one problem (default 300)")
    args = ap.parse_args(argv)
    for w in args.workloads:
        if w not in WORKLOADS:
            ap.error(f"workload: {w!r} is not one of {', '.join(WORKLOADS)}")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        exe = build_driver(args.simgrid.resolve(), work)
        warm()
        print(f"1 GiB copy: {copy_1gib_ms():.0f} ms", flush=True)
        print("| problem | flows (persistent) | route entries | flowemu | SimGrid LMM "
              "| SimGrid / flowemu | finish times, max rel. diff |")
        print("|---|---|---|---|---|---|---|")
        for w in args.workloads or list(WORKLOADS):
            for problem in workload_problems(w):
                r = compare(exe, problem, args.limit, work)
                sg = f"{r['simgrid_s']:.3f} s"
                ratio = f"{r['simgrid_s'] / r['flowemu_s']:.1f}x"
                if r["stopped"]:
                    sg = f"> {r['simgrid_s']:.0f} s ({r['simgrid_done']:,} of {r['flows']:,} " \
                         "flows finished)"
                    ratio = "> " + ratio
                print(f"| {r['problem']} | {r['flows']:,} ({r['persistent']:,}) | "
                      f"{r['entries']:,} | {1e3 * r['flowemu_s']:.1f} ms | {sg} | {ratio} | "
                      f"{r['max_rel_diff']:.1e} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
