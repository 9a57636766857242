"""Helpers the kill tests share: run ``flowemu sweep`` as a child process
(this checkout first on the path) and follow its worker processes in /proc."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import flowemu

REPO_ROOT = Path(flowemu.__file__).resolve().parents[1]


def start_sweep(path, out, *args, stderr=subprocess.PIPE):
    """``flowemu sweep PATH --out OUT -q ARGS`` in a child process."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(REPO_ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    return subprocess.Popen([sys.executable, "-m", "flowemu", "sweep", str(path), "--out",
                             str(out), "-q", *args], env=env, stdout=subprocess.DEVNULL,
                            stderr=stderr)


def children(pid):
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(c) for c in path.read_text().split()] if path.exists() else []


def alive(pid):
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
