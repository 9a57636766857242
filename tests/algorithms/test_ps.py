"""Parameter-server allreduces (cps, hcps, reduce-broadcast; GenModel paper
§2.1, §3.3 Table 2, Fig. 5): proven allreduces for every p, block-free builds
identical to block builds, the group structure against an enumeration, and
the flow-level time on one switch against Table 2's closed forms.

Why the flow model gives Table 2's β coefficient on one switch (``tree:N``:
one switch, every host link at bandwidth B in each direction): every flow
crosses exactly its sender's uplink and its receiver's downlink, and the
switch itself is not a resource. In each step of cps/hcps every rank sends
and receives the same number ``F − 1`` of equal flows, so every host link
carries ``F − 1`` flows, all saturate at one max-min level ``B/(F − 1)``,
and the step's fluid time is the bytes one rank sends, ``(F − 1)·share·n``,
times β = 1/B; summed over the steps this is ``2(N − 1)/N·n·β``. Ring and
RHD pair every sender with one receiver (rate B). In reduce-broadcast the
root's downlink (reduce) or uplink (broadcast) carries ``N − 1`` flows of
``n``: ``(N − 1)·n·β`` per step. With α charged once per flow (every flow of
a step starts together) and zero link/hop latency a step takes α + its
fluid time + the slowest rank's reduction ((f + 1)δ + (f − 1)γ per byte).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import flowemu
from flowemu.algorithms import get_algorithm, ps
from flowemu.algorithms.verify import equivalent_traffic, verify_allreduce
from flowemu.core.errors import ConfigError
from flowemu.topology import parse_topology
from tests.helpers.cli import one_error_line, run

ALPHA, BETA, GAMMA, DELTA = 2e-6, 1e-10, 3e-11, 7e-11   # B = 10 GB/s
S = 3 << 20                                             # a vector of 3 MiB


def build(name, p, blocks=False, **opts):
    return get_algorithm(name).build(p, None, blocks, **opts)


def ordered_factorisations(p):
    """Every ordered factorisation of p into factors >= 2."""
    if p == 1:
        return [()]
    return [(d,) + rest for d in range(2, p + 1) if p % d == 0
            for rest in ordered_factorisations(p // d)]


def hcps_cases():
    cases = []
    for p in (4, 6, 8, 12, 16, 18, 24):
        cases += [(p, f) for f in ordered_factorisations(p)]
    return cases


# ------------------------------------------------------------------ correctness

@pytest.mark.parametrize("p", range(2, 25))
@pytest.mark.parametrize("name", ["cps", "hcps", "reduce-broadcast", "acps"])
def test_every_p_is_an_allreduce(name, p):
    sched = build(name, p, True)
    report = verify_allreduce(sched)
    assert report.num_steps == sched.num_steps
    equivalent_traffic(sched, build(name, p, False))


@pytest.mark.parametrize("p,factors", hcps_cases(), ids=lambda v: str(v))
def test_hcps_factorisations_are_allreduces(p, factors):
    text = "x".join(map(str, factors))
    sched = build("hcps", p, True, factors=text)
    report = verify_allreduce(sched)
    m = len(factors)
    assert sched.num_steps == 2 * m and sched.info["factors"] == factors
    assert sched.variant == f"factors={text}"
    # the verifier's own per-step work equals the closed forms (module docstring)
    assert report.delta_path == pytest.approx(ps.hcps_delta_coefficient(factors), rel=1e-12)
    assert report.gamma_path == pytest.approx((p - 1) / p, rel=1e-12)
    assert report.sent_path == pytest.approx(2 * (p - 1) / p, rel=1e-12)
    # every rank sends and receives the same: a balanced mesh in every step
    assert np.allclose(report.sent, 2 * (p - 1) / p) and np.allclose(report.received,
                                                                    2 * (p - 1) / p)
    equivalent_traffic(sched, build("hcps", p, False, factors=text))


@pytest.mark.parametrize("p,factors", [(12, (3, 4)), (24, (2, 3, 4)), (18, (3, 3, 2))])
def test_hcps_groups_are_orthogonal(p, factors):
    """Step i pairs exactly the ranks that differ only in mixed-radix digit i
    (digit 0 = consecutive ranks), enumerated here digit by digit."""
    sched = build("hcps", p, False, factors="x".join(map(str, factors)))

    def digits(r):
        out = []
        for f in factors:
            r, d = divmod(r, f)
            out.append(d)
        return out

    for i in range(len(factors)):
        want = {(a, b) for a, b in itertools.permutations(range(p), 2)
                if [k for k, (x, y) in enumerate(zip(digits(a), digits(b))) if x != y] == [i]}
        for step in (sched.steps[i], sched.steps[2 * len(factors) - 1 - i]):
            got = list(zip(step.traffic.src.tolist(), step.traffic.dst.tolist()))
            assert len(got) == len(set(got)) and set(got) == want
            assert np.all(step.traffic.share == 1 / math.prod(factors[:i + 1]))
    assert [s.label for s in sched.steps] == (
        [f"rs{i}" for i in range(len(factors))] + [f"ag{i}" for i in reversed(range(len(factors)))])


def test_cps_is_a_full_mesh_with_fan_in_p():
    p = 7
    sched = build("cps", p)
    pairs = set(itertools.permutations(range(p), 2))
    for step in sched.steps:
        assert set(zip(step.traffic.src.tolist(), step.traffic.dst.tolist())) == pairs
    red = sched.steps[0].reduction
    assert sorted(red.node.tolist()) == list(range(p)) and set(red.fanin.tolist()) == {p}
    assert sched.steps[1].reduction.node.size == 0


def test_factor_one_adds_no_step():
    """Groups of one rank (1 rank per switch) exchange nothing: 1x8 is cps."""
    one = build("hcps", 8, True, factors="1x8")
    verify_allreduce(one)
    equivalent_traffic(one, build("cps", 8, True))
    equivalent_traffic(build("hcps", 12, False, factors="4x1x3"),
                       build("hcps", 12, False, factors="4x3"))


@pytest.mark.parametrize("p,want", [(2, (2,)), (7, (7,)), (12, (4, 3)), (16, (4, 4)),
                                    (24, (6, 4)), (32, (8, 4)), (15, (5, 3))])
def test_auto_factors(p, want):
    assert ps.auto_factors(p) == want
    assert build("hcps", p).info["factors"] == want


# ------------------------------------------------------------------ Table 2 on one switch

def one_switch(alg, n, **net):
    params = {"bandwidth": 1 / BETA, "link_latency": 0, "hop_latency": 0, "alpha": ALPHA,
                  "gamma": GAMMA, "delta": DELTA}
    params.update(net)
    df = flowemu.simulate(f"tree:{n}", alg, sizes=[S], network=flowemu.Network.from_si(**params))
    return float(df.time_s.iloc[0])


def table2_cps(n, wt=math.inf, eps=0.0):
    return (2 * ALPHA + 2 * (n - 1) * S / n * BETA + (n - 1) * S / n * GAMMA
            + (n + 1) * S / n * DELTA + 2 * (n - 1) * S / n * max(n - wt, 0) * eps)


def table2_rb(n, wt=math.inf, eps=0.0):
    return (2 * ALPHA + 2 * (n - 1) * S * BETA + (n - 1) * S * GAMMA + (n + 1) * S * DELTA
            + 2 * (n - 1) * S * max(n - wt, 0) * eps)


def table2_hcps(factors):
    """Table 2's HCPS row without incast, the δ sum read verbatim
    (Σ_{i=1}^{m−1} Π_{j=1}^{i} f_j, f_0 the first step)."""
    n, m = math.prod(factors), len(factors)
    d = 2 * sum(math.prod(factors[1:i + 1]) for i in range(1, m)) + n + 1
    return (2 * m * ALPHA + 2 * (n - 1) * S / n * BETA + (n - 1) * S / n * GAMMA
            + d / n * S * DELTA)


def table2_ring(n):
    return (2 * (n - 1) * ALPHA + 2 * (n - 1) * S / n * BETA + (n - 1) * S / n * GAMMA
            + 3 * (n - 1) * S / n * DELTA)


def table2_rhd(n):
    chi = 0 if n & (n - 1) == 0 else 1
    return (2 * math.ceil(math.log2(n)) * ALPHA + 2 * (n - 1) * S / n * BETA
            + (n - 1) * S / n * GAMMA + 3 * (n - 1) * S / n * DELTA
            + chi * (2 * S * BETA + S * GAMMA + 3 * S * DELTA))


SIZES = [2, 3, 5, 8, 12, 16, 24]


@pytest.mark.parametrize("n", SIZES)
def test_table2_cps(n):
    assert one_switch("cps", n) == pytest.approx(table2_cps(n), rel=1e-9)


@pytest.mark.parametrize("n", SIZES)
def test_table2_reduce_broadcast(n):
    assert one_switch("reduce-broadcast", n) == pytest.approx(table2_rb(n), rel=1e-9)


@pytest.mark.parametrize("factors", [(2, 2), (4, 2), (2, 4), (3, 4), (4, 3), (6, 4), (8, 4),
                                     (5, 3), (3, 2)])
def test_table2_hcps_two_steps(factors):
    alg = f"hcps:factors={'x'.join(map(str, factors))}"
    assert one_switch(alg, math.prod(factors)) == pytest.approx(table2_hcps(factors), rel=1e-9)


@pytest.mark.parametrize("factors", [(2, 3, 2), (2, 2, 3), (3, 2, 2), (2, 2, 2, 2), (4, 3, 2)])
def test_hcps_three_or_more_steps(factors):
    """m >= 3: the schedule's δ is Σ_i (F_i + 1)/P(i) (module docstring),
    which is Table 2's expression with its products over the last fan-ins,
    i.e. Table 2 verbatim on the reversed list of later factors."""
    n = math.prod(factors)
    alg = f"hcps:factors={'x'.join(map(str, factors))}"
    per_step = sum((f + 1) / math.prod(factors[:i + 1]) for i, f in enumerate(factors))
    reread = (factors[0],) + tuple(reversed(factors[1:]))
    want = table2_hcps(reread)
    assert one_switch(alg, n) == pytest.approx(want, rel=1e-9)
    assert ps.hcps_delta_coefficient(factors) == pytest.approx(per_step, rel=1e-12)
    if len(set(factors[1:])) > 1:   # the verbatim reading differs here
        assert abs(table2_hcps(factors) - want) > 1e-6 * want


@pytest.mark.parametrize("n", [2, 3, 5, 8, 12])
def test_table2_ring(n):
    assert one_switch("ring:ports=1", n) == pytest.approx(table2_ring(n), rel=1e-9)


@pytest.mark.parametrize("n", [2, 4, 8, 16])
def test_table2_rhd_powers_of_two(n):
    got = one_switch("recdoub:variant=bandwidth,layout=linear", n)
    assert got == pytest.approx(table2_rhd(n), rel=1e-9)


@pytest.mark.parametrize("n", [3, 6, 12])
def test_rhd_fold_non_powers_of_two(n):
    """flowemu's fold runs RHD on p' = 2^⌊log2 N⌋ ranks: its middle terms
    have p' where Table 2 writes N (Table 2's χ row is not exact for it)."""
    q = 1 << (n.bit_length() - 1)
    want = (2 * math.ceil(math.log2(n)) * ALPHA + 2 * (q - 1) * S / q * BETA
            + (q - 1) * S / q * GAMMA + 3 * (q - 1) * S / q * DELTA
            + 2 * S * BETA + S * GAMMA + 3 * S * DELTA)
    got = one_switch("recdoub:variant=bandwidth,layout=linear", n)
    assert got == pytest.approx(want, rel=1e-9)
    assert abs(got - table2_rhd(n)) > 1e-6 * got


# ------------------------------------------------------------------ incast

EPS = 4e-11


@pytest.mark.parametrize("n,wt", [(8, 3), (12, 5), (6, 9), (16, 1), (5, 5)])
def test_cps_incast_matches_table2_with_threshold_one_lower(n, wt):
    """The flow model's w counts incoming flows (N − 1 into a co-located PS),
    Table 2's counts the fan-in N: a flow-model threshold w_t − 1 gives
    Table 2's term 2(N−1)S/N·max(N − w_t, 0)·ε exactly."""
    got = one_switch("cps", n, incast_threshold=wt - 1, incast_slope=EPS)
    assert got == pytest.approx(table2_cps(n, wt, EPS), rel=1e-9)
    same = one_switch("cps", n, incast_threshold=wt, incast_slope=EPS)
    assert same == pytest.approx(table2_cps(n, wt + 1, EPS), rel=1e-9)
    if n - wt > 0:
        assert got > table2_cps(n)


