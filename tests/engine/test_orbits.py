"""A step solved on one flow per orbit of its translation symmetry
(``Torus.orbits``, ``Torus.orbit_problem``, ``flowemu.kernels.symmetry``;
issue 25, item 4).

The reduction is exact when the flows are mapped onto themselves; these
tests hold it to the full problem (the engine's solver on every flow's real
routes, itself held to the pure-Python oracle in ``tests/kernels``) and to
the oracle directly, on random invariant patterns, and check that it is
refused wherever the symmetry does not hold.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowemu.algorithms import recdoub, swing
from flowemu.core.network import Network
from flowemu.engine.profiles import make_context, profile
from flowemu.engine.steps import solve_step
from flowemu.kernels.symmetry import _block_layout, _divisors, translation_period
from flowemu.topology import parse_topology
from flowemu.topology.torus import Torus
from flowemu.whatif.faults import apply_faults
from tests.helpers.maxmin_oracle import completion, csr_to_lists

RTOL = 1e-12


def _period(topo, src, dst, share):
    period = np.empty(topo.ndim, dtype=np.int64)
    translation_period(np.asarray(src, np.int64), np.asarray(dst, np.int64),
                       np.asarray(share, np.float64).view(np.uint64), topo._coords,
                       np.asarray(topo.dims, np.int64), topo.strides, period)
    return period.tolist()


def _translate(topo, nodes, shift):
    c = topo.coords(nodes) + np.asarray(shift)
    return topo.node_of(c % np.asarray(topo.dims))


def _invariant_pattern(topo, period, per_cell, rng):
    """Flows of ``per_cell`` random offsets and shares from every node of the
    cell ``coords < period``, repeated at every translation by multiples of
    ``period``, listed translation by translation."""
    dims = np.asarray(topo.dims)
    period = np.asarray(period)
    cell = topo.node_of(np.indices(period).reshape(len(period), -1).T)
    src0 = np.repeat(cell, per_cell)
    off = rng.integers(0, dims, size=(len(src0), len(dims)))
    dst0 = topo.node_of((topo.coords(src0) + off) % dims)
    share0 = rng.choice([0.25, 0.5, 1.0, 3.0], len(src0))
    shifts = np.indices(dims // period).reshape(len(dims), -1).T * period
    src = np.concatenate([_translate(topo, src0, t) for t in shifts])
    dst = np.concatenate([_translate(topo, dst0, t) for t in shifts])
    return src, dst, np.tile(share0, len(shifts))


def test_divisors_in_order():
    for d in [1, 2, 12, 16, 97, 360, 1 << 14, 2 * 3 * 5 * 7 * 11 * 13]:
        assert _divisors(d).tolist() == [q for q in range(1, d + 1) if d % q == 0]


def test_period_of_shift_and_parity_patterns():
    topo = parse_topology("torus:4x6")
    src = np.arange(topo.num_nodes)
    c = topo.coords(src)
    shift = topo.node_of((c + [1, 0]) % [4, 6])
    assert _period(topo, src, shift, np.ones(24)) == [1, 1]
    # even rows send one up, odd rows one down (Swing's first step in dim 0)
    step = np.where(c[:, 0] % 2 == 0, 1, -1)
    parity = topo.node_of((c + np.stack([step, 0 * step], 1)) % [4, 6])
    assert _period(topo, src, parity, np.ones(24)) == [2, 1]
    # bytes that differ by column keep dim 1 whole
    share = 1.0 + c[:, 1]
    assert _period(topo, src, parity, share) == [2, 6]
    # listing order does not matter when each node sends one flow
    perm = np.random.default_rng(0).permutation(24)
    assert _period(topo, src[perm], parity[perm], share[perm]) == [2, 6]


def test_period_of_random_permutation_is_the_whole_torus():
    topo = parse_topology("torus:8x8")
    dst = np.random.default_rng(1).permutation(64)
    assert _period(topo, np.arange(64), dst, np.ones(64)) == [8, 8]


def test_one_changed_flow_breaks_the_symmetry():
    topo = parse_topology("torus:6x4")
    src, dst, share = _invariant_pattern(topo, [2, 2], 2, np.random.default_rng(3))
    assert _period(topo, src, dst, share) in ([2, 2], [1, 2], [2, 1], [1, 1])
    share = share.copy()
    share[-1] *= 1.0 + 2.0**-52                       # one bit of one flow
    p = _period(topo, src, dst, share)
    assert np.prod(np.asarray(topo.dims) // np.asarray(p)) < 9   # not the full group


def _oracle_period(topo, src, dst, share):
    """The smallest invariant step of each dimension by the definition, in
    plain Python: every sender's flows, in order, equal (receiver offset and
    bytes, bit for bit) those of its translate."""
    dims = list(topo.dims)
    c = topo.coords(np.arange(topo.num_nodes)).tolist()
    lists = {s: [] for s in range(topo.num_nodes)}
    for s, d, b in zip(np.asarray(src).tolist(), np.asarray(dst).tolist(),
                       np.asarray(share, np.float64).view(np.uint64).tolist(), strict=True):
        lists[s].append((tuple((c[d][i] - c[s][i]) % dims[i] for i in range(len(dims))), b))
    out = []
    for i, d in enumerate(dims):
        step_of = d
        for step in range(1, d):
            if d % step:
                continue
            moved = [list(x) for x in c]
            for x in moved:
                x[i] = (x[i] + step) % d
            if all(lists[s] == lists[int(topo.node_of(np.asarray(moved[s])))]
                   for s in range(topo.num_nodes)):
                step_of = step
                break
        out.append(step_of)
    return out


def _block_order(topo, axes, down):
    """Every node once, in the row-major order of the dimensions ``axes``
    (slowest first), dimension ``i`` counted down from 0 where ``down[i]``."""
    dims = np.asarray(topo.dims)
    digits = np.indices(dims[axes]).reshape(len(axes), -1)
    coords = np.empty_like(digits)
    for j, i in enumerate(axes):
        coords[i] = (-digits[j]) % dims[i] if down[i] else digits[j]
    return topo.node_of(coords.T)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1),
       dims=st.lists(st.sampled_from([2, 3, 4, 6, 8]), min_size=1, max_size=3),
       blocks=st.integers(1, 3), change=st.sampled_from(["none", "dst", "bytes", "order"]))
def test_period_of_block_layouts_matches_the_definition(seed, dims, blocks, change):
    """Steps listed in blocks (every sender once a block, in a rotated and
    mirrored row-major order, as Swing's ports list them) take the fast
    comparison; it agrees with the definition, symmetric or not, and a
    changed flow or a block out of order is seen."""
    topo = Torus(dims)
    rng = np.random.default_rng(seed)
    dims_a = np.asarray(dims)
    period = np.array([rng.choice([q for q in range(1, d + 1) if d % q == 0]) for d in dims])
    src, dst, share = [], [], []
    for _ in range(blocks):
        order = _block_order(topo, rng.permutation(len(dims)), rng.random(len(dims)) < 0.5)
        cell = topo.coords(order) % period                 # what a sender sends depends on
        key = (cell * np.cumprod([1, *period[:-1]])).sum(axis=1)   # its place in the cell
        n_cells = int(np.prod(period))
        off = rng.integers(0, dims_a, size=(n_cells, len(dims)))[key]
        src.append(order)
        dst.append(topo.node_of((topo.coords(order) + off) % dims_a))
        share.append(rng.choice([0.5, 1.0, 3.0], n_cells)[key] if rng.random() < 0.5
                     else np.ones(len(order)))
    src, dst, share = (np.concatenate(x) for x in (src, dst, share))
    f = int(rng.integers(len(src)))
    if change == "dst":
        dst[f] = rng.integers(topo.num_nodes)
    elif change == "bytes":
        share[f] = np.nextafter(share[f], 10.0)
    elif change == "order" and len(src) > 2:
        g = (f + 1) % len(src)
        src[[f, g]], dst[[f, g]], share[[f, g]] = src[[g, f]], dst[[g, f]], share[[g, f]]
    if change != "order":   # the fast comparison is the one tested
        k = np.empty((blocks, len(dims)), np.int64)
        assert _block_layout(src.astype(np.int64), topo.num_nodes, dims_a.astype(np.int64),
                             topo.strides, k, np.empty(k.shape, np.bool_))
    assert _period(topo, src, dst, share) == _oracle_period(topo, src, dst, share)
    if change == "none":
        assert (np.asarray(_period(topo, src, dst, share)) <= period).all()


def _full_finish(topo, src, dst, share, ecmp, net):
    ctx = make_context(topo, net, ecmp)
    routes = topo.route(src, dst, ecmp)
    return ctx, routes, solve_step(ctx, routes, dst, share, "full", src).finish


def _orbit_finish(ctx, topo, src, dst, share, ecmp):
    orbits = topo.orbits(src, dst, share, ecmp, ctx.link_capacity)
    assert orbits is not None
    orbit = topo.orbit_problem(orbits, src, dst, ecmp, ctx.link_capacity)
    np.testing.assert_array_equal(orbit.flows, orbits.flows)
    assert orbits.entries == topo.route_entries(src[orbits.flows], dst[orbits.flows], ecmp)
    sol = solve_step(ctx, orbit.routes, orbit.dst, share[orbit.flows], "orbit",
                     src[orbit.flows], orbit.capacity)
    return orbits, orbit, sol.finish


@st.composite
def invariant_steps(draw):
    ndim = draw(st.integers(1, 3))
    dims = [draw(st.sampled_from([2, 3, 4, 6])) for _ in range(ndim)]
    if math.prod(dims) > 96:
        dims = dims[:2]
    period = [draw(st.sampled_from([q for q in range(1, d + 1) if d % q == 0])) for d in dims]
    per_cell = draw(st.integers(1, 3))
    ecmp = draw(st.sampled_from(["split", "dor"]))
    incast = draw(st.booleans())
    seed = draw(st.integers(0, 10_000))
    return dims, period, per_cell, ecmp, incast, seed


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(invariant_steps())
def test_orbit_problem_matches_the_full_problem(case):
    dims, period, per_cell, ecmp, incast, seed = case
    topo = parse_topology("torus:" + "x".join(map(str, dims)))
    rng = np.random.default_rng(seed)
    src, dst, share = _invariant_pattern(topo, period, per_cell, rng)
    net = Network.from_si(bandwidth="100Gb/s", incast_threshold=2 if incast else math.inf,
                  incast_slope="40ps" if incast else 0.0)
    ctx, routes, full = _full_finish(topo, src, dst, share, ecmp, net)
    if math.prod(np.asarray(dims) // np.asarray(_period(topo, src, dst, share))) == 1:
        assert topo.orbits(src, dst, share, ecmp, ctx.link_capacity) is None
        return
    orbits, orbit, reduced = _orbit_finish(ctx, topo, src, dst, share, ecmp)
    assert len(orbit.flows) * orbits.group_size == len(src)
    assert np.all(orbit.routes.frac <= 1.0)
    np.testing.assert_array_equal(orbit.routes.hops, routes.hops[orbit.flows])
    # every flow finishes when its orbit's representative does
    rep_of = {}
    for k, f in enumerate(orbit.flows):
        rep_of[(int(src[f]), int(dst[f]), float(share[f]))] = k
    g = np.asarray(topo.dims) // np.asarray(_period(topo, src, dst, share))
    assert orbits.group_size == int(np.prod(g))
    p = np.asarray(topo.dims) // g
    for f in range(len(src)):
        back = -(topo.coords(src[f]) // p) * p            # the translation to the cell
        key = (int(_translate(topo, src[f], back)), int(_translate(topo, dst[f], back)),
               float(share[f]))
        np.testing.assert_allclose(reduced[rep_of[key]], full[f], rtol=RTOL, atol=0)
    if not incast:   # and the oracle on the full problem agrees
        paths = csr_to_lists(routes.flow_ptr, routes.link, routes.frac)
        _, oracle, status = completion(paths, [float(c) for c in ctx.link_capacity],
                                       list(share))
        assert status == 0
        np.testing.assert_allclose(full, oracle, rtol=RTOL, atol=0)


@pytest.mark.parametrize("spec", ["torus:8x8", "torus:4x4x4", "torus:16x4", "torus:2x8"])
@pytest.mark.parametrize("algorithm", ["swing", "recdoub"])
@pytest.mark.parametrize("ecmp", ["split", "dor"])
def test_profiles_solved_on_orbits_equal_the_full_solve(spec, algorithm, ecmp, monkeypatch):
    """``congestion=True`` takes the full path (it reports per-link loads);
    both give the same times for every size."""
    reduced = []
    real = Torus.orbits

    def spy(self, *args):
        got = real(self, *args)
        reduced.append(got is not None)
        return got

    monkeypatch.setattr(Torus, "orbits", spy)
    topo = parse_topology(spec)
    p = topo.num_endpoints
    sched = swing.build(p, topo, False, variant="bandwidth") if algorithm == "swing" \
        else recdoub.build(p, topo, False, variant="bandwidth")
    sizes = [1.0, 1e3, 1e6, 1e9]
    for net in (Network(), Network(incast_threshold=2, incast_slope="30ps")):
        fast = profile(sched, topo, net, ecmp=ecmp, threads=1).times(sizes)
        full = profile(sched, topo, net, ecmp=ecmp, threads=1, congestion=True).times(sizes)
        np.testing.assert_allclose(fast, full, rtol=RTOL, atol=0)
    assert any(reduced)   # the orbit path was taken


def test_swing_steps_reduce_by_parity():
    topo = parse_topology("torus:16x16")
    sched = swing.build(256, topo, False, variant="bandwidth")
    cap = topo.link_capacity(Network())
    for step in sched.steps.patterns:
        t = step.traffic
        orbits = topo.orbits(t.src, t.dst, t.share, "split", cap)
        assert orbits is not None and orbits.group_size >= 64, step.label
        assert len(orbits.flows) == t.num_flows // orbits.group_size


def test_no_reduction_where_the_symmetry_breaks():
    topo = parse_topology("torus:8x8")
    sched = swing.build(64, topo, False, variant="bandwidth")
    t = sched.steps[0].traffic
    cap = topo.link_capacity(Network())
    assert topo.orbits(t.src, t.dst, t.share, "split", cap) is not None
    assert topo.orbits(t.src, t.dst, t.share, "hash", cap) is None   # hashed paths
    slow = cap.copy()
    slow[5] *= 0.5                                                   # one slow link
    assert topo.orbits(t.src, t.dst, t.share, "split", slow) is None
    mesh = parse_topology("mesh:8x8")
    assert mesh.orbits(t.src, t.dst, t.share, "split", mesh.link_capacity(Network())) is None
    faulty = apply_faults(topo, "random:2:7", None)
    assert faulty.orbits(t.src, t.dst, t.share, "split", faulty.link_capacity(Network())) \
        is None


def test_orbits_refuse_ids_outside_the_torus():
    from flowemu.core.errors import RoutingError

    topo = parse_topology("torus:4x4")
    cap = topo.link_capacity(Network())
    src = np.arange(16)
    with pytest.raises(RoutingError, match=r"flow 3 \(3 -> 16\)"):
        topo.orbits(src, np.where(src == 3, 16, (src + 1) % 16), np.ones(16), "split", cap)
    with pytest.raises(RoutingError, match="flow 0"):
        topo.orbits(src - 1, (src + 1) % 16, np.ones(16), "split", cap)
    # not a step the engine would hand over (lengths, dtypes): no reduction
    assert topo.orbits(src, src[:-1], np.ones(16), "split", cap) is None
    assert topo.orbits(src, (src + 1) % 16, np.ones(16, np.float32), "split", cap) is None
