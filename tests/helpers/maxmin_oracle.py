"""Slow, obviously-correct reference for flowemu.kernels.maxmin (tests only).

Plain Python over lists, written independently of the numba kernels: a full
progressive-filling solve at every event (no heap, no incremental re-solve),
with the same rules as the model:

* resources whose level is within a relative 1e-12 of the minimum saturate in
  the same pass; flows finishing within a relative 1e-12 of the earliest
  finish time finish together;
* an empty path has rate +inf and finishes at 0; a 0-byte flow takes part in
  the t = 0 solve and finishes at 0;
* incast (GenModel eq. 7-10): a resource ``r >= n_plain`` crossed by ``w``
  active flows has capacity ``1 / (1 / base + max(w - w_t, 0) * eps)``, with
  one ``(w_t, eps)`` for all of them or each its own (incast per tier: the
  caller builds one ingress resource per receiver and class);

Also :func:`check_maxmin`, the invariant check of a max-min allocation.
"""

from __future__ import annotations

import math

TIE = 1e-12

OK = 0
STALLED = 1


def csr_to_lists(flow_ptr, res, frac):
    """Per-flow list of ``(resource, fraction)`` pairs from a CSR."""
    flows = []
    for f in range(len(flow_ptr) - 1):
        a, b = int(flow_ptr[f]), int(flow_ptr[f + 1])
        flows.append([(int(res[e]), float(frac[e])) for e in range(a, b)])
    return flows


def progressive_filling(flows, capacity, active):
    """Max-min fair rates by progressive filling.

    ``flows``: list of ``[(r, a), ...]``; ``capacity``: list of floats;
    ``active``: list of bools. Inactive flows get 0, active empty paths inf.
    """
    n_res = len(capacity)
    rates = [0.0] * len(flows)
    unfrozen = []
    for f, path in enumerate(flows):
        if active[f]:
            if path:
                unfrozen.append(f)
            else:
                rates[f] = math.inf
    used = [0.0] * n_res
    while unfrozen:
        weight = [0.0] * n_res
        for f in unfrozen:
            for r, a in flows[f]:
                weight[r] += a
        level = {}
        for r in range(n_res):
            if weight[r] > 0.0:
                level[r] = (capacity[r] - used[r]) / weight[r]
        lam = max(min(level.values()), 0.0)
        saturated = {r for r, lv in level.items() if lv <= lam * (1.0 + TIE)}
        still = []
        for f in unfrozen:
            if any(r in saturated for r, _ in flows[f]):
                rates[f] = lam
                for r, a in flows[f]:
                    used[r] += a * lam
            else:
                still.append(f)
        unfrozen = still
    return rates


def incast_capacity(base, fan_in, w_t, eps):
    """GenModel eq. 10: bandwidth ``1 / beta'`` with ``beta' = 1/base +
    max(w - w_t, 0) * eps``."""
    excess = fan_in - w_t
    if excess > 0:
        if base == 0.0:
            return 0.0
        return 1.0 / (1.0 / base + excess * eps)
    return base


