"""Global bandwidth: what a uniform all-to-all gets per endpoint under the
fluid model, as a fraction of the endpoint's injection bandwidth
(:func:`global_bandwidth`; the HammingMesh paper's §III-A "global
bandwidth", its Table II column).

Every ordered pair of distinct endpoints sends the same ``b`` bytes at once,
routed as the engine routes them (``ecmp``). Link ``ℓ`` then carries
``load[ℓ]·b`` bytes (:func:`alltoall_loads`), so the all-to-all cannot end
before ``T = b·max(load/capacity)``, and it ends then: every flow at rate
``b/T`` fits every link, so the concurrent flow reaches the bound (a
max-min solve of the same step may finish some flows earlier, never the
last one). Each endpoint sends ``(N − 1)·b`` bytes in ``T``:

    global = (N − 1) / max_ℓ(load[ℓ] / capacity[ℓ]) / injection.

Routing every pair costs ``N²`` routes (2.7·10⁸ at 16,384 endpoints), so
two exact reductions are used where they hold (the ``method`` column):

* **translations** (torus, HyperX, HammingMesh): translating every node by
  a multiple of the period (1 on a torus and a HyperX, the board on a
  HammingMesh, wrapping around) maps the network and its ``split``/``dor``
  routes onto themselves. Routing only the senders of one period cell to
  every node gives ``L_R``; the load of a link is the sum of ``L_R`` over
  the link's orbit (the group acts freely on links, so each translate of
  the link is met once). Orbits are read from the links' ends (a node's
  coordinates modulo the period, the offset between two nodes, a switch's
  line); unless every orbit has exactly as many links as the group has
  elements, and one capacity, the reduction is not used.
* **switches**: where every endpoint hangs off one switch by one link each
  way (trees, leaf-spines, Dragonfly), a ``split`` (or Dragonfly
  ``valiant``) route is the endpoint's link, a route between the two
  switches that depends on nothing else, and the destination's link; one
  flow per ordered pair of switches, weighted by the product of their
  endpoint counts, gives every switch link's load, and each endpoint link
  carries ``N − 1`` messages.

Otherwise every pair is routed, in chunks.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..core import budget, checks
from ..core.errors import ConfigError
from ..core.network import Network
from ..core.units import user_rate
from ..topology import Topology
from ..topology import checks as topology_checks
from .linknames import link_names
from .run import build_topology

__all__ = ["GLOBAL_COLUMNS", "alltoall_loads", "global_bandwidth"]

#: columns of :func:`global_bandwidth`
GLOBAL_COLUMNS = ["topology", "nodes", "ecmp", "bandwidth_Bps", "injection_Bps", "nic_Bps",
                  "alltoall_Bps", "global_bw", "bottleneck", "method"]

#: flows routed at once when every pair is routed
CHUNK = 1 << 18


def _route_loads(topo: Topology, src, dst, weight, ecmp: str, loads: np.ndarray) -> None:
    """Add ``weight[i]`` times flow ``src[i] -> dst[i]``'s fractions to ``loads``."""
    for a in range(0, len(src), CHUNK):
        r = topo.route(src[a:a + CHUNK], dst[a:a + CHUNK], ecmp)
        w = np.repeat(weight[a:a + CHUNK], np.diff(r.flow_ptr))
        loads += np.bincount(r.link, weights=r.frac * w, minlength=len(loads))


