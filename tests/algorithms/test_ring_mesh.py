"""Ring allreduce on a mesh (no wrap-around): a Hamiltonian cycle of the mesh
graph where one exists (D >= 2, an even side), otherwise an order whose
longest step is 2 hops, said in ``Schedule.note``; ports=4 is refused. Times
are checked against closed forms computed from the network parameters."""

from __future__ import annotations

import itertools
import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flowemu
from flowemu.algorithms import get_algorithm, ring
from flowemu.algorithms.hamiltonian import (
    mesh_cycle,
    mesh_has_cycle,
    mesh_odd_path,
    mesh_ring,
    path_zigzag,
)
from flowemu.algorithms.verify import equivalent_traffic, verify_allreduce
from flowemu.cli.app import main
from flowemu.core.errors import ConfigError
from flowemu.topology.torus import Torus


def mesh(*dims):
    return Torus(tuple(dims), wrap=False)


def shape_id(dims):
    return "x".join(map(str, dims))


def step_hops(dims, order):
    """Mesh distance (no wrap-around) of every step of the closed ring
    ``order[k] → order[k+1]``, and how many coordinates each step changes."""
    a = np.array(np.unravel_index(order, dims))
    b = np.roll(a, -1, axis=1)
    return np.abs(b - a).sum(axis=0), (b != a).sum(axis=0)


def assert_permutation(dims, order):
    p = math.prod(dims)
    assert order.shape == (p,)
    np.testing.assert_array_equal(np.sort(order), np.arange(p))


def assert_mesh_hamiltonian_cycle(dims, cycle):
    """Every node once; consecutive nodes and last→first at mesh distance 1."""
    assert_permutation(dims, cycle)
    hops, _ = step_hops(dims, cycle)
    np.testing.assert_array_equal(hops, 1)


def link_usage(topo, traffic):
    """Flows per link direction (ecmp=split) of one step."""
    routes = topo.route(traffic.src, traffic.dst, ecmp="split")
    return np.bincount(routes.link, minlength=topo.num_links)


def has_even_side(dims):
    return any(d % 2 == 0 for d in dims)


# ------------------------------------------------------------------ the orders

def test_mesh_cycle_every_2d_shape_up_to_12():
    for dims in itertools.product(range(2, 13), repeat=2):
        if has_even_side(dims):
            cycle = mesh_cycle(dims)
            assert cycle[0] == 0
            assert_mesh_hamiltonian_cycle(dims, cycle)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(2, 7), min_size=2, max_size=4).filter(has_even_side))
def test_mesh_cycle_is_hamiltonian(dims):
    dims = tuple(dims)
    assert mesh_has_cycle(dims) == (True, "")
    assert_mesh_hamiltonian_cycle(dims, mesh_cycle(dims))


def test_mesh_cycle_is_the_comb_in_2d():
    """4x4: along row 0, snake rows 1-3 over columns 3..1, up column 0."""
    np.testing.assert_array_equal(mesh_cycle((4, 4)),
                                  [0, 1, 2, 3, 7, 6, 5, 9, 10, 11, 15, 14, 13, 12, 8, 4])
    # odd rows, even columns: the even side becomes the comb's rows
    assert_mesh_hamiltonian_cycle((3, 4), mesh_cycle((3, 4)))
    np.testing.assert_array_equal(mesh_cycle((2,)), [0, 1])


@pytest.mark.parametrize("dims,why", [((5, 5), "25 nodes, odd"), ((3, 3, 3), "27 nodes, odd"),
                                      ((7,), "a path of 7 nodes"), ((8,), "a path of 8 nodes")],
                         ids=lambda x: shape_id(x) if isinstance(x, tuple) else "")
def test_no_mesh_cycle(dims, why):
    ok, text = mesh_has_cycle(dims)
    assert not ok and why in text
    with pytest.raises(ConfigError, match="no Hamiltonian cycle"):
        mesh_cycle(dims)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([3, 5, 7, 9, 11]), min_size=2, max_size=3)
       .filter(lambda d: math.prod(d) <= 1500))
def test_mesh_odd_path(dims):
    """Odd node count: every step is a neighbour exchange but the closing
    one, which crosses 2 hops (the bipartite lower bound); outside 3x3 it
    runs straight along one axis through a node the path crosses sideways."""
    dims = tuple(dims)
    order = mesh_odd_path(dims)
    assert_permutation(dims, order)
    hops, moved = step_hops(dims, order)
    np.testing.assert_array_equal(hops[:-1], 1)
    assert hops[-1] == 2
    if dims != (3, 3):
        assert moved[-1] == 1
        a = np.array(np.unravel_index(order, dims))
        middle = (a[:, -1] + a[:, 0]) // 2
        pos = int(np.flatnonzero((a == middle[:, None]).all(axis=0))[0])
        # the middle node's two ring neighbours are not the closing step's ends
        assert {int(order[pos - 1]), int(order[pos + 1])}.isdisjoint({int(order[0]),
                                                                      int(order[-1])})


