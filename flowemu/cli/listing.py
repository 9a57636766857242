"""``flowemu list``: the algorithms and topologies with their parameters, a
user's own traffic, the ECMP modes, the what-if options and the network presets.

(The module is not named ``list``, which would read as the builtin.)
"""

from __future__ import annotations

from ..algorithms import algorithm_names, get_algorithm
from ..algorithms.collectives import COLLECTIVES, get_collective
from ..algorithms.registry import plugin_errors, plugin_names
from ..api.jobs import JOB_DOC
from ..core.presets import builtin_presets
from ..engine.dataflow import SYNC_DOCS
from ..topology import MODE_DOCS, topology_families, topology_modes
from .options import note

#: ``flowemu list``: the what-if options, one line each
WHATIF_DOCS = {
    "fail": "failed links, selectors joined by ';': link:ID[-ID], node:V, grid coordinates "
            "X,Y ('*' any; torus, mesh, hyperx, hammingmesh), LEVEL:I or LEVEL:* (fattree "
            "host/edge/agg/core or leaf/spine, leafspine host/leaf/spine, tree "
            "host/root/depthD, dragonfly host/router/group, hammingmesh colswitch/rowswitch), "
            "id:NAME (graph), A-B (the cables between two), random:K:SEED",
    "degrade": "SELECTOR=F[:lat=M]: bandwidth x F (0 < F <= 1), latency x M (M >= 1)",
    "fail_policy": "strict (default: ring and bucket refuse a failure that takes their "
                   "neighbour links) | reroute (route them around it)",
    "slow": "RANKS=F[:compute|:network] joined by ';', RANKS 3 | 3,5 | 7-9 | random:K:SEED, "
            "F from 1e-6 to 1 (speed fraction)",
    "background": "perm:LOAD[:SEED] | alltoall:LOAD | hotspot:LOAD[:TARGET] | a traffic file "
                  "(step,src,dst,bytes: endpoints, bytes/s of demand); LOAD in (0, 1] is the "
                  "fraction of each sender's injection bandwidth (all its outgoing links); "
                  "the average link is offered LOAD x average hops of its capacity",
}

#: ``flowemu list``: what a traffic file holds
TRAFFIC_DOC = ("a CSV/parquet file with columns step,src,dst,bytes (rank ids, the bytes of "
               "each flow); its steps run one after another; in a sweep, a path relative to "
               "the sweep file, rows labelled traffic:FILE")


def add_arguments(parser) -> None:
    """``flowemu list [--collective C]``: everything, or one collective's
    algorithms."""
    parser.add_argument("--collective", "-c", default=None,
                        help="list only this collective's algorithms (allreduce, "
                             "reduce_scatter, allgather, broadcast, reduce, gather, scatter, "
                             "alltoall)")


def _allreduce_algorithms() -> None:
    print("algorithms:")
    names = algorithm_names()   # (every plug-in loaded: plugin_names knows them all)
    plugins = plugin_names()
    for name in names:
        spec = get_algorithm(name)
        first = (spec.doc.strip().splitlines() or [""])[0]
        print(f"  {name:10s} {'(plug-in) ' if name in plugins else ''}{first}")
        if spec.families is not None:
            print(f"      runs on: {', '.join(spec.families)}")
        for prm in spec.params:
            choices = f" one of {', '.join(map(str, prm.choices))}" if prm.choices else ""
            print(f"      {prm.name}={prm.default}{choices}  {prm.doc}")
    for msg in plugin_errors().values():   # a broken plug-in: said, the rest listed
        note(msg)


def _collective_algorithms(coll) -> None:
    print(f"  {coll.name:14s} {coll.computes}; n: {coll.size}")
    for name in algorithm_names(coll.name):
        spec = get_algorithm(name, coll.name)
        params = "".join(f" [{prm.name}={prm.default}]" for prm in spec.params)
        print(f"      {name}{params}  {spec.doc}")


def cmd_list(args) -> int:
    only = getattr(args, "collective", None)
    if only is not None:
        coll = get_collective(only)
        if coll.name == "allreduce":
            _allreduce_algorithms()
        else:
            _collective_algorithms(coll)
        return 0
    _allreduce_algorithms()
    print("collectives (run and verify --collective C; simulate(collective=...); sweep field "
          "collective; the algorithms above are allreduce's; n is the size a run names, as "
          "nccl-tests reads it; list -c C lists one):")
    for coll in COLLECTIVES.values():
        if coll.name != "allreduce":
            _collective_algorithms(coll)
    print("your own traffic (run --traffic FILE; sweep field traffic = \"FILE\" or an array, "
          "in place of algorithm):")
    print(f"  {'traffic':10s} {TRAFFIC_DOC}")
    print("topologies:")
    modes = topology_modes()
    for fam, doc in sorted(topology_families().items()):
        print(f"  {fam:10s} {doc}")
        engine = (*modes[fam], "adaptive") if "split" in modes[fam] else modes[fam]
        print(f"      ecmp: {', '.join(engine)} (default split)")
    print("ecmp modes:")
    for mode, doc in MODE_DOCS.items():
        print(f"  {mode:10s} {doc}")
    print("synchronisation (run --sync; simulate and sweep field sync):")
    for name, doc in SYNC_DOCS.items():
        print(f"  {name:10s} {doc}")
    print("several jobs at once (flowemu jobs --job '...' --job '...'; flowemu.simulate_jobs; "
          "sweep field jobs):")
    print(f"  {'job':10s} {JOB_DOC}")
    print("what-ifs (run --fail/--degrade/--fail-policy/--slow/--background; simulate and "
          "sweep fields fail, degrade, fail_policy, slow, background, failures, failure_seed):")
    for name, doc in WHATIF_DOCS.items():
        print(f"  {name:11s} {doc}")
    print("network presets (--network NAME, or a .toml file):")
    for name, doc in builtin_presets().items():
        print(f"  {name:10s} {doc}")
    return 0