def _all_pairs(topo: Topology, ecmp: str) -> np.ndarray:
    n = topo.num_endpoints
    loads = np.zeros(topo.num_links)
    ids = np.arange(n, dtype=np.int64)
    for s in range(0, n, max(1, CHUNK // n)):
        block = ids[s:s + max(1, CHUNK // n)]
        src = np.repeat(block, n)
        dst = np.tile(ids, len(block))
        keep = src != dst
        _route_loads(topo, src[keep], dst[keep], np.ones(int(keep.sum())), ecmp, loads)
    return loads


def _attachment(topo: Topology) -> np.ndarray | None:
    """The switch of every endpoint when each has exactly one link out and
    one in, both with the same vertex that is not an endpoint; else None."""
    n = topo.num_endpoints
    src, dst = np.asarray(topo.link_src), np.asarray(topo.link_dst)
    out = np.flatnonzero(src < n)
    inn = np.flatnonzero(dst < n)
    if len(out) != n or len(inn) != n:
        return None
    up = np.full(n, -1, dtype=np.int64)
    up[src[out]] = dst[out]
    down = np.full(n, -1, dtype=np.int64)
    down[dst[inn]] = src[inn]
    if np.any(up < n) or not np.array_equal(up, down):
        return None
    return up


def _behind_switches(topo: Topology, attach: np.ndarray, ecmp: str) -> np.ndarray:
    n = topo.num_endpoints
    switches, first, count = np.unique(attach, return_index=True, return_counts=True)
    k = len(switches)
    a = np.repeat(np.arange(k), k)
    b = np.tile(np.arange(k), k)
    keep = a != b
    a, b = a[keep], b[keep]
    loads = np.zeros(topo.num_links)
    _route_loads(topo, first[a].astype(np.int64), first[b].astype(np.int64),
                 (count[a] * count[b]).astype(np.float64), ecmp, loads)
    src, dst = np.asarray(topo.link_src), np.asarray(topo.link_dst)
    host_links = (src < n) | (dst < n)
    loads[host_links] = n - 1   # an endpoint's link carries its own N - 1 messages
    return loads


def _period(topo: Topology) -> tuple[int, ...] | None:
    """The translation period of a family whose every node is an endpoint on
    ``topo.grid`` (row-major) and whose routes commute with translations."""
    info = topo.describe()
    family = info.get("family")
    grid = topo.grid
    if grid is None or topo.num_endpoints != math.prod(grid):
        return None
    if family == "torus" and info.get("wrap"):
        return (1,) * len(grid)
    if family == "hyperx":
        return (1,) * len(grid)
    if family == "hammingmesh":
        return tuple(int(x) for x in info["board"])
    return None


def _link_orbits(topo: Topology, grid, period) -> np.ndarray | None:
    """Orbit index of every link under the translations by multiples of
    ``period``, or None when the links' ends do not pin the orbits down (an
    orbit not of the group's size)."""
    n = topo.num_endpoints
    dims = np.asarray(grid, dtype=np.int64)
    per = np.asarray(period, dtype=np.int64)
    coords = np.stack(np.unravel_index(np.arange(n), tuple(grid)), axis=1).astype(np.int64)
    cells = int(np.prod(per))
    residue = np.ravel_multi_index(tuple((coords % per).T), tuple(per)).astype(np.int64)
    src, dst = np.asarray(topo.link_src, np.int64), np.asarray(topo.link_dst, np.int64)
    nv = topo.num_nodes
    # a switch's class: which coordinates all its endpoints share, and their residues
    sw_code = np.arange(nv, dtype=np.int64) + (1 << 40)   # fixed points unless shown otherwise
    touch = np.concatenate([np.stack([dst, src], 1)[(src < n) & (dst >= n)],
                            np.stack([src, dst], 1)[(dst < n) & (src >= n)]])
    if len(touch):
        sw, node = touch[:, 0], touch[:, 1]
        lo = np.full((nv, len(grid)), np.iinfo(np.int64).max)
        hi = np.full((nv, len(grid)), -1)
        for d in range(len(grid)):
            np.minimum.at(lo[:, d], sw, coords[node, d])
            np.maximum.at(hi[:, d], sw, coords[node, d])
        seen = hi[:, 0] >= 0
        const = (lo == hi) & seen[:, None]
        mask = (const * (1 << np.arange(len(grid)))).sum(axis=1)
        res = np.where(const, lo % per, 0)
        code = mask * cells + np.ravel_multi_index(tuple(res.T), tuple(per))
        sw_code = np.where(seen, code, sw_code)
    both = (src < n) & (dst < n)
    kind = np.where(both, 0, np.where(src < n, 1, np.where(dst < n, 2, 3)))
    a = np.where(src < n, residue[np.minimum(src, n - 1)], sw_code[src])
    b = np.where(dst < n, residue[np.minimum(dst, n - 1)], sw_code[dst])
    offset = np.zeros(len(src), dtype=np.int64)
    if both.any():
        delta = (coords[dst[both]] - coords[src[both]]) % dims
        offset[both] = np.ravel_multi_index(tuple(delta.T), tuple(grid))
        b = np.where(both, 0, b)
    _, orbit, sizes = np.unique(np.stack([kind, a, b, offset], 1), axis=0, return_inverse=True,
                                return_counts=True)
    group = int(np.prod(dims // per))
    if np.any(sizes != group):
        return None
    return orbit.reshape(-1)


def _translated(topo: Topology, ecmp: str, capacity: np.ndarray) -> np.ndarray | None:
    period = _period(topo)
    if period is None or ecmp != "split":
        return None
    grid = topo.grid
    if any(g % p for g, p in zip(grid, period, strict=True)):
        return None
    orbit = _link_orbits(topo, grid, period)
    if orbit is None:
        return None
    norb = int(orbit.max()) + 1
    lo = np.full(norb, np.inf)
    hi = np.full(norb, -np.inf)
    np.minimum.at(lo, orbit, capacity)
    np.maximum.at(hi, orbit, capacity)
    if np.any(lo != hi):
        return None
    n = topo.num_endpoints
    reps = np.ravel_multi_index(tuple(np.indices(period).reshape(len(period), -1)), tuple(grid))
    src = np.repeat(reps.astype(np.int64), n)
    dst = np.tile(np.arange(n, dtype=np.int64), len(reps))
    keep = src != dst
    rep_loads = np.zeros(topo.num_links)
    _route_loads(topo, src[keep], dst[keep], np.ones(int(keep.sum())), ecmp, rep_loads)
    return np.bincount(orbit, weights=rep_loads, minlength=norb)[orbit]


def alltoall_loads(topology, ecmp: str = "split", *, method: str = "auto",
                   network: Network | None = None) -> tuple[np.ndarray, str]:
    """Every link's load under a uniform all-to-all.

    Parameters
    ----------
    topology : str or Topology
    ecmp : str
        A routing mode of the family (``split``, ``dor``, ``hash``, ...);
        ``adaptive`` is the engine's and is refused.
    method : {"auto", "pairs"}
        ``auto``: the cheapest exact reduction that holds (see the module
        docstring); ``pairs``: route every pair (for checking).
    network : Network, optional
        Only for the link capacities the translation reduction compares.

    Returns
    -------
    (loads, method)
        ``loads``: float64[L], the messages each link carries when every
        ordered pair of distinct endpoints sends one; ``method``: ``pairs``,
        ``translations`` or ``switches``.
    """
    topo = build_topology(topology, budget.limit(None))
    topo.check_mode(ecmp)
    if method not in ("auto", "pairs"):
        raise ConfigError(f"method: {method!r} is not allowed; expected 'auto' or 'pairs'")
    if method == "auto":
        cap = topo.link_capacity(network if network is not None else Network())
        loads = _translated(topo, ecmp, cap)
        if loads is not None:
            return loads, "translations"
        attach = _attachment(topo)
        if attach is not None and ecmp in ("split", "valiant"):
            return _behind_switches(topo, attach, ecmp), "switches"
    return _all_pairs(topo, ecmp), "pairs"


def global_bandwidth(topology, *, ecmp: str = "split", injection=None, nic=None,
                     network: Network | None = None, method: str = "auto",
                     **network_params) -> pd.DataFrame:
    """Global (all-to-all) bandwidth of a network, as a fraction of injection.

    Parameters
    ----------
    topology : str or Topology
    ecmp : str
        Routing mode (default ``split``, the fluid limit of adaptive routing).
    injection : rate, optional
        What 1.0 means, e.g. ``"1.6Tb/s"``. Default: ``nic`` if given, else
        the capacity of the links leaving endpoint 0 (the four ports of a
        torus or HammingMesh node, a host's one link).
    nic : rate, optional
        Every endpoint reaches the topology through a NIC of this rate each
        way, a link the topology does not have (a HyperX router's
        endpoint): under the all-to-all it carries exactly the endpoint's
        ``N − 1`` messages, so the rate per endpoint is also at most ``nic``.
    network, **network_params
        As for :func:`flowemu.simulate` (only the bandwidth matters).
    method : {"auto", "pairs"}
        See :func:`alltoall_loads`.

    Returns
    -------
    pandas.DataFrame
        One row, :data:`GLOBAL_COLUMNS`: ``alltoall_Bps`` is what each
        endpoint sends per second, ``global_bw`` that over ``injection_Bps``;
        ``bottleneck`` names a most loaded link (or ``nic``); ``method`` the
        reduction used.
    """
    net = checks.network(network, network_params, "global_bandwidth",
                         ("ecmp", "injection", "nic", "network", "method"))
    unseen = [k for k in network_params if k != "bandwidth"]
    if unseen:   # (a preset's or a Network's are left as they are)
        raise ConfigError(f"{unseen[0]}: does not change a global bandwidth (a rate over "
                          "injection: only the links' bandwidth counts); drop it")
    topo = build_topology(topology, budget.limit(None))
    ecmp = topology_checks.routing(ecmp, 0)[0]
    nic_Bps = None if nic is None else user_rate(nic, "nic")
    loads, how = alltoall_loads(topo, ecmp, method=method, network=net)
    cap = topo.link_capacity(net)
    n = topo.num_endpoints
    # (a mesh keeps its missing wrap-around links at capacity 0: they carry nothing)
    per_byte = np.where(cap > 0, loads / np.where(cap > 0, cap, 1.0),
                        np.where(loads > 0, np.inf, 0.0))
    worst = int(np.argmax(per_byte))
    t = float(per_byte[worst])
    name = str(link_names(topo, np.array([worst]))[0][0])
    if nic_Bps is not None and (n - 1) / nic_Bps > t:
        t, name = (n - 1) / nic_Bps, "nic"
    if injection is not None:
        inject = user_rate(injection, "injection")
    elif nic_Bps is not None:
        inject = nic_Bps
    else:
        # a node's ports, the fullest node's where they differ (a mesh's corners have fewer)
        out = np.bincount(np.asarray(topo.link_src), weights=cap, minlength=topo.num_nodes)
        inject = float(out[:topo.num_endpoints].max())   # (endpoints are vertices 0..N-1)
    rate = (n - 1) / t
    row = {"topology": topo.spec, "nodes": n, "ecmp": ecmp, "bandwidth_Bps": net.bandwidth,
           "injection_Bps": inject, "nic_Bps": np.nan if nic_Bps is None else nic_Bps,
           "alltoall_Bps": rate, "global_bw": rate / inject, "bottleneck": name, "method": how}
    return pd.DataFrame([row], columns=GLOBAL_COLUMNS)
