"""Routes written by hand, for solver tests."""

from __future__ import annotations

import numpy as np

from flowemu.topology.base import Routes


def make_routes(paths) -> Routes:
    """Routes from a list of ``[(link, frac), ...]`` per flow (the inverse
    of :func:`tests.helpers.maxmin_oracle.csr_to_lists`)."""
    ptr = np.cumsum([0] + [len(p) for p in paths]).astype(np.int64)
    link = np.array([r for p in paths for r, _ in p], dtype=np.int32)
    frac = np.array([a for p in paths for _, a in p], dtype=np.float64)
    return Routes(ptr, link, frac, np.array([len(p) for p in paths], dtype=np.int32))
