"""A run's engine context: the topology, network and what-ifs a profile
solves with (:class:`Context`, made by :func:`make_context` with the
network's ranges checked), each step's ranks and endpoints, its pattern key
(steps with the same flows share one solve) and its symmetry
(:func:`step_orbits`)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from ..algorithms.base import Traffic
from ..core.errors import ConfigError, show
from ..core.network import Network
from ..kernels import memory as malloc
from ..kernels.hashing import id_bounds, multiset_fingerprint
from ..topology.base import Topology
from .load import Background, RunLoad, Slow, check_background, prepare_load


@dataclass
class Context:
    """What every step of one run is solved with (made by
    :func:`make_context`); ``cache`` holds the solved patterns, ``key_of``
    what is worked out once a run (pattern keys, reductions, checked ranks,
    symmetries)."""

    topology: Topology
    network: Network
    ecmp: str
    seed: int
    mapping: np.ndarray
    link_capacity: np.ndarray
    ingress_capacity: np.ndarray | None   # None: incast off in every class
    incast_threshold: np.ndarray           # w_t of each incast class, float64[K]
    incast_slope: np.ndarray               # ε of each incast class, float64[K]
    link_latency: np.ndarray
    uniform_latency: float | None   # every link's latency when they are all equal
    cache: dict
    key_of: dict = field(default_factory=dict)
    load: RunLoad | None = None   # background flows, slow ranks' ports
    speed: np.ndarray | None = None          # slow ranks' compute speed, float64[p]
    adaptive: bool = False   # ecmp="adaptive": routes are "split", rebalanced per step
    #: the capacity adaptive routing balances over: the links' less the
    #: background's demand on them (None: the link capacity)
    adaptive_capacity: np.ndarray | None = None
    #: rank r runs on endpoint r (a flow's ranks are its endpoints)
    identity: bool = False
    #: (w_t, eps) float64[L] of links that charge incast themselves, or None
    #: (:meth:`~flowemu.topology.Topology.link_incast`)
    link_incast: tuple | None = None


def check_malloc_setting() -> None:
    """Refuse a ``FLOWEMU_MALLOC_TUNING`` that is neither on nor off (the
    kernels left malloc alone for it: :mod:`flowemu.kernels.memory`); every
    run's context checks it."""
    if malloc.tuning_setting() is None:
        raise ConfigError(f"{malloc.ENV_VAR}: {os.environ[malloc.ENV_VAR]!r} is not allowed; "
                          f"expected {' or '.join(malloc.OFF_VALUES[:1] + malloc.ON_VALUES[:1])}"
                          f" ({', '.join(malloc.OFF_VALUES[1:])} also leave malloc alone; "
                          f"{', '.join(malloc.ON_VALUES[1:])} tune it, as unset or empty does)")


def make_context(topology: Topology, network: Network, ecmp: str = "split", seed: int = 0,
                 mapping=None, p: int | None = None, background=None, slow=None,
                 limit=None) -> Context:
    """The run's :class:`Context`. ``limit`` is the run's memory limit
    (:func:`flowemu.core.budget.limit`: ``max_memory``, a sweep worker's
    share; None: ``FLOWEMU_MAX_MEMORY`` or 80 % of the available memory),
    which routing a background is checked against."""
    check_malloc_setting()
    topology.check_mode(ecmp, engine=True)   # its modes, or "adaptive" over "split"
    adaptive = ecmp == "adaptive"
    if adaptive:
        ecmp = "split"   # the candidate paths; _route rebalances them per step
    if mapping is None:
        n = topology.num_endpoints if p is None else p
        mapping = np.arange(n, dtype=np.int32)
    else:
        try:
            mapping = np.asarray(mapping)
        except (TypeError, ValueError):
            mapping = np.asarray(0)   # ragged or unconvertible: refused just below
        if mapping.ndim != 1 or not np.issubdtype(mapping.dtype, np.integer):
            raise ConfigError("mapping: must be a 1-D list of endpoint ids (one per rank)")
        if len(mapping) and (mapping.min() < 0 or mapping.max() >= topology.num_endpoints):
            raise ConfigError(f"mapping: endpoint ids must lie in 0..{topology.num_endpoints - 1}")
        if len(np.unique(mapping)) != len(mapping):
            raise ConfigError("mapping: two ranks are mapped to the same endpoint")
        mapping = mapping.astype(np.int32)
    cap = topology.link_capacity(network)
    w_t, eps = topology.incast_classes(network)
    incast = bool(np.any((eps > 0) & np.isfinite(w_t)))
    ingress = topology.ingress_capacity(network) if incast else None
    lat = topology.link_latency(network)
    _check_ranges(network, cap, lat, eps, getattr(topology, "degrade", ""), topology.spec,
                  getattr(topology, "base", None))
    uniform = float(lat[0]) if len(lat) and lat.min() == lat.max() else None
    ctx = Context(topology, network, ecmp, int(seed), mapping, cap, ingress, w_t, eps, lat,
                   uniform, {}, adaptive=adaptive,
                   identity=bool(np.array_equal(mapping, np.arange(len(mapping)))),
                   link_incast=topology.link_incast(network))
    if background is not None or slow is not None:
        background, slow = _load_args(topology, len(mapping), background, slow)
        ctx.load = prepare_load(ctx, background, slow, limit)
        ctx.speed = slow.compute_speed if slow is not None else None
        if adaptive and ctx.load is not None:
            ctx.adaptive_capacity = ctx.load.residual_capacity(ctx)
    return ctx


