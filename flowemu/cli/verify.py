"""``flowemu verify``: prove an algorithm's schedule computes its collective
(an allreduce unless ``--collective`` names another), block by block; each schedule's proof is printed as it is done, and the first step that
breaks one is named on stderr (exit 1)."""

from __future__ import annotations

import sys

from ..algorithms.collectives import COLLECTIVES
from ..api.verification import Verification, verify_each
from ..core.errors import ScheduleError
from .options import max_memory, naming_options, whole_number


def add_arguments(vf) -> None:
    vf.add_argument("--algorithm", "-a", required=True,
                    help="NAME[:key=val,...] (plug-ins too); an auto variant "
                         "(recdoub:variant=auto) verifies every choice; an algorithm that "
                         "plans per size (gentree, butterfly's r=auto, dualroot's "
                         "blocks=auto) is verified for --size's plan")
    vf.add_argument("--collective", "-c", default="allreduce",
                    help="what the schedule must compute: " + ", ".join(COLLECTIVES)
                         + " (default allreduce; flowemu list shows each one's algorithms)")
    vf.add_argument("--ranks", type=whole_number, help="number of ranks (default: every endpoint of "
                                              "--topology; required without it)")
    vf.add_argument("--topology", "-t", help="arrange ranks on it (grid algorithms, gentree); "
                                             "default: rank ids")
    vf.add_argument("--size", "-s", help="vector size: the plan verified for a size-dependent "
                                         "algorithm (gentree; default 256MiB); also reports "
                                         "bytes")
    vf.add_argument("--network", help="network preset a size-dependent algorithm plans for "
                                      "(a built-in name or a .toml file; default: the "
                                      "default network)")
    vf.add_argument("--all-steps", action="store_true", help="list every step (default: the "
                                                             "first and last 20 of a long one)")
    vf.add_argument("--max-memory", help="refuse a verifier state estimated above this, e.g. "
                                         "8GiB (default: FLOWEMU_MAX_MEMORY or 80%% of "
                                         "available memory)")


def cmd_verify(args) -> int:
    """Each schedule's proof printed as it is done; the first failure on
    stderr (its step named), exit 1."""
    with naming_options(args):   # algorithm: ... from the API reads --algorithm: ...
        head, proofs = verify_each(args.algorithm, args.ranks, args.topology, size=args.size,
                                   network=args.network, max_memory=max_memory(args),
                                   collective=args.collective)
    try:
        for i, proof in enumerate(proofs):
            text = Verification(**head, variants=(proof,)).text(all_steps=args.all_steps)
            print(("\n" if i else "") + text, flush=True)
    except ScheduleError as exc:
        print(f"flowemu: verify: FAILED: {exc}", file=sys.stderr)
        return 1
    return 0
