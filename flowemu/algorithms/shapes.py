"""How large an algorithm's schedule gets before it is built: the most flows a
step has and the distinct steps, for the memory estimate of a run
(:mod:`flowemu.core.budget`)."""

from __future__ import annotations

import math

import numpy as np

from .ps import schedule_shape as ps_shape

__all__ = ["schedule_shape"]


def _ports(topology) -> int:
    dims = getattr(topology, "grid", None) or getattr(topology, "dims", None)
    if dims is not None:
        return 2 * len(dims)
    # Without a grid the algorithms arrange ranks on a 1-D ring of rank ids
    # (two directions); only endpoints send, so switch degrees do not count.
    if not topology.num_links:
        return 2
    degree = np.bincount(topology.link_src, minlength=topology.num_nodes)
    return max(2, int(degree[:topology.num_endpoints].max()))


def schedule_shape(name: str, options: dict, p: int, topology,
                   collective: str = "allreduce") -> tuple[int, int]:
    """``(flows per step, distinct steps)`` an algorithm's schedule has at
    most, before it is built (measured on the builders: a rank sends one flow
    per port and step; ring and bucket repeat one traffic pattern (per
    dimension), the log-step algorithms have a new one every step; the other
    collectives' algorithms as :mod:`.classic` builds them)."""
    logp = max(1, math.ceil(math.log2(max(p, 2))))
    if collective in ("reduce_scatter", "allgather"):   # a half of the allreduce's
        return schedule_shape(name, options, p, topology)
    if collective != "allreduce":
        return {"binomial": (p, logp), "pairwise": (p, p - 1),
                "linear": (p * (p - 1), 1) if collective == "alltoall" else (p - 1, 1),
                }.get(name, (p * (p - 1), 2 * logp))
    ports = _ports(topology)
    opt = options.get("ports")
    if isinstance(opt, int) and not isinstance(opt, bool):
        ports = min(ports, opt)
    ndim = len(getattr(topology, "grid", None) or getattr(topology, "dims", None) or (1,))
    if name in ("cps", "hcps", "acps", "reduce-broadcast"):   # full meshes: p(p−1) flows a step
        return ps_shape(name, options, p, topology)
    if name in ("binomial", "dbtree"):   # a flow per child (two trees), K pipelined segments
        k = options.get("segments", 1)
        k = k if isinstance(k, int) and not isinstance(k, bool) else 1
        return (2 * p, 2 * (k + logp))
    if name == "gentree":   # a co-located PS over a switch's children at worst
        return (p * min(p - 1, 128), 4 * logp)
    shape = {"ring": (ports * p, 1), "swing": (ports * p, logp), "recdoub": (p, logp),
             "bucket": (ports * p, ndim),
             # one exchange per rank and step; fill and drain ≈ 8h steps, then 3
             "dualroot": (p, 8 * logp + 6)}
    return shape.get(name, (_ports(topology) * p, 2 * logp))