@pytest.mark.parametrize("n", range(2, 26))
def test_path_zigzag(n):
    order = path_zigzag(n)
    assert_permutation((n,), order)
    hops = np.abs(np.roll(order, -1) - order)
    assert hops.max() == min(2, n - 1) and (hops == 2).sum() == max(n - 2, 0)
    # every link direction (i → i+1 and i+1 → i) is crossed by exactly one step
    nxt = np.roll(order, -1)
    up = np.zeros(n - 1, int)
    down = np.zeros(n - 1, int)
    for a, b in zip(order, nxt):
        if b > a:
            up[a:b] += 1
        else:
            down[b:a] += 1
    if n > 2:
        np.testing.assert_array_equal(up, 1)
        np.testing.assert_array_equal(down, 1)


def test_mesh_ring_kinds():
    assert mesh_ring((4, 6)).kind == "mesh-hamiltonian"
    assert mesh_ring((2,)).kind == "mesh-hamiltonian"
    assert mesh_ring((5, 5)).kind == "mesh-odd-path"
    assert mesh_ring((9,)).kind == "path-zigzag"


# ------------------------------------------------------------------ ring schedules

HAMILTONIAN = [(4, 4), (8, 8), (4, 6), (3, 4), (2, 2), (2, 5), (2, 3, 3), (3, 3, 4), (2,)]
ODD = [(5, 5), (3, 5), (7, 3), (3, 3, 3), (3, 3)]
PATHS = [(3,), (8,), (9,)]


@pytest.mark.parametrize("dims", HAMILTONIAN, ids=shape_id)
@pytest.mark.parametrize("ports", [1, 2, "max"])
def test_ring_on_mesh_hamiltonian(dims, ports):
    topo = mesh(*dims)
    p = topo.num_nodes
    sched = ring.build(p, topo, False, ports=ports)
    want_ports = 2 if ports == "max" else ports
    assert sched.info == {"p_eff": p, "ports": want_ports, "cycle": "mesh-hamiltonian"}
    assert sched.note == ""
    tr = sched.steps[0].traffic
    np.testing.assert_array_equal(topo.distance(tr.src, tr.dst), 1)
    # one flow per link direction; on 2 nodes both ring directions are the
    # same neighbour, so two ports share the one link each way
    assert link_usage(topo, tr).max() == (2 if p == 2 and want_ports == 2 else 1)
    resolved, cycle, rings = ring.ring_orders(p, topo, ports)
    assert (resolved, cycle, len(rings)) == (want_ports, "mesh-hamiltonian", want_ports)
    assert_mesh_hamiltonian_cycle(dims, rings[0][0])


@pytest.mark.parametrize("dims", ODD + PATHS, ids=shape_id)
def test_ring_on_mesh_without_cycle_loads_each_link_once(dims):
    topo = mesh(*dims)
    p = topo.num_nodes
    sched = ring.build(p, topo, False)
    assert sched.info["ports"] == 2
    assert sched.info["cycle"] == ("path-zigzag" if len(dims) == 1 else "mesh-odd-path")
    hops = topo.distance(sched.steps[0].traffic.src, sched.steps[0].traffic.dst)
    assert hops.max() == 2
    one = ring.build(p, topo, False, ports=1).steps[0].traffic
    assert link_usage(topo, one).max() == 1
    if len(dims) > 1 and dims != (3, 3):
        # the backward ring's 2-hop step avoids the forward ring's links too
        assert link_usage(topo, sched.steps[0].traffic).max() == 1


@pytest.mark.parametrize("dims,ports", [((4, 6), 1), ((4, 6), 2), ((3, 4), 2), ((2, 2), 1),
                                        ((2, 3, 2), 2), ((5, 5), 1), ((3, 5), 2), ((3, 3), 2),
                                        ((3, 3, 3), 2), ((2,), 2), ((7,), 1), ((8,), 2)],
                         ids=lambda x: shape_id(x) if isinstance(x, tuple) else str(x))
def test_ring_on_mesh_is_allreduce(dims, ports):
    topo = mesh(*dims)
    spec = get_algorithm("ring")
    with_blocks = spec.build(topo.num_nodes, topo, True, ports=ports)
    verify_allreduce(with_blocks)
    without = spec.build(topo.num_nodes, topo, False, ports=ports)
    assert without.info == with_blocks.info and without.note == with_blocks.note
    equivalent_traffic(with_blocks, without)


def test_ring_ranks_not_nodes_of_mesh_keeps_rank_order():
    topo = mesh(4, 4)
    sched = ring.build(12, topo, False, ports=1)
    assert sched.info["cycle"] == "logical"
    np.testing.assert_array_equal(sched.steps[0].traffic.dst, (np.arange(12) + 1) % 12)
    assert "12 ranks are not the 16 nodes of mesh:4x4" in sched.note


# ------------------------------------------------------------------ notes

def test_note_odd_mesh_names_the_two_hop_step():
    topo = mesh(5, 5)
    sched = ring.build(25, topo, False, ports=1)
    tr = sched.steps[0].traffic
    hops = topo.distance(tr.src, tr.dst)
    (far,) = np.flatnonzero(hops > 1)
    assert sched.note.startswith("mesh:5x5 has no Hamiltonian cycle (25 nodes, odd): ")
    assert (f"closing step, node {tr.src[far]} → node {tr.dst[far]}, crosses 2 hops"
            in sched.note)