def _load_args(topology, p, bg, slow):
    """Background and slow ranks as checked objects (:mod:`flowemu.whatif`
    parses their specs; :func:`flowemu.profile` takes either)."""
    if bg is not None:
        if not isinstance(bg, Background):
            raise ConfigError(f"background: {show(bg)} is not allowed here; expected a "
                              "Background (flowemu.whatif.background.parse_background)")
        check_background(bg, topology.num_endpoints)
    if slow is not None:
        if not isinstance(slow, Slow):
            raise ConfigError(f"slow: {show(slow)} is not allowed here; expected a Slow "
                              "(flowemu.whatif.stragglers.parse_slow)")
        if slow.p != p:
            raise ConfigError(f"slow: {slow.spec!r} was parsed for {slow.p} ranks, not {p}")
    return bg, slow


#: largest time (s) and per-byte time (s/byte) a run takes, smallest link
#: bandwidth (bytes/s): within them no time can overflow float64 (at most
#: ~1e9 s per term, 2**53 bytes, 2**24 flows into a receiver, and far fewer
#: than 1e200 steps and hops) and no rate underflows to 0
MAX_SECONDS = 1e9
MIN_BANDWIDTH = 1e-9


def _check_ranges(network: Network, link_capacity, link_latency, incast_slope,
                  degrade: str = "", spec: str = "", base: Topology | None = None) -> None:
    """Refuse (ConfigError) a network whose times would overflow a run's total
    (``alpha=1e308``) or whose links are too slow for a rate to be
    representable (``bandwidth=5e-324``), naming what set the value: a
    network field, a degrade selector, or the topology ``spec``'s own terms
    (a leaf-spine's ``uplink=``, a tree level's ``eps=``)."""
    for name in ("alpha", "link_latency", "hop_latency", "gamma", "delta", "incast_slope"):
        value = getattr(network, name)
        if value > MAX_SECONDS:
            per = "" if name in ("alpha", "link_latency", "hop_latency") else " per byte"
            raise ConfigError(f"{name}: {show(value)} s{per} is not allowed; expected at most "
                              f"1e9 s{per} (longer times overflow a run's total)")
    # (the network's own values are in range: the topology's terms set these)
    if len(link_latency) and link_latency.max() > MAX_SECONDS:
        healthy = base.link_latency(network) if degrade and base is not None else link_latency
        if "lat=" in degrade and healthy.max() <= MAX_SECONDS:   # (its lat= made it so long)
            raise ConfigError(f"degrade: {degrade!r} leaves a link latency of "
                              f"{show(float(link_latency.max()))} s; expected at most 1e9 s "
                              "(a smaller lat= multiplier)")
        raise ConfigError(f"topology {spec!r}: a link latency of "
                          f"{show(float(link_latency.max()))} s is not allowed; expected at most "
                          "1e9 s (longer times overflow a run's total)")
    if len(incast_slope) and incast_slope.max() > MAX_SECONDS:
        raise ConfigError(f"topology {spec!r}: an incast slope of "
                          f"{show(float(incast_slope.max()))} s per byte is not allowed; expected "
                          "at most 1e9 s per byte")
    used = link_capacity[link_capacity > 0]
    if len(used) and used.min() < MIN_BANDWIDTH:
        slow = float(used.min())
        if network.bandwidth < MIN_BANDWIDTH:
            raise ConfigError(f"bandwidth: a link of {show(slow)} bytes/s is not allowed; "
                              "expected at least 1e-9 bytes/s")
        healthy = base.link_capacity(network) if degrade and base is not None else used
        healthy = healthy[healthy > 0]
        if degrade and not (len(healthy) and healthy.min() < MIN_BANDWIDTH):   # (its factor)
            raise ConfigError(f"degrade: {degrade!r} leaves a link {show(slow)} bytes/s; "
                              "expected at least 1e-9 bytes/s (a larger factor)")
        raise ConfigError(f"topology {spec!r}: a link of {show(slow)} bytes/s is not allowed; "
                          "expected at least 1e-9 bytes/s")


