"""The max-min problem the solvers are given, checked (:mod:`.maxmin`'s
entry points call these before any kernel): the routes' CSR, capacities,
flow bytes and persistent flags, and the incast resources -- one ingress
resource per receiver (and incast class) appended after the links, links
with incast terms of their own moved after the others -- each bad value
named in a ``ValueError``."""

from __future__ import annotations

import numpy as np

from .completion import append_ingress, first_bad_entry


def int_array(name, value, dtype):
    arr = np.asarray(value)
    if arr.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array, got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{name}: expected an integer array, got dtype {arr.dtype}")
    return np.ascontiguousarray(arr, dtype=dtype)


def float_array(name, value, length=None, what="values"):
    arr = np.asarray(value)
    if arr.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array, got shape {arr.shape}")
    if arr.size and not (np.issubdtype(arr.dtype, np.floating)
                         or np.issubdtype(arr.dtype, np.integer)):
        raise ValueError(f"{name}: expected a float array, got dtype {arr.dtype}")
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    if length is not None and arr.shape[0] != length:
        raise ValueError(f"{name}: expected {length} {what}, got {arr.shape[0]}")
    if not np.all(np.isfinite(arr)):
        bad = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise ValueError(f"{name}[{bad}] = {arr[bad]} is not finite")
    if np.any(arr < 0):
        bad = int(np.flatnonzero(arr < 0)[0])
        raise ValueError(f"{name}[{bad}] = {arr[bad]} is negative")
    return arr


def float_array_inf(name, value, length) -> np.ndarray:
    """A float64[length] of values ``>= 0`` or ``+inf`` (incast thresholds)."""
    arr = np.ascontiguousarray(value, dtype=np.float64)
    if arr.shape != (length,):
        raise ValueError(f"{name}: expected {length} links, got shape {arr.shape}")
    bad = np.flatnonzero(np.isnan(arr) | (arr < 0))
    if len(bad):
        raise ValueError(f"{name}[{bad[0]}] = {arr[bad[0]]} is not >= 0 (or inf)")
    return arr


def check_routes(routes, n_links):
    """Validated (flow_ptr int64, link int32, frac float64) of ``routes``."""
    for attr in ("flow_ptr", "link", "frac"):
        if not hasattr(routes, attr):
            raise ValueError(f"routes: expected a Routes object, missing attribute {attr!r}")
    flow_ptr = int_array("routes.flow_ptr", routes.flow_ptr, np.int64)
    link = int_array("routes.link", routes.link, np.int32)
    frac = np.asarray(routes.frac)
    if frac.ndim != 1:
        raise ValueError(f"routes.frac: expected a 1-D array, got shape {frac.shape}")
    frac = np.ascontiguousarray(frac, dtype=np.float64)
    if flow_ptr.shape[0] < 1:
        raise ValueError("routes.flow_ptr: must have F+1 >= 1 entries")
    if link.shape[0] != frac.shape[0]:
        raise ValueError(f"routes: link has {link.shape[0]} entries but frac has "
                         f"{frac.shape[0]}")
    if flow_ptr[0] != 0 or flow_ptr[-1] != link.shape[0]:
        raise ValueError(f"routes.flow_ptr: must start at 0 and end at the number of entries "
                         f"({link.shape[0]}), got {flow_ptr[0]} .. {flow_ptr[-1]}")
    if np.any(np.diff(flow_ptr) < 0):
        raise ValueError("routes.flow_ptr: must be non-decreasing")
    # the entries themselves are checked by the kernel, in its first pass
    return flow_ptr, link, frac


def raise_bad_entry(link, frac, n_links):
    """Raise ``ValueError`` naming the first entry with a link outside
    ``[0, n_links)`` or a fraction not in ``(0, 1]``, if there is one."""
    bad = first_bad_entry(link, frac, n_links)
    if bad >= 0:
        if not (0 <= link[bad] < n_links):
            raise ValueError(f"routes.link[{bad}] = {link[bad]} is not a link id in "
                             f"[0, {n_links})")
        raise ValueError(f"routes.frac[{bad}] = {frac[bad]} is not in (0, 1]")