def completion(flows, capacity, flow_bytes, n_plain=None, w_t=math.inf, eps=0.0,
               incast_at=None):
    """Event-driven completion; returns ``(rate0, finish, status)``.

    ``w_t`` and ``eps``: numbers (every ingress resource) or lists with one
    value per ingress resource ``n_plain, n_plain + 1, ...``. ``incast_at``:
    ``{resource: (w_t, eps)}`` for resources below ``n_plain`` with incast of
    their own (a switch's egress link where flows converge). Re-solves every
    active flow from scratch at every event.
    """
    n_res = len(capacity)
    if n_plain is None:
        n_plain = n_res
    n_ingress = n_res - n_plain
    w_ts = list(w_t) if isinstance(w_t, (list, tuple)) else [w_t] * n_ingress
    epss = list(eps) if isinstance(eps, (list, tuple)) else [eps] * n_ingress
    assert len(w_ts) == len(epss) == n_ingress
    terms = {r: (w_ts[r - n_plain], epss[r - n_plain]) for r in range(n_plain, n_res)}
    terms.update(incast_at or {})
    incast = any(e > 0.0 and math.isfinite(w) for w, e in terms.values())
    n = len(flows)
    rate0 = [0.0] * n
    finish = [math.inf] * n
    remaining = [float(b) for b in flow_bytes]
    active = [bool(path) for path in flows]
    for f in range(n):
        if not flows[f]:
            rate0[f] = math.inf
            finish[f] = 0.0
    t = 0.0
    first = True
    while any(active):
        caps = [float(c) for c in capacity]
        if incast:
            fan_in = [0] * n_res
            for f in range(n):
                if active[f]:
                    for r, _ in flows[f]:
                        fan_in[r] += 1
            for r, (w, e) in terms.items():
                if e > 0.0:
                    caps[r] = incast_capacity(capacity[r], fan_in[r], w, e)
        rates = progressive_filling(flows, caps, active)
        if first:
            first = False
            for f in range(n):
                if active[f]:
                    rate0[f] = rates[f]
        end = {}
        for f in range(n):
            if active[f]:
                if remaining[f] <= 0.0:
                    end[f] = t
                elif rates[f] > 0.0 and math.isfinite(t + remaining[f] / rates[f]):
                    end[f] = t + remaining[f] / rates[f]
                else:
                    return rate0, finish, STALLED
        t_next = min(end.values())
        dt = t_next - t
        for f, tf in end.items():
            if tf <= t_next * (1.0 + TIE):
                finish[f] = t_next
                active[f] = False
            else:
                remaining[f] = max(remaining[f] - rates[f] * dt, 0.0)
        t = t_next
    return rate0, finish, OK


def check_maxmin(flow_ptr, res, frac, capacity, rates, active=None, rtol=1e-9):
    """Raise ``AssertionError`` unless ``rates`` is a max-min fair allocation.

    Checks: no resource is over capacity; every active flow with a non-empty
    path crosses a saturated resource (load >= capacity * (1 - rtol)) on
    which no flow has a higher rate (to ``rtol``).
    """
    flows = csr_to_lists(flow_ptr, res, frac)
    n_res = len(capacity)
    if active is None:
        active = [True] * len(flows)
    load = [0.0] * n_res
    top = [0.0] * n_res  # highest rate of an active flow on each resource
    for f, path in enumerate(flows):
        if active[f] and path:
            x = float(rates[f])
            assert math.isfinite(x) and x >= 0.0, f"flow {f}: rate {x}"
            for r, a in path:
                load[r] += a * x
                top[r] = max(top[r], x)
    scale = max([float(c) for c in capacity] + [1e-300])
    for r in range(n_res):
        c = float(capacity[r])
        assert load[r] <= c * (1.0 + rtol) + 1e-15 * scale, (
            f"resource {r}: load {load[r]} > capacity {c}")
    for f, path in enumerate(flows):
        if not (active[f] and path):
            continue
        x = float(rates[f])
        bottleneck = [r for r, _ in path
                      if load[r] >= float(capacity[r]) * (1.0 - rtol) - 1e-15 * scale
                      and top[r] <= x * (1.0 + rtol)]
        assert bottleneck, f"flow {f} (rate {x}) has no bottleneck resource"


