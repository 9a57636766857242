"""The public :func:`schedule`: the Schedule a named algorithm runs, the one
:func:`flowemu.simulate` profiles, for :func:`flowemu.profile` and friends."""

from __future__ import annotations

from ..algorithms import parse_algorithm_spec
from ..algorithms.base import Schedule
from ..core import checks
from ..core.errors import ConfigError
from ..core.network import Network
from .run import prepare_run, run_schedules

__all__ = ["schedule"]


def schedule(algorithm: str, topology, ranks: int | None = None, *, size=None,
             network: Network | None = None, collective: str = "allreduce",
             **options) -> Schedule:
    """The Schedule of a named algorithm on a topology: the steps
    :func:`flowemu.simulate` times, to profile (:func:`flowemu.profile`),
    verify or inspect yourself.

    Parameters
    ----------
    algorithm : str
        ``"NAME[:key=val,...]"`` as for :func:`flowemu.simulate`
        (``"swing"``, ``"ring:ports=2"``); see ``flowemu list``.
    topology : str or Topology
        The topology the algorithm runs on (the grid a torus algorithm uses,
        the tree a planner plans on).
    ranks : int, optional
        Number of ranks (default: every endpoint).
    size : int or str, optional
        The vector size, for the algorithms whose steps depend on it
        (GenTree's plan, butterfly's ``r``, what ``mpich`` and ``nccl``
        pick); refused for the others (their steps are the same at every
        size). Without it they plan for 256 MiB, and the schedule's profile
        gives :func:`flowemu.simulate`'s times only where simulate makes the
        same plan.
    network : Network, optional
        The network a size-dependent plan is made for (default ``Network()``);
        refused for the others, as ``size`` is.
    collective : str
        The collective the algorithm computes (default ``"allreduce"``;
        ``"allgather"``, ``"broadcast"``, ... as :func:`flowemu.simulate`
        takes it; ``flowemu list`` names each one's algorithms). Its flow
        bytes are fractions of n as that collective's sizes mean it.
    **options
        Algorithm options as keywords (``ports=2``), beside or instead of
        those in the spec; an option given both ways is refused.

    Returns
    -------
    Schedule
        Steps on ranks ``0..p-1`` whose flow bytes are fractions of the
        vector size n (:class:`~flowemu.algorithms.base.Traffic`).
        ``info["built_for"]`` is the topology's spec: :func:`flowemu.profile`
        refuses it on another topology unless a ``mapping`` places its ranks.

    Raises
    ------
    ConfigError
        An unknown algorithm or option, an ``auto`` option (it picks a
        variant per size, so it is not one schedule: name the variant), an
        algorithm that does not run on the topology.

    Examples
    --------
    >>> sched = flowemu.schedule("ring", "torus:4x4")
    >>> flowemu.profile(sched, "torus:4x4").times([2**20])   # = simulate's time
    """
    name, given = parse_algorithm_spec(checks.text("algorithm", algorithm, "ring:ports=2"))
    both = sorted(set(given) & set(options))
    if both:
        raise ConfigError(f"schedule: option(s) {', '.join(both)} given in {algorithm!r} and "
                          "as keywords; give each once")
    merged = {**given, **{k: str(v) for k, v in options.items()}}
    spec_text = name + (":" + ",".join(f"{k}={v}" for k, v in merged.items()) if merged else "")
    run = prepare_run("congestion", topology, spec_text, ecmp="split", seed=0, ranks=ranks,
                      network=network, network_params={}, collective=collective)
    if len(run.candidates) > 1:
        auto = run.spec.auto_param
        raise ConfigError(f"schedule: {auto}=auto picks a variant per size, not one schedule; "
                          f"name one: {', '.join(str(c[auto]) for c in run.candidates)}")
    if run.spec.sized is None:
        for arg, value in (("size", size), ("network", network)):
            if value is not None:
                raise ConfigError(f"{arg}: {run.spec.name}'s steps are the same at every size "
                                  "and network (given to the algorithms that plan for them: "
                                  "gentree, butterfly, dualroot, ...); drop it")
    sizes = None if size is None else checks.sizes(size, "size")[:1]
    sched = run_schedules(run, run.candidates[0], sizes)[0][0]
    # profile() checks it is given the topology the steps were made for
    sched.info["built_for"] = run.topology.spec
    return sched
