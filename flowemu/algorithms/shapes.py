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


#: what a selector may pick, per collective (:mod:`.selectors`)
SELECTOR_CHOICES = {
    "mpich": {"broadcast": ("binomial", "vandegeijn"), "reduce": ("binomial", "rabenseifner"),
              "gather": ("binomial",), "scatter": ("binomial",),
              "alltoall": ("bruck", "linear", "pairwise"),
              "reduce_scatter": ("pairwise", "recdoub", "ring"),
              "allgather": ("recdoub", "bruck", "ring")},
    "nccl": {"broadcast": ("chain",), "reduce": ("chain",), "gather": ("linear",),
             "scatter": ("linear",), "alltoall": ("linear",),
             "reduce_scatter": ("ring",), "allgather": ("sparbit", "ring")},
}
#: segments ``nccl``'s chain is taken to have at most (NCCL's chunks of the
#: largest channel part: 256 for 512 MiB on Simple)
NCCL_CHAIN_SEGMENTS = 512


def _segments(options) -> int:
    k = options.get("segments", 1)
    return k if isinstance(k, int) and not isinstance(k, bool) and k >= 1 else 1


def _collective_shape(name: str, options: dict, p: int, collective: str,
                      logp: int) -> tuple[int, int]:
    """The shapes of :mod:`.classic`'s, :mod:`.trees`' and :mod:`.bine`'s
    builders (the pipelined ones: a flow per tree edge at most, segments +
    depth steps); a selector takes its largest choice's."""
    k = NCCL_CHAIN_SEGMENTS if name == "nccl" else _segments(options)
    shapes = {
        "binomial": (p, logp), "bine": (p, logp), "bruck": (p, logp), "sparbit": (p, logp),
        "pairwise": (p, p - 1), "rabenseifner": (p, 2 * logp),
        "linear": (p * (p - 1), 1) if collective == "alltoall" else (p - 1, 1),
        "vandegeijn": (p, logp + p - 1),
        "chain": (min(k, p - 1), k + p - 2),
        "bintree": (p - 1, k + logp),
        "dbtree": (2 * (p - 1), k + 4 * logp),     # two trees, one hung from the root
        "ring": (2 * p, 1), "recdoub": (p, logp),  # (the halves: one pattern; log₂p)
    }
    if name in shapes:
        return shapes[name]
    if name in SELECTOR_CHOICES:      # the most of any of its choices
        picks = [shapes[c] for c in SELECTOR_CHOICES[name].get(collective, ()) if c in shapes]
        if picks:
            return max(f for f, _ in picks), max(d for _, d in picks)
    return (p * (p - 1), 2 * logp)


def schedule_shape(name: str, options: dict, p: int, topology,
                   collective: str = "allreduce") -> tuple[int, int]:
    """``(flows per step, distinct steps)`` an algorithm's schedule has at
    most, before it is built (measured on the builders: a rank sends one flow
    per port and step; ring and bucket repeat one traffic pattern (per
    dimension), the log-step algorithms have a new one every step; the other
    collectives' algorithms as :mod:`.classic` builds them)."""
    logp = max(1, math.ceil(math.log2(max(p, 2))))
    if collective in ("reduce_scatter", "allgather"):
        if name in ("pairwise", "bruck", "sparbit", "mpich", "nccl"):
            return _collective_shape(name, options, p, collective, logp)
        # a half of the allreduce's (Bine's are Swing's)
        return schedule_shape("swing" if name == "bine" else name, options, p, topology)
    if collective != "allreduce":
        return _collective_shape(name, options, p, collective, logp)
    ports = _ports(topology)
    opt = options.get("ports")
    if isinstance(opt, int) and not isinstance(opt, bool):
        ports = min(ports, opt)
    ndim = len(getattr(topology, "grid", None) or getattr(topology, "dims", None) or (1,))
    if name in ("cps", "hcps", "acps", "reduce-broadcast"):   # full meshes: p(p−1) flows a step
        return ps_shape(name, options, p, topology)
    if name in ("binomial", "dbtree"):   # a flow per child (two trees), K pipelined segments
        return (2 * p, 2 * (_segments(options) + logp))
    if name == "gentree":   # a co-located PS over a switch's children at worst
        return (p * min(p - 1, 128), 4 * logp)
    # (swing on odd p: a rank of the odd one out sends twice a step)
    shape = {"ring": (ports * p, 1), "swing": (ports * p * (1 + p % 2), logp),
             "recdoub": (p, logp),
             "bucket": (ports * p, ndim),
             # one exchange per rank and step; fill and drain ≈ 8h steps, then 3
             "dualroot": (p, 8 * logp + 6)}
    return shape.get(name, (_ports(topology) * p, 2 * logp))