def completion_persistent(flows, capacity, flow_bytes, persistent, n_plain=None, w_t=math.inf,
                          eps=0.0):
    """:func:`completion` with steady flows that never finish.

    ``persistent``: list of bools. Persistent flows share every solve; only
    the others finish; the run ends when the last of them has (after the
    ``t = 0`` solve when there is none). Returns ``(rate0, finish, moved,
    status)``; ``moved[f]`` = bytes persistent flow ``f`` moved until the run
    ended (the sum of rate · interval over the events), 0 for the others.
    Written on its own (not by calling :func:`completion`) so that the
    kernel's persistent path has an independent check.
    """
    n_res = len(capacity)
    if n_plain is None:
        n_plain = n_res
    n_ingress = n_res - n_plain
    w_ts = list(w_t) if isinstance(w_t, (list, tuple)) else [w_t] * n_ingress
    epss = list(eps) if isinstance(eps, (list, tuple)) else [eps] * n_ingress
    n = len(flows)
    rate0 = [0.0] * n
    finish = [math.inf] * n
    moved = [0.0] * n
    remaining = [float(b) for b in flow_bytes]
    active = [bool(path) for path in flows]
    for f in range(n):
        if not flows[f]:
            rate0[f] = math.inf
            finish[f] = 0.0
    t = 0.0
    first = True
    while any(active):
        caps = [float(c) for c in capacity]
        fan_in = [0] * n_res
        for f in range(n):
            if active[f]:
                for r, _ in flows[f]:
                    fan_in[r] += 1
        for r in range(n_plain, n_res):
            w, e = w_ts[r - n_plain], epss[r - n_plain]
            if e > 0.0 and math.isfinite(w):
                caps[r] = incast_capacity(capacity[r], fan_in[r], w, e)
        rates = progressive_filling(flows, caps, active)
        if first:
            first = False
            rate0 = [rates[f] if active[f] else rate0[f] for f in range(n)]
        end = {}
        for f in range(n):
            if active[f] and not persistent[f]:
                if remaining[f] <= 0.0:
                    end[f] = t
                elif rates[f] > 0.0:
                    end[f] = t + remaining[f] / rates[f]
                else:
                    return rate0, finish, moved, STALLED
        if not end:
            break
        t_next = min(end.values())
        dt = t_next - t
        for f in range(n):
            if active[f] and persistent[f]:
                moved[f] += rates[f] * dt
        for f, tf in end.items():
            if tf <= t_next * (1.0 + TIE):
                finish[f] = t_next
                active[f] = False
            else:
                remaining[f] = max(remaining[f] - rates[f] * dt, 0.0)
        t = t_next
    return rate0, finish, moved, OK


