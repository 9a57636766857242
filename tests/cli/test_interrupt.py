"""Ctrl-C on ``flowemu run`` acts at once (issue 26, item 8), and a long
command says what it does on a terminal (item 2): the command's
work runs in a worker thread while the main thread, where Python runs its
signal handlers, waits for it (``flowemu.cli.options.run_interruptible``).

The run below times a random permutation on ``torus:128x128`` with split
routes: after a few seconds of set-up it spends a minute inside one numba
kernel. Run in the main thread, the interrupt waited for the kernel to
return (and the process then died of a segmentation fault). The test sends
Ctrl-C once the run has used 8 s of CPU, inside the kernel, and allows 30 s,
far less than the kernel has left, far more than the fraction of a second it
takes.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

from flowemu.cli.options import run_interruptible
from flowemu.core import progress


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="needs /proc")
def test_ctrl_c_stops_a_run_inside_a_long_kernel(tmp_path):
    rng = np.random.default_rng(5)
    dst = rng.permutation(16384)
    keep = dst != np.arange(16384)
    traffic = tmp_path / "perm.csv"
    pd.DataFrame({"step": 0, "src": np.arange(16384)[keep], "dst": dst[keep],
                  "bytes": rng.integers(1000, 2_000_000, keep.sum())}).to_csv(traffic,
                                                                              index=False)
    # (a child inherits an ignored SIGINT and keeps ignoring it, as Unix has it:
    # the run starts with Python's own handler whatever this process has)
    start = ("import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
             "sys.argv = ['flowemu'] + sys.argv[1:]; runpy.run_module('flowemu', "
             "run_name='__main__', alter_sys=True)")
    proc = subprocess.Popen(
        [sys.executable, "-c", start, "run", "-t", "torus:128x128", "--traffic", str(traffic)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        while proc.poll() is None and _cpu_seconds(proc.pid) < 8.0:
            time.sleep(0.2)
    except FileNotFoundError:   # it ended
        pass
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail("flowemu run did not stop within 30 s of Ctrl-C")
    assert proc.returncode == 130
    assert out == b"" and b"Traceback" not in err


def test_interruptible_work_returns_and_raises_as_if_run_here():
    assert run_interruptible(lambda: 7) == 7
    with pytest.raises(ValueError, match="boom"):
        run_interruptible(lambda: (_ for _ in ()).throw(ValueError("boom")))


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def _phases():
    progress.begin("torus:4x4 ring: distinct steps", 2)
    time.sleep(0.6)
    progress.advance()
    time.sleep(0.6)
    return 0


def test_a_long_command_shows_what_it_does_on_a_terminal_only():
    shown = _Terminal()
    assert run_interruptible(_phases, stream=shown, progress_after=0.0) == 0
    text = shown.getvalue()
    assert "torus:4x4 ring: distinct steps 0/2" in text
    assert "torus:4x4 ring: distinct steps 1/2" in text
    assert text.endswith("\r\x1b[K")          # erased when done
    quiet = io.StringIO()                     # a file or pipe: nothing
    assert run_interruptible(_phases, stream=quiet, progress_after=0.0) == 0
    assert quiet.getvalue() == ""


def test_the_commands_output_starts_on_a_clean_line(monkeypatch):
    """The table a command prints erases the progress line first, and the
    line is not drawn again after it (both on one terminal)."""
    term = _Terminal()
    monkeypatch.setattr(sys, "stdout", term)

    def work():
        _phases()
        print("the table")
        time.sleep(0.6)               # the main thread would redraw here
        return 0

    assert run_interruptible(work, stream=term, progress_after=0.0) == 0
    text = term.getvalue()
    before, after = text.split("the table\n")
    assert "distinct steps 1/2" in before and before.endswith("\r\x1b[K")
    assert "distinct steps" not in after


def test_a_sweep_in_process_leaves_the_signal_handlers_as_it_found_them(tmp_path, capsys):
    """``flowemu sweep`` catches SIGTERM while it runs (to keep what is
    saved); called in a process that goes on (``flowemu.cli.main``), it puts
    the handler back, so the process and its children see what they had."""
    from tests.helpers.cli import run
    cfg = tmp_path / "s.toml"
    cfg.write_text('sizes = "1KiB"\ntopology = "torus:4x4"\nalgorithm = "ring"\n')
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    code, _, _ = run(capsys, ["sweep", str(cfg), "--out", str(tmp_path / "out"), "--jobs", "1"])
    assert code == 0
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before


def test_a_note_on_stderr_leaves_the_progress_line_drawn_again_below(monkeypatch):
    """A note (the first run's 'compiling numba kernels') ended the progress
    line for good: a minute-long run then showed nothing. It erases the
    line, and the line is drawn again below it once the note's line ends."""
    term = _Terminal()
    monkeypatch.setattr(sys, "stderr", term)

    def work():
        progress.begin("torus:4x4 ring: distinct steps", 2)
        time.sleep(0.6)
        sys.stderr.write("flowemu: note: compiling")   # a line written in two parts:
        time.sleep(0.6)                                # nothing is drawn over it
        sys.stderr.write(" numba kernels\n")
        time.sleep(0.6)
        progress.advance()
        time.sleep(0.6)
        return 0

    assert run_interruptible(work, stream=term, progress_after=0.0) == 0
    text = term.getvalue()
    before, after = text.split("flowemu: note: compiling numba kernels\n")
    assert "distinct steps 0/2" in before and before.endswith("\r\x1b[K")
    assert "distinct steps 1/2" in after and after.endswith("\r\x1b[K")
