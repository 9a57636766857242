"""Shared check of the selectors (``mpich``, ``nccl``): a run with the
selector is, size by size, the run of the algorithm it chose, named in
``variant``."""

from __future__ import annotations

import flowemu
from flowemu.algorithms.collectives import COLLECTIVES


def assert_runs_are_the_choices(selector: str, choose, collective: str, p: int = 16,
                                sizes=(1024, 40_000, 2**20, 2**26)) -> None:
    """``choose(n)`` gives the selector's ``(algorithm spec, note)`` for ``n``
    bytes on ``tree:p``."""
    opts = ":root=3" if COLLECTIVES[collective].rooted else ""
    df = flowemu.simulate(f"tree:{p}", f"{selector}{opts}", list(sizes), collective=collective)
    for size, row in zip(sizes, df.itertuples()):
        want, _ = choose(size)
        assert row.variant == want and row.algorithm == selector
        name, _, raw = want.partition(":")
        spec = ",".join(filter(None, (raw, opts.lstrip(":"))))
        alone = flowemu.simulate(f"tree:{p}", name + (":" + spec if spec else ""), [size],
                                 collective=collective)
        assert row.time_s == alone["time_s"].iloc[0]
