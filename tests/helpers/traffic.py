"""Traffic the benchmarks and tests share."""

from __future__ import annotations

import numpy as np

from flowemu.algorithms.base import Traffic


def random_permutation(topo, seed=2026) -> Traffic:
    """Every endpoint of ``topo`` to the next in a seeded random permutation
    (those mapped to themselves left out), with sizes uniform in [0.1, 1):
    each flow finishes at its own time."""
    rng = np.random.default_rng(seed)
    p = topo.num_endpoints
    dst = rng.permutation(p)
    src = np.arange(p)
    keep = src != dst
    return Traffic(src[keep], dst[keep], rng.uniform(0.1, 1.0, keep.sum()))