@pytest.mark.parametrize("factors,wt", [((4, 3), 1), ((6, 4), 2), ((2, 3, 2), 0), ((8, 2), 9)])
def test_hcps_incast_per_step(factors, wt):
    """Each step i charges its receivers' N/P(i)·(F_i − 1) bytes the incast
    of F_i − 1 flows, in the reduce-scatter and again in the allgather."""
    n = math.prod(factors)
    alg = f"hcps:factors={'x'.join(map(str, factors))}"
    extra = 2 * sum(max(f - 1 - wt, 0) * (f - 1) / math.prod(factors[:i + 1])
                    for i, f in enumerate(factors)) * S * EPS
    got = one_switch(alg, n, incast_threshold=wt, incast_slope=EPS)
    want = one_switch(alg, n) + extra
    assert got == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize("n,wt", [(8, 3), (12, 12)])
def test_reduce_broadcast_incast_only_on_the_reduce(n, wt):
    """The root's N − 1 incoming flows pay incast; the broadcast has fan-in 1
    at every receiver (Table 2 charges 2(N−1)S, both steps)."""
    got = one_switch("reduce-broadcast", n, incast_threshold=wt, incast_slope=EPS)
    want = table2_rb(n) + (n - 1) * S * max(n - 1 - wt, 0) * EPS
    assert got == pytest.approx(want, rel=1e-9)