def _incast_terms(incast_threshold, incast_slope) -> tuple[np.ndarray, np.ndarray]:
    """The incast classes' ``(w_t[K], eps[K])`` (``K >= 1``) from scalars or
    equal-length 1-D arrays; ``ValueError`` naming a bad value."""
    w_t = np.atleast_1d(np.asarray(incast_threshold, dtype=np.float64))
    eps = np.atleast_1d(np.asarray(incast_slope, dtype=np.float64))
    if w_t.ndim != 1 or eps.ndim != 1 or len(w_t) != len(eps) or len(w_t) == 0:
        raise ValueError("incast_threshold and incast_slope: expected two numbers or two "
                         f"1-D arrays of equal length >= 1 (one per incast class), got shapes "
                         f"{w_t.shape} and {eps.shape}")
    bad = np.flatnonzero(np.isnan(w_t) | (w_t < 0))
    if len(bad):
        raise ValueError(f"incast_threshold: must be >= 0 (or inf), got {w_t[bad[0]]!r}"
                         + (f" (class {bad[0]})" if len(w_t) > 1 else ""))
    bad = np.flatnonzero(~np.isfinite(eps) | (eps < 0))
    if len(bad):
        raise ValueError(f"incast_slope: must be finite and >= 0, got {eps[bad[0]]!r}"
                         + (f" (class {bad[0]})" if len(eps) > 1 else ""))
    return w_t, eps


def _ingress_problem(flow_ptr, link, frac, link_capacity, flow_dst, flow_class,
                     ingress_capacity, w_t, eps):
    """The CSR, capacities and per-ingress-resource terms with the ingress
    resources appended (ids from ``len(link_capacity)`` on).

    One class: resource ``L + v`` for receiver ``v`` (every vertex has one,
    the layout the solver always had). Several: one resource per
    ``(class, receiver)`` pair that some non-empty flow has, numbered in the
    order of ``class * N + receiver``; its capacity is the receiver's base
    capacity, its terms the class's."""
    n_links = link_capacity.shape[0]
    if len(w_t) == 1:
        flow_ptr, link, frac = append_ingress(flow_ptr, link, frac, flow_dst, n_links)
        n_vertices = ingress_capacity.shape[0]
        return (flow_ptr, link, frac, np.concatenate([link_capacity, ingress_capacity]),
                np.full(n_vertices, w_t[0]), np.full(n_vertices, eps[0]))
    n_vertices = ingress_capacity.shape[0]
    nonempty = np.diff(flow_ptr) > 0
    key = flow_class[nonempty] * n_vertices + flow_dst[nonempty]
    n_keys = len(w_t) * n_vertices
    if n_keys <= 2 * len(key) + (1 << 16):
        # mark the pairs in use and number them in key order: O(F + K·N),
        # no sort (np.unique's would be a third of a 1M-flow step's set-up);
        # only when the marks take no more memory than a few arrays of F
        used = np.zeros(n_keys, dtype=np.bool_)
        used[key] = True
        pairs = np.flatnonzero(used)
        index = (np.cumsum(used) - 1)[key]
    else:
        pairs, index = np.unique(key, return_inverse=True)
    ingress_id = np.zeros(len(flow_dst), dtype=np.int64)
    ingress_id[nonempty] = index.reshape(-1)
    flow_ptr, link, frac = append_ingress(flow_ptr, link, frac, ingress_id, n_links)
    cls = pairs // n_vertices
    return (flow_ptr, link, frac,
            np.concatenate([link_capacity, ingress_capacity[pairs % n_vertices]]),
            w_t[cls], eps[cls])


def _persistent_mask(persistent, flow_ptr) -> np.ndarray:
    """``persistent`` as a checked bool[F] (all False when None)."""
    n_flows = flow_ptr.shape[0] - 1
    if persistent is None:
        return np.zeros(n_flows, dtype=np.bool_)
    mask = np.asarray(persistent)
    if mask.shape != (n_flows,) or mask.dtype != np.bool_:
        raise ValueError(f"persistent: expected a bool array of shape ({n_flows},), got "
                         f"{mask.dtype} {mask.shape}")
    empty = np.flatnonzero(mask & (flow_ptr[1:] == flow_ptr[:-1]))
    if len(empty):
        raise ValueError(f"persistent[{int(empty[0])}]: a persistent flow needs a non-empty "
                         "path (it would get an infinite rate)")
    return np.ascontiguousarray(mask)


def _terms_text(values: np.ndarray) -> str:
    """One number for one class, else the list (for messages)."""
    return repr(float(values[0])) if len(values) == 1 else repr(values.tolist())


