"""Reduce-scatter and allgather as the two halves of an allreduce.

The bandwidth-optimal allreduces of the Swing paper run a reduce-scatter and
then an allgather (§2.3: ring §2.3.1, recursive doubling's bandwidth-optimal
form §2.3.3, bucket §2.3.4, Swing §3) and so does Kolmakov's butterfly with
``r = 0`` (its eq. 25). The first half, the steps labelled ``rs…``, is a
reduce-scatter; the second, ``ag…``, an allgather of what the first left.
Each is registered under the allreduce's name for its collective, with the
allreduce's options (the variant fixed to the bandwidth-optimal one): on a
torus the ring keeps its Hamiltonian cycles and ports, Swing and bucket their
multiport collectives, recursive doubling its torus layout.

Sizes are the collectives' own (:mod:`.collectives`): a reduce-scatter's n
is each rank's input, the allreduce's vector; an allgather's n the gathered
vector, the allreduce's result. So the shares of the flows are those of the
allreduce's steps, unchanged.

Which rank a block belongs to (``Schedule.block_owner``) is the rank that
sends it first in the allgather half (nobody else holds it then); the
verifier then proves that rank ends the reduce-scatter with the block fully
reduced, and that the allgather from there gives every rank every block.
A schedule that is not ``rs…`` steps followed by ``ag…`` steps (recursive
doubling on a p that is not a power of two folds ranks in ``pre`` and
``post`` steps) has no halves and is refused.
"""

from __future__ import annotations

import numpy as np

from ..core.errors import ConfigError
from .base import AlgorithmSpec, Schedule, Steps
from .registry import get_algorithm, register

__all__ = ["HALVES", "half_schedule"]

#: the allreduces with halves, and the options that make them
#: reduce-scatter + allgather (left out of the halves' options)
HALVES = {"ring": {}, "swing": {"variant": "bandwidth"}, "bucket": {},
          "recdoub": {"variant": "bandwidth"}, "butterfly": {"r": 0}}
#: options of the allreduce that do not apply to a half
_DROPPED = {"butterfly": ("at",)}


def _split(name: str, collective: str, sched: Schedule) -> int:
    labels = list(sched.steps.labels)
    k = next((i for i, lab in enumerate(labels) if not lab.startswith("rs")), len(labels))
    odd = list(dict.fromkeys(lab for lab in labels if not lab.startswith(("rs", "ag"))))
    if odd or k == 0 or k == len(labels) or not all(lab.startswith("ag") for lab in labels[k:]):
        why = (f"it has steps {', '.join(odd)}" if odd else
               "its reduce-scatter and allgather steps interleave")
        raise ConfigError(f"algorithm {name} ({collective}): its schedule on {sched.p} ranks "
                          "is not a reduce-scatter (rs steps) followed by an allgather (ag "
                          f"steps): {why}"
                          + ("; recursive doubling folds ranks in when p is not a power of "
                             "two: use ring or swing" if name == "recdoub" else ""))
    return k


def _sliced(steps: Steps, lo: int, hi: int) -> Steps:
    """Steps ``lo .. hi − 1`` of ``steps``, with only the patterns they use."""
    order = steps.order[lo:hi]
    used = np.unique(order)
    labels = steps.labels[lo:hi]
    return Steps([steps.patterns[i] for i in used], np.searchsorted(used, order),
                 tuple(labels))


def _owners(half: Steps, num_blocks: int) -> np.ndarray:
    """The sender of each block's first flow in an allgather half."""
    owner = np.full(num_blocks, -1, np.int64)
    for step in half:
        tr = step.traffic
        flow = np.repeat(np.arange(tr.num_flows), np.diff(tr.block_ptr))
        fresh = owner[tr.block_idx] < 0
        owner[tr.block_idx[fresh]] = tr.src[flow[fresh]]
    return owner


def check_half(name: str, collective: str, p: int) -> None:
    """Recursive doubling has halves only on a power of two."""
    if name == "recdoub" and p & (p - 1):
        raise ConfigError(f"algorithm recdoub ({collective}): p={p} ranks must be a power of "
                          "two (recursive doubling folds the other ranks in with steps of "
                          "their own, which neither half has); use ring, swing or "
                          + ("pairwise" if collective == "reduce_scatter" else "bruck"))


def half_schedule(name: str, collective: str, p: int, topology=None, blocks: bool = False,
                  **options) -> Schedule:
    """The ``collective`` half (reduce_scatter or allgather) of allreduce
    ``name`` on ``p`` ranks (module notes)."""
    check_half(name, collective, p)
    full = get_algorithm(name).build(p, topology, blocks, **HALVES[name], **options)
    k = _split(name, collective, full)
    n = full.num_steps
    first = collective == "reduce_scatter"
    steps = _sliced(full.steps, 0, k) if first else _sliced(full.steps, k, n)
    owner = None
    if blocks:
        owner = _owners(_sliced(full.steps, k, n), int(full.num_blocks))
        if (owner < 0).any():
            raise ConfigError(f"algorithm {name} ({collective}): block "
                              f"{int(np.flatnonzero(owner < 0)[0])} is never sent in the "
                              "allgather half; it has no owner")
    return Schedule(name, full.variant, full.p, steps, full.num_blocks, full.block_share,
                    dict(full.info), full.note, full.num_buffers, collective=collective,
                    block_owner=owner)


def _spec(name: str, collective: str) -> AlgorithmSpec:
    allreduce = get_algorithm(name)
    fixed = set(HALVES[name]) | set(_DROPPED.get(name, ()))
    params = tuple(prm for prm in allreduce.params if prm.name not in fixed)
    what = "reduce-scatter" if collective == "reduce_scatter" else "allgather"
    steps = "rs" if collective == "reduce_scatter" else "ag"
    fixed_text = ", ".join(f"{k}={v}" for k, v in HALVES[name].items())
    doc = (f"The {what} half of the {name} allreduce"
           + (f" ({fixed_text})" if fixed_text else "") + f": its {steps} steps"
           + ("; p a power of two" if name == "recdoub" else ""))

    def build(p, topology=None, blocks=False, **opts):
        return half_schedule(name, collective, p, topology, blocks, **opts)

    def check(p, _options):
        check_half(name, collective, p)

    return AlgorithmSpec(name=name, build=build, params=params, doc=doc,
                         families=allreduce.families, topology_bound=allreduce.topology_bound,
                         collective=collective, check=check)


for _name in HALVES:
    for _collective in ("reduce_scatter", "allgather"):
        register(_spec(_name, _collective))