def dataflow(flows, capacity, flow_bytes, flow_lat, flow_src_stage, flow_dst_stage,
             stage_flows, stage_delay, stage_next, stage_release, persistent=None,
             n_plain=None, w_t=math.inf, eps=0.0):
    """Dataflow completion (the rules of :mod:`flowemu.kernels.dataflow`),
    re-solving every flow in the solve from scratch at every time.

    ``stage_flows``: per stage the list of flows it starts. A stage ends
    ``stage_delay`` after its start and the delivery (fluid end +
    ``flow_lat``) of every flow whose ``flow_src_stage`` or
    ``flow_dst_stage`` it is; then the rank's next stage (``stage_next``,
    -1: none) starts; a first stage starts at its ``stage_release`` (``>= 0``;
    -1 for the others). Returns ``(start, finish, end, moved, status)``.
    """
    n, n_stages = len(flows), len(stage_delay)
    n_res = len(capacity)
    n_plain = n_res if n_plain is None else n_plain
    n_ingress = n_res - n_plain
    w_ts = list(w_t) if isinstance(w_t, (list, tuple)) else [w_t] * n_ingress
    epss = list(eps) if isinstance(eps, (list, tuple)) else [eps] * n_ingress
    persistent = persistent or [False] * n
    pending = [1] * n_stages
    for f in range(n):
        for s in (flow_src_stage[f], flow_dst_stage[f]):
            if s >= 0:
                pending[s] += 1
    start, finish = [math.inf] * n, [math.inf] * n
    end, moved = [math.inf] * n_stages, [0.0] * n
    remaining = [float(b) for b in flow_bytes]
    active = [False] * n
    timers = []   # (time, kind, id): 0 delivery of a flow, 1 end of a stage, 2 a release

    def count_down(s, t):
        pending[s] -= 1
        if pending[s] == 0:
            timers.append((t + stage_delay[s], 1, s))

    def start_stage(s, t):
        for f in stage_flows[s]:
            start[f] = t
            if flows[f]:
                active[f] = True
            else:
                finish[f] = t
                timers.append((t + flow_lat[f], 0, f))
        count_down(s, t)

    for f in range(n):
        if persistent[f]:
            start[f] = 0.0
            active[f] = True
    for s in range(n_stages):
        if stage_release[s] == 0.0:
            start_stage(s, 0.0)
        elif stage_release[s] > 0.0:
            timers.append((stage_release[s], 2, s))
    t = 0.0
    ended = 0
    while True:
        while any(tt <= t for tt, _, _ in timers):
            item = min(timers)
            timers.remove(item)
            _, kind, i = item
            if kind == 0:
                for s in (flow_src_stage[i], flow_dst_stage[i]):
                    if s >= 0:
                        count_down(s, t)
            elif kind == 2:
                start_stage(i, t)
            else:
                end[i] = t
                ended += 1
                if stage_next[i] >= 0:
                    start_stage(stage_next[i], t)
        caps = [float(c) for c in capacity]
        fan_in = [0] * n_res
        for f in range(n):
            if active[f]:
                for r, _ in flows[f]:
                    fan_in[r] += 1
        for r in range(n_plain, n_res):
            w, e = w_ts[r - n_plain], epss[r - n_plain]
            if e > 0.0 and math.isfinite(w):
                caps[r] = incast_capacity(capacity[r], fan_in[r], w, e)
        rates = progressive_filling(flows, caps, active)
        if ended == n_stages:
            break
        due = {}
        for f in range(n):
            if active[f] and not persistent[f]:
                if remaining[f] <= 0.0:
                    due[f] = t
                elif rates[f] > 0.0:
                    due[f] = t + remaining[f] / rates[f]
        t_next = min(list(due.values()) + [tt for tt, _, _ in timers], default=math.inf)
        if t_next == math.inf:
            return start, finish, end, moved, STALLED
        dt = t_next - t
        for f in range(n):
            if active[f]:
                if persistent[f]:
                    moved[f] += rates[f] * dt
                elif f in due and due[f] <= t_next * (1.0 + TIE):
                    finish[f] = t_next
                    active[f] = False
                    timers.append((t_next + flow_lat[f], 0, f))
                else:
                    remaining[f] = max(remaining[f] - rates[f] * dt, 0.0)
        t = t_next
    return start, finish, end, moved, OK


def stream_links(link_src, link_dst, members, top, kind="allreduce", root=None):
    """The links an in-network aggregation stream occupies, found from the
    link lists alone (independently of flowemu's aggregation trees): every
    member's shortest directed path up to ``top`` (breadth-first; the test
    picks a ``top`` each member reaches by one shortest path) and the
    reversed paths down. ``kind``: ``"allreduce"`` (every path up and
    down), ``"reduce"`` (every path up, ``root``'s down), ``"broadcast"``
    (``root``'s up, every path down). Returns a sorted list of link ids."""
    out = {}
    for lk, (a, b) in enumerate(zip(link_src, link_dst)):
        out.setdefault(int(a), []).append((int(b), lk))
    pair = {(int(a), int(b)): lk for lk, (a, b) in enumerate(zip(link_src, link_dst))}

    def path_up(m):
        prev, frontier = {int(m): None}, [int(m)]
        while top not in prev and frontier:
            nxt = []
            for u in frontier:
                for v, lk in out.get(u, []):
                    if v not in prev:
                        prev[v] = (u, lk)
                        nxt.append(v)
            frontier = nxt
        ups, downs, v = [], [], top
        while prev[v] is not None:
            u, lk = prev[v]
            ups.append(lk)
            downs.append(pair[(v, u)])
            v = u
        return ups, downs

    links = set()
    for m in members:
        ups, downs = path_up(m)
        if kind == "allreduce" or kind == "reduce" or int(m) == root:
            links.update(ups)
        if kind == "allreduce" or kind == "broadcast" or int(m) == root:
            links.update(downs)
    return sorted(links)