# ------------------------------------------------------------------ other topologies

@pytest.mark.parametrize("topology", ["torus:4x4", "fattree:k=4", "leafspine:4x3x2"])
@pytest.mark.parametrize("alg", ["cps", "hcps", "hcps:factors=2x4x2", "reduce-broadcast", "acps",
                                 "acps:groups=5+1+4+2"])
def test_runs_on_other_families(topology, alg):
    p = 16 if "leafspine" not in topology else 12
    if "2x4x2" in alg and p != 16:
        alg = "hcps:factors=2x3x2"
    if "5+1+4+2" in alg and p != 12:
        alg = "acps:groups=5+1+4+2+4"
    df = flowemu.simulate(topology, alg, sizes=[1 << 10, 1 << 20], ranks=p)
    t = df.time_s.to_numpy()
    assert np.all(np.isfinite(t)) and np.all(t > 0) and t[1] > t[0]
    # never faster than the ranks' links into the network allow: each step
    # takes at least the most any rank receives over its endpoint's ingress
    topo = parse_topology(topology)
    name, _, opt = alg.partition(":")
    opts = dict([opt.split("=")]) if opt else {}
    report = verify_allreduce(build(name, p, True, **opts))
    ingress = topo.ingress_capacity(flowemu.Network())[:topo.num_endpoints].max()
    assert t[1] >= (1 << 20) * report.received_path / ingress * (1 - 1e-9)


