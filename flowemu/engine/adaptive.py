"""Fluid minimal adaptive routing (``ecmp="adaptive"``).

Per step, each flow is split over its minimal paths (the DAG its ``split``
route entries form) so as to minimise the most loaded link in time units,
``max_l (sum_f bytes_f frac_fl) / capacity_l``: the fluid limit of minimal
adaptive routing, which the Swing paper assumes (§2.2: "the network forward
packets using minimal adaptive routing"; §6 "Routing Impact": packets take
the least congested shortest path). The optimum's fractions do not depend on the vector size
(every flow's bytes scale with it), so a step's profile stays exact.

Flows joined by shared links form a component; components share no link,
so each is solved on its own and balanced to its own min-max. Where a
component's split is already optimal (every minimal path symmetric: Swing or
a ring on a healthy torus, permutations on a fat tree) a certified lower
bound proves it and its split is kept; when every component's is, the split
routes are returned unchanged, so times equal ``split`` bit for bit.
Otherwise a linear-programming solver (:mod:`flowemu.kernels.adaptive`,
:mod:`flowemu.kernels.adaptive_lp`) finds fractions whose max is within
``tol`` (relative) of a certified lower bound, or stops at ``max_iter``; no
component ends worse than its split.

Not modelled: per-packet adaptivity and its queueing, non-minimal paths
(Valiant/UGAL), and max-min awareness (the fractions minimise the most loaded
link; max-min then shares the links among flows as for any routing).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.errors import ConfigError, SolverError, show
from ..kernels.adaptive import STATUS_NAMES, STATUS_OPTIMIZED, adaptive_kernel
from ..topology.base import Routes

__all__ = ["DEFAULT_MAX_ITER", "DEFAULT_TOL", "AdaptedRoutes", "AdaptiveResult",
           "adaptive_routes", "adaptive_solve"]

#: relative gap between the returned max load and the certified lower bound
#: at which the solver stops
DEFAULT_TOL = 1e-6
#: solver iterations at most (each costs a few passes over the route entries
#: of the flows that have a choice)
DEFAULT_MAX_ITER = 20000


@dataclass(frozen=True)
class AdaptedRoutes(Routes):
    """Routes whose fractions the adaptive solver changed from the split's.

    A family's reduced solver problem (:meth:`Topology.solver_problem`,
    fat-tree uplink groups) relies on the split's symmetric fractions, so
    the engine skips it for these; split routes kept unchanged stay plain
    :class:`Routes` and are solved exactly as ``split`` solves them."""


@dataclass(frozen=True)
class AdaptiveResult:
    """What :func:`adaptive_solve` found.

    Attributes
    ----------
    routes : Routes
        The adaptive routes (the input routes themselves when the split is
        kept).
    status : str
        ``"optimized"`` (some component beat its split), ``"split optimal"``
        (every component's split certified), ``"a flow must cross a
        zero-capacity link"`` (some component's every routing is infinite;
        split kept there, nothing beaten elsewhere), or ``"no gain over
        split"`` (nothing better than the split by more than 1e-9 relative
        within ``max_iter``).
    split_max : float
        The split's most loaded link, in seconds (load / capacity).
    max_load : float
        The returned routes' most loaded link, in seconds.
    lower_bound : float
        A certified lower bound on the optimum (the largest component's; 0
        where none was computed).
    iterations : int
        Solver iterations, summed over the components.
    """

    routes: Routes
    status: str
    split_max: float
    max_load: float
    lower_bound: float
    iterations: int


def adaptive_routes(routes: Routes, link_src, link_dst, flow_src, flow_dst, flow_bytes,
                    capacity, *, tol: float = DEFAULT_TOL,
                    max_iter: int = DEFAULT_MAX_ITER) -> Routes:
    """Split each flow over its minimal paths to minimise the most loaded link.

    Parameters
    ----------
    routes : Routes
        The ``ecmp="split"`` routes of the flows (all minimal paths): each
        flow's entries form a DAG from its source to its destination.
    link_src, link_dst : int[L]
        Vertices of each link.
    flow_src, flow_dst : int[F]
        Source and destination vertex of each flow.
    flow_bytes : float[F]
        Bytes of each flow (>= 0; only their ratios matter).
    capacity : float[L]
        Link capacities in bytes/s (>= 0; ``inf`` never limits, a flow
        avoids a link of 0 where its paths let it).
    tol : float
        Relative gap to the certified lower bound at which a component
        stops (default 1e-6).
    max_iter : int
        Solver iterations at most, per component (default 20,000; it checks
        its progress every 64, so it may run up to 63 more).

    Returns
    -------
    Routes
        Same flows and hops; each flow's fractions a unit flow on its DAG
        minimising ``max_l sum_f bytes_f frac_fl / capacity_l`` over the
        links of its component. Entries whose
        fraction becomes 0 are dropped (the max-min solver takes fractions in
        (0, 1]). When the split is optimal (certified) or nothing beats it,
        ``routes`` itself is returned; otherwise an :class:`AdaptedRoutes`.

    Raises
    ------
    ConfigError
        Arrays of the wrong shape or values out of range.
    SolverError
        The route entries of a flow do not form a DAG from its source to its
        destination.
    """
    return adaptive_solve(routes, link_src, link_dst, flow_src, flow_dst, flow_bytes, capacity,
                          tol=tol, max_iter=max_iter).routes


def adaptive_solve(routes: Routes, link_src, link_dst, flow_src, flow_dst, flow_bytes,
                   capacity, *, tol: float = DEFAULT_TOL,
                   max_iter: int = DEFAULT_MAX_ITER) -> AdaptiveResult:
    """:func:`adaptive_routes` with the solver's figures (:class:`AdaptiveResult`)."""
    args = _check(routes, link_src, link_dst, flow_src, flow_dst, flow_bytes, capacity, tol,
                  max_iter)
    flow_ptr, link, frac, link_src, link_dst, flow_src, flow_dst, flow_bytes, capacity, peak = args
    num_nodes = 1 + max(int(link_src.max(initial=-1)), int(link_dst.max(initial=-1)),
                        int(flow_src.max(initial=-1)), int(flow_dst.max(initial=-1)))
    status, new_frac, stats = adaptive_kernel(flow_ptr, link, frac, link_src, link_dst,
                                              flow_src, flow_dst, flow_bytes, capacity,
                                              num_nodes, float(tol), int(max_iter))
    if status < 0:
        raise SolverError(f"adaptive routing failed (status {status}: "
                          f"{STATUS_NAMES.get(status, 'unknown')}) on {routes.num_flows} flows")
    out = routes
    if status == STATUS_OPTIMIZED:
        # a flow's share of a link is at most all of it; the solver's sums may
        # overshoot 1 by a rounding error (1.0000000000000002)
        new_frac = np.minimum(new_frac, 1.0)
        keep = new_frac > 0.0
        if keep.all():
            out = AdaptedRoutes(routes.flow_ptr, routes.link, new_frac, routes.hops)
        else:
            counts = np.add.reduceat(keep.astype(np.int64), flow_ptr[:-1]) \
                if len(keep) else np.zeros(routes.num_flows, dtype=np.int64)
            counts[np.diff(flow_ptr) == 0] = 0   # reduceat repeats a value at empty rows
            ptr = np.zeros(routes.num_flows + 1, dtype=np.int64)
            np.cumsum(counts, out=ptr[1:])
            out = AdaptedRoutes(ptr, routes.link[keep], new_frac[keep], routes.hops)
    return AdaptiveResult(out, STATUS_NAMES[status], float(stats[0]) * peak,
                          float(stats[1]) * peak, float(stats[2]) * peak, int(stats[3]))