def test_note_path():
    sched = ring.build(8, mesh(8), False)
    assert sched.note.startswith("mesh:8 is a path, which has no Hamiltonian cycle")
    assert "0→2→4→6→7→5→3→1→0" in sched.note and "6 of its 8 steps cross 2 hops" in sched.note
    long = ring.build(25, mesh(25), False).note
    assert "0→2→…→24→23→…→1→0" in long and "23 of its 25 steps cross 2 hops" in long


def test_note_in_result_rows_and_cli(capsys):
    df = flowemu.simulate("mesh:3x5", "ring", "1MiB")
    assert df.note.iloc[0].startswith("mesh:3x5 has no Hamiltonian cycle (15 nodes, odd)")
    assert flowemu.simulate("mesh:4x4", "ring", "1MiB").note.iloc[0] == ""
    assert main(["run", "-t", "mesh:5", "-a", "ring", "-s", "1KiB"]) == 0
    err = capsys.readouterr().err
    assert "flowemu: note: mesh:5 is a path" in err and "0→2→4→3→1→0" in err


# ------------------------------------------------------------------ ports=4

@pytest.mark.parametrize("spec,words", [("mesh:4x4", "only 2 links"),
                                        ("mesh:3x3x3", "only 3 links"),
                                        ("mesh:6", "is a path"),
                                        ("mesh:2x2x2x2", "2-D tori")])
def test_ports4_on_mesh_is_an_error(spec, words, capsys):
    with pytest.raises(ConfigError, match=f"ports=4 on {spec}.*{words}"):
        flowemu.simulate(spec, "ring:ports=4", "1MiB")
    code = main(["run", "-t", spec, "-a", "ring:ports=4", "-s", "1MiB"])
    err = capsys.readouterr().err
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err
    assert lines[0].startswith("flowemu: error: algorithm ring: ports=4 on " + spec)
    assert words in lines[0] and "use ports=1, 2 or max" in lines[0]


def test_ports4_on_mesh_subprocess():
    proc = subprocess.run([sys.executable, "-m", "flowemu", "run", "-t", "mesh:4x6", "-a",
                           "ring:ports=4", "-s", "1MiB"], capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "ports=4 on mesh:4x6" in proc.stderr and "corner" in proc.stderr


# ------------------------------------------------------------------ closed forms

NET = {"bandwidth": "100Gb/s", "link_latency": "70ns", "hop_latency": "230ns",
       "alpha": "1.5us"}
B = 100e9 / 8
LAT = 70e-9 + 230e-9
ALPHA = 1.5e-6
SIZES = [2.0**10, 2.0**20, 3 * 2.0**26]


def simulated(spec, algorithm):
    df = flowemu.simulate(spec, algorithm, SIZES, **NET)
    assert list(df.size_bytes) == SIZES
    return df.time_s.to_numpy()


def closed(p, hops, ports, rate=B):
    """2(p−1) steps whose slowest flow crosses ``hops`` links and moves
    n/(p·ports) bytes at ``rate``."""
    n = np.array(SIZES)
    return 2 * (p - 1) * (ALPHA + hops * LAT + n / (p * ports) / rate)


def test_closed_form_mesh_hamiltonian():
    """4x6 mesh, Hamiltonian cycle: every step a neighbour exchange, one flow
    per link direction: 2(p−1)(α + lat + (n/(p·ports))/B)."""
    for ports in (1, 2):
        np.testing.assert_allclose(simulated("mesh:4x6", f"ring:ports={ports}"),
                                   closed(24, 1, ports), rtol=1e-9, atol=0)


def test_closed_form_mesh_odd():
    """5x5 and 3x3x3: the closing step crosses 2 hops on a route of its own
    (one route, straight), so it is the slowest flow of every step."""
    for spec, p in (("mesh:5x5", 25), ("mesh:3x3x3", 27)):
        for ports in (1, 2):
            np.testing.assert_allclose(simulated(spec, f"ring:ports={ports}"),
                                       closed(p, 2, ports), rtol=1e-9, atol=0)


def test_closed_form_mesh_3x3_one_port():
    """3x3: the 2-hop step joins the centre and a corner over two routes
    split evenly (each link carries half of it: rate 2B), links no other
    step uses; the neighbour steps run at B."""
    want = np.maximum(closed(9, 1, 1), closed(9, 2, 1, rate=2 * B))
    np.testing.assert_allclose(simulated("mesh:3x3", "ring:ports=1"), want, rtol=1e-9, atol=0)


def test_closed_form_path():
    """mesh:8: 2-hop steps; one port loads each link direction once; two
    ports load each twice with half-size flows (rate B/2), the same time."""
    np.testing.assert_allclose(simulated("mesh:8", "ring:ports=1"), closed(8, 2, 1),
                               rtol=1e-9, atol=0)
    np.testing.assert_allclose(simulated("mesh:8", "ring:ports=2"), closed(8, 2, 2, rate=B / 2),
                               rtol=1e-9, atol=0)