def check_ranks(ctx: Context, traffic: Traffic) -> None:
    """Every rank of ``traffic`` is mapped (a negative one would index the
    mapping from its end)."""
    if traffic.num_flows == 0 or ctx.key_of.get(("ranks", id(traffic))) is traffic:
        return
    lo, hi = (int(x) for x in id_bounds(traffic.src, traffic.dst))
    if lo < 0 or hi >= len(ctx.mapping):
        raise ConfigError(f"schedule: rank {lo if lo < 0 else hi} is not allowed; "
                          f"expected ranks 0..{len(ctx.mapping) - 1}")
    ctx.key_of[("ranks", id(traffic))] = traffic   # checked once a run


def endpoints(ctx: Context, traffic: Traffic) -> tuple[np.ndarray, np.ndarray]:
    """The endpoints of every flow's sender and receiver (ranks checked)."""
    check_ranks(ctx, traffic)
    if ctx.identity:
        return traffic.src, traffic.dst
    return ctx.mapping[traffic.src], ctx.mapping[traffic.dst]



def known_key(ctx: Context, traffic: Traffic) -> tuple[tuple, float]:
    # Algorithms reuse one Traffic object for repeated steps (a ring has 2(p-1)
    # equal steps): look it up by identity before hashing its arrays.
    known = ctx.key_of.get(id(traffic))
    if known is None:
        known = pattern_key(traffic)
        ctx.key_of[id(traffic)] = known
    return known



def pattern_key(traffic: Traffic) -> tuple[tuple, float]:
    """``(key, scale)``: steps with equal keys have the same flows (in any
    order) with shares proportional by ``scale`` (the largest share), so
    one solve serves both — their times scale exactly with the bytes.
    Swing's and bucket's concurrent collectives revisit the same peers with
    halved blocks, so this often saves a solve per dimension.

    The key combines two independent 64-bit mixes of each flow's
    ``(src, dst, share/scale)`` by wrap-around sum, which does not depend on
    flow order."""
    share = traffic.share
    scale = float(share.max()) if len(share) else 1.0
    if not scale > 0:
        scale = 1.0
    norm = (share / scale).view(np.uint64)
    s1, s2, x2 = multiset_fingerprint(traffic.src, traffic.dst, norm)
    key = (len(share), int(s1), int(s2), int(x2))
    if traffic.aggregation is not None:   # streams: their groups and trees too
        key += traffic.aggregation.key()
    return key, scale



def step_orbits(ctx: Context, traffic: Traffic):
    """A symmetry that maps the step's flows onto themselves
    (:meth:`Topology.orbits`), or None; kept per pattern (``check_memory``
    may ask first, the solve reuses it). Only where every link has the same
    latency (a flow's hops give its latency), without background or
    adaptive fractions (which break the symmetry), and with one incast
    class: the flows of an orbit then get one rate and the same lines."""
    if (ctx.uniform_latency is None or ctx.load is not None or ctx.adaptive
            or len(ctx.incast_threshold) > 1):
        return None
    key = ("orbit", known_key(ctx, traffic)[0])
    if key not in ctx.key_of:
        src, dst = endpoints(ctx, traffic)
        ctx.key_of[key] = ctx.topology.orbits(src, dst, traffic.share, ctx.ecmp,
                                              ctx.link_capacity)
    return ctx.key_of[key]