def _array(name: str, value, dtype, length: int | None = None) -> np.ndarray:
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):
        arr = np.asarray(None)
    if arr.ndim != 1 or not (arr.size == 0 or np.issubdtype(arr.dtype, np.number)) \
            or arr.dtype == bool:
        raise ConfigError(f"{name}: {show(value)} is not allowed; expected a 1-D numeric array")
    if np.issubdtype(np.dtype(dtype), np.integer) and arr.size and \
            not np.issubdtype(arr.dtype, np.integer):
        raise ConfigError(f"{name}: expected integer ids, got dtype {arr.dtype}")
    if length is not None and len(arr) != length:
        raise ConfigError(f"{name}: expected {length} values, got {len(arr)}")
    return np.ascontiguousarray(arr, dtype=dtype)


def _check(routes, link_src, link_dst, flow_src, flow_dst, flow_bytes, capacity, tol, max_iter):
    if not isinstance(routes, Routes):
        raise ConfigError(f"routes: {show(routes)} is not allowed; expected a Routes")
    num_flows = routes.num_flows
    flow_ptr = _array("routes.flow_ptr", routes.flow_ptr, np.int64)
    link = _array("routes.link", routes.link, np.int64)
    frac = _array("routes.frac", routes.frac, np.float64, len(link))
    link_src = _array("link_src", link_src, np.int64)
    link_dst = _array("link_dst", link_dst, np.int64, len(link_src))
    capacity = _array("capacity", capacity, np.float64, len(link_src))
    flow_src = _array("flow_src", flow_src, np.int64, num_flows)
    flow_dst = _array("flow_dst", flow_dst, np.int64, num_flows)
    flow_bytes = _array("flow_bytes", flow_bytes, np.float64, num_flows)
    if len(flow_ptr) == 0 or flow_ptr[0] != 0 or flow_ptr[-1] != len(link) \
            or np.any(np.diff(flow_ptr) < 0):
        raise ConfigError("routes.flow_ptr: expected a non-decreasing CSR pointer from 0 to "
                          "the number of entries")
    if len(link) and (link.min() < 0 or link.max() >= len(link_src)):
        raise ConfigError(f"routes.link: link ids must lie in 0..{len(link_src) - 1}")
    if len(frac) and not np.all((frac > 0) & (frac <= 1)):
        raise ConfigError("routes.frac: fractions must lie in (0, 1]")
    for name, arr in (("link_src", link_src), ("link_dst", link_dst), ("flow_src", flow_src),
                      ("flow_dst", flow_dst)):
        if len(arr) and arr.min() < 0:
            raise ConfigError(f"{name}: vertex ids must be >= 0, got {int(arr.min())}")
    bad = np.flatnonzero(np.isnan(capacity) | (capacity < 0))
    if len(bad):
        raise ConfigError(f"capacity: link {int(bad[0])} has {show(float(capacity[bad[0]]))}; "
                          "capacities must be >= 0 (inf allowed)")
    if not np.all(np.isfinite(flow_bytes)) or (len(flow_bytes) and flow_bytes.min() < 0):
        raise ConfigError("flow_bytes: bytes must be finite and >= 0")
    if not isinstance(tol, (int, float)) or isinstance(tol, bool) or not 0 < tol < 1:
        raise ConfigError(f"tol: {show(tol)} is not allowed; expected a number in (0, 1)")
    if not isinstance(max_iter, (int, np.integer)) or isinstance(max_iter, bool) \
            or max_iter < 0:
        raise ConfigError(f"max_iter: {show(max_iter)} is not allowed; expected an integer "
                          ">= 0")
    # bytes scaled to a maximum of 1: the fractions only depend on ratios,
    # and the solver's units stay of order 1
    peak = float(flow_bytes.max()) if len(flow_bytes) else 0.0
    if peak > 0:
        flow_bytes = flow_bytes / peak
    else:
        peak = 1.0
    return (flow_ptr, link, frac, link_src, link_dst, flow_src, flow_dst, flow_bytes, capacity,
            peak)
