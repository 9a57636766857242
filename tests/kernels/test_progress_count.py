"""The flows an event-driven solve has finished, counted as it runs, for
the command line's progress line (one step of random traffic can take a
minute with nothing else to show)."""

import numpy as np
import pytest

from flowemu.core import progress
from flowemu.engine import dataflow, steps
from flowemu.kernels.maxmin import solve_completion
from tests.kernels.test_incremental import _at_first_move, _problem


def _counted(monkeypatch, module):
    """The (counter, total) of every solve ``module`` runs, kept after it
    ends (``module``'s ``progress.counting`` is wrapped)."""
    seen = []
    real = progress.counting

    def counting(counter, total):
        cm = real(counter, total)

        class Keep:
            def __enter__(self):
                counter = cm.__enter__()
                seen.append((counter, total))
                return counter

            def __exit__(self, *exc):
                return cm.__exit__(*exc)

        return Keep()

    monkeypatch.setattr(module.progress, "counting", counting)
    return seen


@pytest.mark.parametrize("method, spec, ecmp, hand_on", [
    ("incremental", "fattree:k=8", "dmodk", None),
    ("screened", "torus:8x8", "split", None),
    ("auto", "fattree:k=8,taper=2", "split", None),
    ("auto", "fattree:k=8", "dmodk", "BULK"),      # incremental, then the bulk re-solves
])
def test_a_solve_counts_each_flow_it_finishes_once(monkeypatch, method, spec, ecmp, hand_on):
    if hand_on:
        _at_first_move(monkeypatch, hand_on)
    routes, cap, flow_bytes, kwargs = _problem(spec, ecmp, 600, 3, background=0.05)
    counter = np.zeros(1, np.int64)
    sol = solve_completion(routes, cap, flow_bytes, method=method, counter=counter, **kwargs)
    assert sol.status == 0
    # the flows the events finish: a path, not persistent (at distinct times
    # here: uniform random sizes; those of 0 bytes at the first event)
    keep = kwargs["persistent"]
    finishing = (np.diff(routes.flow_ptr) > 0) & ~keep
    assert finishing.sum() > 500
    assert counter[0] == finishing.sum() == steps.finishing(routes, keep)
    assert np.isfinite(sol.finish[finishing]).all()


def test_snapshot_shows_the_running_solves_only():
    assert progress.snapshot().flows_total == 0
    with progress.counting(np.zeros(1, np.int64), 300) as a, \
            progress.counting(np.zeros(1, np.int64), 100) as b:
        a[0], b[0] = 120, 100
        s = progress.snapshot()
        assert (s.flows_done, s.flows_total) == (220, 400)
    s = progress.snapshot()
    assert (s.flows_done, s.flows_total) == (0, 0)


def test_progress_line_names_the_flows_finished():
    import io

    from flowemu.cli.options import _ProgressLine

    out = io.StringIO()
    line = _ProgressLine(out)
    line.draw(12.0, progress.Snapshot("torus:128x128 traffic: distinct steps", 0, 1, 0.0,
                                      5120, 16384))
    assert out.getvalue().endswith("flowemu: 12s, torus:128x128 traffic: distinct steps 0/1, "
                                   "flows finished 5,120/16,384\x1b[K")
    line.draw(13.0, progress.Snapshot("x", 1, 2, 0.0))
    assert out.getvalue().endswith("flowemu: 13s, x 1/2\x1b[K")


def test_a_dataflow_solve_counts_each_flow_it_ends_once(monkeypatch):
    import flowemu

    seen = _counted(monkeypatch, dataflow)
    flowemu.simulate("torus:4x4", "ring", "1MiB", sync="dataflow", background="perm:0.3")
    assert seen
    for counter, total in seen:
        assert total > 0 and counter[0] == total


def test_the_engine_counts_the_flows_of_each_event_driven_step(monkeypatch):
    """The engine gives each step's solve a counter the progress line reads
    (a background makes every step event-driven)."""
    import flowemu

    seen = _counted(monkeypatch, steps)
    flowemu.simulate("torus:4x4", "ring", "1MiB", background="perm:0.3")
    assert any(total > 0 for _, total in seen)   # (the background alone: none finish)
    for counter, total in seen:
        assert counter[0] == total