# ------------------------------------------------------------------ errors

@pytest.mark.parametrize("alg,needles", [
    ("hcps:factors=5x5", ["factors=5x5", "25", "24 ranks"]),
    ("hcps:factors=4x4", ["factors=4x4", "16", "24 ranks"]),
    ("hcps:factors=8y3", ["factors", "'8y3'"]),
    ("hcps:factors=0x24", ["factors", "'0x24'"]),
    ("hcps:factors=", ["factors", "''"]),
    ("hcps:factors=8x", ["factors", "'8x'"]),
    ("hcps:fanin=8x3", ["unknown option", "fanin", "factors"]),
    ("cps:factors=8x3", ["unknown option", "factors"]),
    ("reduce-broadcast:root=1", ["unknown option", "root"]),
    ("acps:groups=16+4", ["groups=16+4", "20", "24 ranks"]),
    ("acps:groups=16-8", ["groups", "'16-8'"]),
    ("acps:groups=16+0+8", ["groups", "'16+0+8'"]),
    ("acps:groups=8*2+4*", ["groups", "'8*2+4*'"]),
    ("acps:groups=8*4+4", ["groups=8*4+4", "36", "24 ranks"]),
])
def test_bad_options(capsys, alg, needles):
    with pytest.raises(ConfigError) as exc:
        flowemu.simulate("tree:24", alg, sizes=[1024])
    msg = str(exc.value)
    assert "\n" not in msg and all(n in msg for n in needles), msg
    code, _, err = run(capsys, ["run", "-t", "tree:24", "-a", alg, "-s", "1KiB"])
    line = one_error_line(err)
    assert code == 2 and all(n in line for n in needles), line


def test_bad_factor_values_through_the_builder():
    for bad in (True, 2.5, [3, "x"], [], "x"):
        with pytest.raises(ConfigError, match="factors"):
            build("hcps", 6, factors=bad)
    assert build("hcps", 6, factors=[3, 2]).info["factors"] == (3, 2)
    assert build("hcps", 6, factors=6).info["factors"] == (6,)
    with pytest.raises(ConfigError, match="ranks p=1"):
        build("cps", 1)


# ------------------------------------------------------------------ acps

