"""flowemu's finish times against SimGrid's LMM solver (an independent
implementation of the same max-min fair sharing, run event by event as
SimGrid's network model runs it: ``simgrid/lmmrun.cpp``).

Needs a built SimGrid 4.1 source tree: ``FLOWEMU_SIMGRID=DIR pytest
tests/benchmarks/test_simgrid.py`` (docs/model.md, "Against SimGrid");
skipped without it."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

SIMGRID = os.environ.get("FLOWEMU_SIMGRID")
pytestmark = pytest.mark.skipif(not SIMGRID, reason="FLOWEMU_SIMGRID (a built SimGrid tree) "
                                "is not set")


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    from tests.benchmarks.simgrid.__main__ import build_driver
    return build_driver(Path(SIMGRID).resolve(), tmp_path_factory.mktemp("lmmrun"))


def _random_problem(rng, n_flows, n_links, split, persistent_share):
    from tests.benchmarks.simgrid.problems import Problem
    counts = rng.integers(1, 7, n_flows)
    flow_ptr = np.zeros(n_flows + 1, np.int64)
    np.cumsum(counts, out=flow_ptr[1:])
    link = np.concatenate([rng.choice(n_links, c, replace=False) for c in counts]).astype(np.int32)
    frac = rng.uniform(0.05, 1.0, len(link)) if split else np.ones(len(link))
    keep = rng.random(n_flows) < persistent_share
    return Problem("random", flow_ptr, link, frac, rng.uniform(1.0, 10.0, n_links),
                   rng.uniform(0.1, 1.0, n_flows), keep)


@pytest.mark.parametrize("split", [False, True])
@pytest.mark.parametrize("persistent_share", [0.0, 0.2])
def test_finish_times_agree_with_simgrids_lmm(driver, tmp_path, split, persistent_share):
    from tests.benchmarks.simgrid.__main__ import END_S, run_simgrid
    rng = np.random.default_rng(25 + 2 * split + (persistent_share > 0))
    for _ in range(20):
        problem = _random_problem(rng, 80, 30, split, persistent_share)
        ours = problem.solve().finish
        finite = problem.finishing
        scale = END_S / ours[finite].max()
        figures, theirs = run_simgrid(driver, problem, scale, 60.0, tmp_path)
        assert figures["done"] == finite.sum() and not figures["stopped"]
        assert np.all(theirs[problem.persistent] == -1.0)
        np.testing.assert_allclose(theirs[finite], ours[finite] * scale, rtol=1e-12)


@pytest.mark.parametrize("kind, spec, ecmp", [("permutation", "fattree:k=8,taper=2", "split"),
                                             ("permutation", "torus:16x16", "split"),
                                             ("permutation", "torus:8x8x4", "hash"),
                                             ("swing-background", "torus:16x16", "split")])
def test_engine_steps_agree_with_simgrids_lmm(driver, tmp_path, kind, spec, ecmp):
    """Steps as the engine builds them (a tapered fat tree, split torus
    routes, hashed paths, Swing's steps under a background) finish as
    SimGrid's LMM finishes them."""
    from tests.benchmarks.simgrid import problems
    from tests.benchmarks.simgrid.__main__ import END_S, run_simgrid
    run = problems.permutation_run(spec, ecmp) if kind == "permutation" else \
        problems.swing_background_run(spec)
    steps = [p for p in problems.recorded(run, kind) if p.finishing.any()]
    assert steps
    for problem in steps:
        ours = problem.solve().finish
        finite = problem.finishing
        scale = END_S / ours[finite].max()
        figures, theirs = run_simgrid(driver, problem, scale, 120.0, tmp_path)
        assert figures["done"] == finite.sum() and not figures["stopped"]
        np.testing.assert_allclose(theirs[finite], ours[finite] * scale, rtol=1e-12)
