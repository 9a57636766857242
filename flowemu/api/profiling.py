"""The public :func:`profile`: every step of a schedule profiled on a topology,
with what-if specs (background traffic, slow ranks) parsed here, above the
engine (:func:`flowemu.engine.profiles.profile` takes them as objects)."""

from __future__ import annotations

from ..algorithms.base import Schedule
from ..core import checks
from ..core.errors import ConfigError
from ..core.network import Network
from ..engine.profiles import check_profile_args
from ..engine.profiles import profile as engine_profile
from ..engine.steptimes import Profile
from ..topology import Topology
from ..topology import checks as topology_checks
from ..whatif.background import parse_background
from ..whatif.stragglers import parse_slow

__all__ = ["profile"]

#: profile's own keywords (named beside the network fields when one is unknown)
_KEYWORDS = ("schedule", "topology", "network", "ecmp", "seed", "mapping", "congestion",
             "threads", "max_memory", "background", "slow")


def profile(schedule: Schedule, topology: Topology | str, network: Network | None = None, *,
            ecmp: str = "split", seed: int = 0, mapping=None,
            congestion: bool = False, threads: int | None = None,
            max_memory=None, background=None, slow=None, **network_params) -> Profile:
    """Profile every step of ``schedule`` on ``topology``.

    Parameters
    ----------
    schedule : Schedule
        Steps on ranks ``0..p-1``.
    topology : Topology or str
        A Topology or a spec such as ``"torus:8x8"``.
    network : Network or str, optional
        A Network, a preset name or file, or None: ``Network()`` (400 Gb/s,
        100 ns links, 300 ns per hop), or one of the network fields given as
        keywords (``bandwidth="200Gb/s"``, ``link_latency="1us"``, ..., each
        with its unit, as :func:`flowemu.simulate` takes them). An unknown
        keyword is a ConfigError naming what is allowed.
    ecmp : {"split", "dor", "hash", "valiant", "dmodk", "adaptive"}
        The routing mode, as :func:`flowemu.simulate` takes it (which
        families each applies to is said there).
    seed : int
        Seed of ``ecmp="hash"``.
    mapping : int[p], optional
        Endpoint of each rank (default: rank r on endpoint r).
    congestion : bool
        Also record per-step link usage (see :meth:`Profile.congestion_report`).
    threads : int, optional
        Distinct steps routed and solved at once (default:
        :func:`default_threads`). Results do not depend on it.
    max_memory : str or int, optional
        Refuse (ConfigError) a run whose estimated memory exceeds this
        (default: :func:`flowemu.core.budget.limit`); the route entries of every
        distinct step are counted before any is routed.
    background : str or Background, optional
        Steady flows of another job sharing the links for the whole run
        (a spec of :func:`flowemu.whatif.background.parse_background`, or a
        Background made by it); the profile's step
        times are the collective's, :meth:`Profile.background_throughput`
        and ``info["background_rate"]`` report the background.
    slow : str or Slow, optional
        Slow ranks (a spec of :func:`flowemu.whatif.stragglers.parse_slow`, or a
        Slow made by it).
    """
    if network_params or isinstance(network, str):
        network = checks.network(network, network_params, "profile", _KEYWORDS)
    schedule, topology, network = check_profile_args(schedule, topology, network)
    ecmp, seed = topology_checks.routing(ecmp, seed)   # (a seed with split picks nothing)
    built = schedule.info.get("built_for")
    if built is not None and built != topology.spec and mapping is None:
        raise ConfigError(f"schedule: built for {built}, profiled on {topology.spec}; build it "
                          f"on the topology it runs on (flowemu.schedule(..., "
                          f"{topology.spec!r})), or place its ranks there with mapping=")
    if background is not None or slow is not None:
        if background is not None:
            background = parse_background(background, topology, network)
        if slow is not None:
            slow = parse_slow(slow, schedule.p)
    return engine_profile(schedule, topology, network, ecmp=ecmp, seed=seed, mapping=mapping,
                          congestion=congestion, threads=threads, max_memory=max_memory,
                          background=background, slow=slow)