def prepared_problem(routes, link_capacity, flow_bytes, flow_dst, ingress_capacity, incast_threshold,
              incast_slope, flow_class, persistent, link_incast=None) -> tuple:
    """The completion kernels' inputs, checked, with the ingress resources
    appended when incast is on and the links with incast of their own
    (``link_incast``) moved after the others: ``(flow_ptr, res, frac,
    capacity, n_plain, w_t, eps, n_links, flow_bytes, persistent)``, where
    resources ``>= n_plain`` are incast resources with terms ``w_t``, ``eps``
    (links first, then the receivers' ingress resources)."""
    link_capacity = float_array("link_capacity", link_capacity, what="links")
    n_links = link_capacity.shape[0]
    flow_ptr, link, frac = check_routes(routes, n_links)
    n_flows = flow_ptr.shape[0] - 1
    flow_bytes = float_array("flow_bytes", flow_bytes, n_flows, what="flows")
    w_t, eps = _incast_terms(incast_threshold, incast_slope)
    keep = _persistent_mask(persistent, flow_ptr)
    capacity = link_capacity
    n_ingress = 0
    if np.any((eps > 0) & np.isfinite(w_t)):
        if flow_dst is None or ingress_capacity is None:
            raise ValueError("flow_dst and ingress_capacity are required when incast is on "
                             f"(incast_threshold={_terms_text(w_t)}, "
                             f"incast_slope={_terms_text(eps)})")
        ingress_capacity = float_array("ingress_capacity", ingress_capacity, what="vertices")
        n_vertices = ingress_capacity.shape[0]
        flow_dst = int_array("flow_dst", flow_dst, np.int64)
        if flow_dst.shape[0] != n_flows:
            raise ValueError(f"flow_dst: expected {n_flows} flows, got {flow_dst.shape[0]}")
        if n_flows and (flow_dst.min() < 0 or flow_dst.max() >= n_vertices):
            bad = int(np.flatnonzero((flow_dst < 0) | (flow_dst >= n_vertices))[0])
            raise ValueError(f"flow_dst[{bad}] = {flow_dst[bad]} is not a vertex in "
                             f"[0, {n_vertices})")
        if flow_class is None:
            flow_class = np.zeros(n_flows, dtype=np.int64)
        flow_class = int_array("flow_class", flow_class, np.int64)
        if flow_class.shape[0] != n_flows:
            raise ValueError(f"flow_class: expected {n_flows} flows, got {flow_class.shape[0]}")
        if n_flows and (flow_class.min() < 0 or flow_class.max() >= len(w_t)):
            bad = int(np.flatnonzero((flow_class < 0) | (flow_class >= len(w_t)))[0])
            raise ValueError(f"flow_class[{bad}] = {flow_class[bad]} is not an incast class in "
                             f"[0, {len(w_t)})")
        # an out-of-range link id must not pass for an ingress resource
        raise_bad_entry(link, frac, n_links)
        flow_ptr, link, frac, capacity, w_t, eps = _ingress_problem(
            flow_ptr, link, frac, link_capacity, flow_dst, flow_class, ingress_capacity, w_t,
            eps)
        n_ingress = len(w_t)
    w_t, eps = w_t[:n_ingress], eps[:n_ingress]
    n_plain = n_links
    if link_incast is not None:
        lw = float_array_inf("link_incast (w_t)", link_incast[0], n_links)
        le = float_array("link_incast (eps)", link_incast[1], n_links, what="links")
        on = (le > 0) & np.isfinite(lw)
        if on.any():
            real = link < n_links if n_ingress else slice(None)
            raise_bad_entry(link[real], frac[real], n_links)
            plain = np.flatnonzero(~on)
            n_plain = len(plain)
            remap = np.empty(n_links, dtype=np.int32)
            remap[plain] = np.arange(n_plain, dtype=np.int32)
            remap[on] = n_plain + np.arange(n_links - n_plain, dtype=np.int32)
            link = np.where(link < n_links, remap[np.minimum(link, n_links - 1)],
                            link).astype(np.int32)
            capacity = np.concatenate([capacity[plain], capacity[np.flatnonzero(on)],
                                       capacity[n_links:]])
            w_t, eps = np.concatenate([lw[on], w_t]), np.concatenate([le[on], eps])
    return flow_ptr, link, frac, capacity, n_plain, w_t, eps, n_links, flow_bytes, keep


def release_times(stage_release) -> np.ndarray:
    """``stage_release`` as float64: finite, ``>= 0`` or exactly -1."""
    arr = np.ascontiguousarray(stage_release, dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(arr) | ((arr < 0) & (arr != -1.0)))
    if arr.ndim != 1 or len(bad):
        raise ValueError("stage_release: expected a 1-D array of start times >= 0 or -1, got "
                         + (f"{arr[bad[0]]!r} at {bad[0]}" if arr.ndim == 1 else str(arr.shape)))
    return arr