def acps_groups():
    rng = np.random.default_rng(14)
    cases = []
    for p in range(2, 25):
        cases.append((p, (1,) * p))                       # one rank per group
        cases.append((p, (2,) * (p // 2) + (1,) * (p % 2)))   # two ranks per group
        cases.append((p, (1, p - 1)))
        cuts = np.sort(rng.choice(np.arange(1, p), size=min(p - 1, 3), replace=False))
        cases.append((p, tuple(int(v) for v in np.diff(np.concatenate([[0], cuts, [p]])))))
    return cases


@pytest.mark.parametrize("p,groups", acps_groups(), ids=lambda v: str(v))
def test_acps_uneven_groups_are_allreduces(p, groups):
    text = "+".join(map(str, groups))
    sched = build("acps", p, True, groups=text)
    report = verify_allreduce(sched)
    equivalent_traffic(sched, build("acps", p, False, groups=text))
    assert sched.info["groups"] == groups
    short = sched.variant.removeprefix("groups=")
    assert ps.parse_groups(short) == groups and len(short) <= len(text)
    # per rank: own block plus an even deal of the other groups' blocks
    # (Algorithm 1: floor(N/n) per server, the remainder to the first ones),
    # reduced with fan-in = its group's size; then its own block with
    # fan-in = the number of groups
    c = len(groups)
    reduced, gamma0 = np.zeros(p), np.zeros(p)
    lo = 0
    for g in groups:
        base, extra = divmod(p - g, g)
        held = 1 + base + (np.arange(g) < extra)
        if g > 1:
            reduced[lo:lo + g] = held / p
            gamma0[lo:lo + g] = (g - 1) * held / p
        lo += g
    if c > 1:
        reduced += 1 / p
    assert np.allclose(report.reduced, reduced, rtol=1e-12, atol=0)
    assert report.gamma_path == pytest.approx(gamma0.max() + (c - 1) / p, rel=1e-12)
    assert report.num_steps == (2 if c == 1 or c == p else 4)


@pytest.mark.parametrize("g,c", [(4, 2), (3, 4), (2, 3), (6, 4), (8, 4)])
def test_acps_equal_groups_is_table2_hcps(g, c):
    """c equal groups of g: every member holds c blocks after rs0 (1/g of the
    vector) and receives c − 1 blocks of n/p in rs1, balanced meshes both:
    Table 2's two-step HCPS row with f0 = g, f1 = c."""
    alg = "acps:groups=" + "+".join([str(g)] * c)
    assert one_switch(alg, g * c) == pytest.approx(table2_hcps((g, c)), rel=1e-9)


def test_acps_auto_groups_are_the_switches():
    sched = flowemu.algorithms.get_algorithm("acps").build(12, parse_topology("tree:2x4+2x2"),
                                                           True)
    assert sched.info["groups"] == (4, 4, 2, 2) and sched.note == ""
    verify_allreduce(sched)
    torus = build_on("torus:4x4", 16)
    assert torus.info["groups"] == (16,) and "no switch per host group" in torus.note
    assert build("acps", 5).info["groups"] == (5,)


def build_on(topology, p):
    return get_algorithm("acps").build(p, parse_topology(topology), False)


@pytest.mark.parametrize("topology,p,want", [
    ("tree:4x6", 24, (6, 4)), ("fattree:k=4", 16, (2, 8)), ("leafspine:4x3x2", 12, (3, 4)),
    ("tree:24", 24, (6, 4)), ("torus:4x4", 16, (4, 4)), ("tree:2x4+2x2", 12, (4, 3)),
])
def test_hcps_auto_follows_equal_switch_groups(topology, p, want):
    sched = get_algorithm("hcps").build(p, parse_topology(topology), False)
    assert sched.info["factors"] == want


def test_acps_group_runs():
    assert ps.parse_groups("32*8+16*8") == (32,) * 8 + (16,) * 8
    assert ps.groups_text((32,) * 8 + (16,) * 8) == "32*8+16*8"
    assert ps.groups_text((4, 4, 2, 4)) == "4*2+2+4"
    sched = build("acps", 24, False, groups="8*2+4+2*2")
    assert sched.info["groups"] == (8, 8, 4, 2, 2) and sched.variant == "groups=8*2+4+2*2"


@pytest.mark.parametrize("alg,options", [
    ("hcps:factors=6x4", "factors=6x4"), ("hcps: factors = 6X4 ", "factors=6x4"),
    ("hcps", "factors=auto"), ("acps:groups=8+8+4+2+2", "groups=8*2+4+2*2"),
])
def test_options_column_parses_back(alg, options):
    """The options column is a canonical spec (no commas inside a value)."""
    df = flowemu.simulate("tree:24", alg, sizes=[1024])
    assert df.options.iloc[0] == options
    again = flowemu.simulate("tree:24", f"{alg.split(':')[0].strip()}:{options}", sizes=[1024])
    assert again.time_s.iloc[0] == df.time_s.iloc[0]
