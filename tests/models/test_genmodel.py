"""GenModel analytic backend (flowemu.models.genmodel): every Table 2 row against a
per-step tally of the plan written here (blocks held, bytes received, fan-in
of each many-to-one step, reduction work per server), the paper's own
statements about the table (§3.1, §3.3, §3.4), and the flow-level engine on
one non-blocking switch agreeing with the Ring and RHD rows."""

import itertools
import math

import numpy as np
import pytest

import flowemu
from flowemu.core.errors import ConfigError
from flowemu.core.network import Network
from flowemu.models import genmodel as gm

REL = 1e-12

# per-byte GenModel terms of a made-up cluster (seconds, seconds per byte)
ALPHA, BETA, GAMMA, DELTA, EPS = 7e-6, 1 / 1.25e9, 3e-11, 5e-11, 2e-11


def close(a, b, rel=REL):
    return np.allclose(a, b, rtol=rel, atol=0)


def excess(w, w_t):
    """max(w − w_t, 0) of eq. 7 (0 when w_t is inf)."""
    return max(w - w_t, 0) if math.isfinite(w_t) else 0


def step_time(recv, fanin, red_fanin, red_bytes, w_t, eps, beta=BETA, gamma=GAMMA, delta=DELTA):
    """One bulk-synchronous step of eq. 11: α + received bytes at β plus the
    incast correction of its fan-in (eq. 10), then the reduction (a fan-in-f
    add of x bytes: (f − 1)x adds, f reads + 1 write of x, §3.1)."""
    t = ALPHA + recv * (beta + excess(fanin, w_t) * eps)
    if red_fanin:
        t += (red_fanin - 1) * red_bytes * gamma + (red_fanin + 1) * red_bytes * delta
    return t


# ------------------------------------------------------------------- tallies of the plans

def tally_ring(N, S, w_t=math.inf, eps=0.0):
    # §2.1: 2(N−1) steps; in reduce-scatter step j server i receives one block
    # of S/N from its left neighbour and adds it to its own copy.
    t = sum(step_time(S / N, 1, 2, S / N, w_t, 0.0) for _ in range(N - 1))
    t += sum(step_time(S / N, 1, 0, 0, w_t, 0.0) for _ in range(N - 1))
    return t


def tally_rhd_pow2(P, S, beta=BETA, gamma=GAMMA, delta=DELTA):
    # §2.1: in halving step j a server exchanges 2^−(j+1) of its data with a
    # partner and adds it; the doubling steps mirror them without adds.
    t = 0.0
    for j in range(int(math.log2(P))):
        x = S / 2 ** (j + 1)
        t += step_time(x, 1, 2, x, math.inf, 0, beta, gamma, delta)
        t += step_time(x, 1, 0, 0, math.inf, 0, beta, gamma, delta)
    return t


def tally_rhd_plan(N, S, beta=BETA, gamma=GAMMA, delta=DELTA):
    """RHD as run: halving/doubling on P = 2^⌊log N⌋ ranks, plus (N not a
    power of two) a fold step (the extra ranks send S, a partner adds it) and
    an unfold step (S back)."""
    P = 1 << (N.bit_length() - 1)
    t = tally_rhd_pow2(P, S, beta, gamma, delta)
    if P != N:
        t += step_time(S, 1, 2, S, math.inf, 0, beta, gamma, delta)
        t += step_time(S, 1, 0, 0, math.inf, 0, beta, gamma, delta)
    return t


def tally_cps(N, S, w_t=math.inf, eps=0.0):
    # every server is the PS of one S/N block: it receives N − 1 blocks in one
    # N-server many-to-one step and adds N blocks at once; the AllGather
    # receives N − 1 blocks at the same fan-in.
    recv = (N - 1) * S / N
    return step_time(recv, N, N, S / N, w_t, eps) + step_time(recv, N, 0, 0, w_t, eps)


def tally_reduce_broadcast(N, S, w_t=math.inf, eps=0.0):
    # the root's link carries the N − 1 whole vectors in, then out; the root
    # adds N vectors at once; the paper charges the fan-in N on both (B = 2(N−1)S).
    recv = (N - 1) * S
    return step_time(recv, N, N, S, w_t, eps) + step_time(recv, N, 0, 0, w_t, eps)


def tally_hcps(factors, S, w_t=math.inf, eps=0.0):
    """Run HCPS (§3.3, Fig. 5) on explicit block sets: server s has mixed-
    radix digits (d_0 … d_{m−1}); step i groups the servers that differ in
    digit i only (orthogonal to all earlier groups); a server ends step i
    responsible for the blocks whose first i + 1 digits are its own. The
    bytes each server receives and reduces are counted from the sets."""
    N = math.prod(factors)
    servers = list(itertools.product(*[range(f) for f in factors]))
    blocks = servers                 # block b is reduced in the end by server b
    held = {s: set(blocks) for s in servers}
    t_rs = t_ag = 0.0
    for i, f in enumerate(factors):
        new = {s: {b for b in held[s] if b[:i + 1] == s[:i + 1]} for s in servers}
        recv = reduced = 0
        for s in servers:
            group = [g for g in servers if g[:i] + g[i + 1:] == s[:i] + s[i + 1:] and g != s]
            assert len(group) == f - 1
            # each peer sends the part of its holding that s is now responsible for
            got = sum(len(held[g] & new[s]) for g in group)
            assert all(held[g] & new[s] == new[s] for g in group)
            recv = max(recv, got)
            reduced = max(reduced, len(new[s]))
        held = new
        t_rs += step_time(recv * S / N, f, f, reduced * S / N, w_t, eps)
        t_ag += step_time(recv * S / N, f, 0, 0, w_t, eps)   # the same exchange reversed
    assert all(held[s] == {s} for s in servers)
    return t_rs + t_ag


SIZES = np.array([1.0, 4096.0, 3e6, 4e8])
NS = [1, 2, 3, 5, 6, 8, 12, 15, 16, 24, 31, 32]
INCAST = [(math.inf, 0.0), (2, EPS), (5, EPS), (9, EPS)]


@pytest.mark.parametrize("N", NS)
def test_ring_row(N):
    for S in SIZES:
        assert close(gm.ring(N, S, ALPHA, BETA, GAMMA, DELTA), tally_ring(N, S))


@pytest.mark.parametrize("N", [n for n in NS if n & (n - 1) == 0])
def test_rhd_row_power_of_two(N):
    for S in SIZES:
        assert close(gm.rhd(N, S, ALPHA, BETA, GAMMA, DELTA), tally_rhd_plan(N, S))


@pytest.mark.parametrize("N", [n for n in NS if n & (n - 1)])
def test_rhd_row_other_n_is_paper_accounting(N):
    """For N not a power of two the printed row keeps N in the halving terms;
    the plan on P = 2^⌊log N⌋ ranks moves (1/P − 1/N)·S less per β, γ/1, δ/3
    share. The row is the plan plus exactly that difference, with 2⌈log N⌉ α."""
    P = 1 << (N.bit_length() - 1)
    assert 2 * math.ceil(math.log2(N)) == 2 * int(math.log2(P)) + 2
    for S in SIZES:
        diff = S * (1 / P - 1 / N) * (2 * BETA + GAMMA + 3 * DELTA)
        assert close(gm.rhd(N, S, ALPHA, BETA, GAMMA, DELTA), tally_rhd_plan(N, S) + diff)
        assert gm.chi(N) == 1


@pytest.mark.parametrize("N", NS)
@pytest.mark.parametrize("w_t,eps", INCAST)
def test_cps_and_reduce_broadcast_rows(N, w_t, eps):
    for S in SIZES:
        if N == 1:
            assert gm.cps(N, S, ALPHA, BETA, GAMMA, DELTA, eps, w_t) == 0
            assert gm.reduce_broadcast(N, S, ALPHA, BETA, GAMMA, DELTA, eps, w_t) == 0
            continue
        assert close(gm.cps(N, S, ALPHA, BETA, GAMMA, DELTA, eps, w_t),
                     tally_cps(N, S, w_t, eps))
        assert close(gm.reduce_broadcast(N, S, ALPHA, BETA, GAMMA, DELTA, eps, w_t),
                     tally_reduce_broadcast(N, S, w_t, eps))


HCPS_FACTORS = [(2,), (7,), (6, 4), (4, 6), (5, 3), (3, 5), (6, 2), (2, 3, 4), (4, 3, 2),
                (3, 2, 4), (2, 2, 2, 2), (2, 2, 3, 2)]


@pytest.mark.parametrize("factors", HCPS_FACTORS)
@pytest.mark.parametrize("w_t,eps", INCAST)
def test_hcps_row(factors, w_t, eps):
    for S in SIZES:
        assert close(gm.hcps(factors, S, ALPHA, BETA, GAMMA, DELTA, eps, w_t),
                     tally_hcps(factors, S, w_t, eps))


def test_hcps_printed_memory_term_for_two_steps():
    """For m = 2 the printed δ coefficient (2·f_1 + N + 1)/N (Fig. 5: 6×4)
    is the plan's; only δ is set so the row is that term alone."""
    for f0, f1 in [(6, 4), (4, 6), (5, 3), (8, 3)]:
        N = f0 * f1
        got = gm.hcps((f0, f1), 1.0, 0, 0, 0, 1.0)
        assert close(got, (2 * f1 + N + 1) / N)


def test_arrays_follow_the_sizes():
    got = gm.hcps("6x4", SIZES, ALPHA, BETA, GAMMA, DELTA, EPS, 5)
    assert isinstance(got, np.ndarray) and got.shape == SIZES.shape
    assert close(got, [tally_hcps((6, 4), S, 5, EPS) for S in SIZES])
    assert isinstance(gm.ring(4, 10.0, ALPHA, BETA, GAMMA, DELTA), float)


# ------------------------------------------------------------------- the paper's statements

def coefficient(fn, N, term):
    """Coefficient of S on one term: the row with only that term set, at S = 1."""
    terms = {"alpha": 0.0, "beta": 0.0, "gamma": 0.0, "delta": 0.0}
    terms[term] = 1.0
    return fn(N, 1.0, **terms)


@pytest.mark.parametrize("N", [2, 3, 7, 12, 16, 100])
def test_beta_to_gamma_coefficient_ratio_is_two(N):
    """§3.4: "the ratio of the β term coefficient to the γ-term coefficient
    is always 2", for every row (HCPS with two factors where N has them)."""
    rows = [gm.reduce_broadcast, gm.ring, gm.rhd, gm.cps]
    if N in (12, 16, 100):
        f = {12: (4, 3), 16: (2, 4, 2), 100: (10, 10)}[N]
        rows.append(lambda _n, S, **kw: gm.hcps(f, S, **kw))
    for fn in rows:
        assert close(coefficient(fn, N, "beta"), 2 * coefficient(fn, N, "gamma"))


def test_memory_access_cps_vs_ring_approaches_200_percent():
    """§3.1: Ring's memory access 3(N−1)S/N δ against CPS's (N+1)S/N δ: the
    difference "can even reach 200 %" for large N (2(N−2)/(N+1) → 2)."""
    diffs = []
    for N in (2, 4, 16, 256, 10**6):
        ring_d = coefficient(gm.ring, N, "delta")
        cps_d = coefficient(gm.cps, N, "delta")
        diffs.append((ring_d - cps_d) / cps_d)
        assert close(diffs[-1], 2 * (N - 2) / (N + 1))
    assert diffs == sorted(diffs) and diffs[0] == 0 and 1.9999 < diffs[-1] < 2


@pytest.mark.parametrize("N", [2, 5, 12, 32])
@pytest.mark.parametrize("w_t,eps", INCAST)
def test_hcps_with_one_step_is_cps(N, w_t, eps):
    assert close(gm.hcps((N,), SIZES, ALPHA, BETA, GAMMA, DELTA, eps, w_t),
                 gm.cps(N, SIZES, ALPHA, BETA, GAMMA, DELTA, eps, w_t))


@pytest.mark.parametrize("factors", [(6, 4), (3, 5), (2, 3, 4), (8, 4)])
def test_hcps_incast_zero_when_fanins_at_most_threshold(factors):
    """§3.3: "if all f_i are less than w_t, this term should be zero"; one
    above the threshold and it is not."""
    plain = gm.hcps(factors, SIZES, ALPHA, BETA, GAMMA, DELTA)
    at = gm.hcps(factors, SIZES, ALPHA, BETA, GAMMA, DELTA, EPS, max(factors))
    below = gm.hcps(factors, SIZES, ALPHA, BETA, GAMMA, DELTA, EPS, max(factors) - 1)
    assert np.array_equal(plain, at)
    assert np.all(below[SIZES > 0] > plain[SIZES > 0])


@pytest.mark.parametrize("factors", [(6, 4), (4, 6), (2, 3, 4), (2, 2, 2, 2)])
def test_memory_access_lower_bound(factors):
    """Theorem 1: (N+1)S/N δ is the least memory access; CPS attains it,
    HCPS is above it, and larger earlier fan-ins cost less (§3.3)."""
    N = math.prod(factors)
    bound = (N + 1) / N
    assert close(coefficient(gm.cps, N, "delta"), bound)
    assert gm.hcps(factors, 1.0, 0, 0, 0, 1.0) > bound
    desc = tuple(sorted(factors, reverse=True))
    asc = tuple(sorted(factors))
    if desc != asc:
        assert gm.hcps(desc, 1.0, 0, 0, 0, 1.0) < gm.hcps(asc, 1.0, 0, 0, 0, 1.0)


# ------------------------------------------------------------------- predict

NET = Network.from_si(bandwidth=1.25e9, link_latency=0, hop_latency=0, alpha=ALPHA, gamma=GAMMA,
              delta=DELTA)


def test_predict_maps_names_to_rows():
    S = flowemu.core.checks.sizes("1KiB,1MiB,64MiB")
    beta = 1 / NET.bandwidth
    args = (S, ALPHA, beta, GAMMA, DELTA)
    assert close(gm.predict("ring", 12, "1KiB,1MiB,64MiB", NET), gm.ring(12, *args))
    assert close(gm.predict("recdoub", 12, S, NET), gm.rhd(12, *args))
    assert close(gm.predict("recdoub:variant=bandwidth", 16, S, NET), gm.rhd(16, *args))
    assert close(gm.predict("cps", 12, S, NET), gm.cps(12, *args))
    assert close(gm.predict("reduce-broadcast", 12, S, NET), gm.reduce_broadcast(12, *args))
    assert close(gm.predict("hcps:factors=4x3", 12, S, NET), gm.hcps((4, 3), *args))


def test_predict_incast_and_hops():
    net = Network.from_si(bandwidth=1.25e9, link_latency="100ns", hop_latency="300ns", alpha=ALPHA,
                  gamma=GAMMA, delta=DELTA, incast_threshold=4, incast_slope=EPS)
    S = np.array([1e3, 1e6])
    got = gm.predict("cps", 12, S, net)
    assert close(got, [tally_cps(12, s, 4, EPS) for s in S])
    # α grows by 2 hops × (link + hop latency) per step: CPS has 2 steps
    two = gm.predict("cps", 12, S, net, hops=2)
    assert close(two - got, 2 * 2 * 400e-9, rel=1e-9)
    # incast off when only one of threshold and slope is set
    off = Network.from_si(bandwidth=1.25e9, alpha=ALPHA, gamma=GAMMA, delta=DELTA, incast_threshold=4)
    assert close(gm.predict("cps", 12, S, off), [tally_cps(12, s) for s in S])


def test_steps_are_the_alpha_counts():
    """A of each row, from the plan: 2(N−1) ring rounds, 2⌈log N⌉ for RHD
    (two more than the 2 log P halving/doubling rounds when N is no power of
    two), two for the PS rows, 2m for m HCPS steps."""
    assert gm.steps("ring", 12) == 22
    assert gm.steps("recdoub", 16) == 8 and gm.steps("recdoub", 12) == 2 * 3 + 2
    assert gm.steps("cps", 12) == 2 and gm.steps("reduce-broadcast", 12) == 2
    assert gm.steps("hcps:factors=2x3x2", 12) == 6
    assert gm.steps("cps", 1) == 0


def test_predict_sizes_sorted_like_simulate():
    got = gm.predict("ring", 4, [4096, 1024, 4096], NET)
    assert close(got, gm.ring(4, np.array([1024.0, 4096.0]), ALPHA, 1 / NET.bandwidth,
                              GAMMA, DELTA))


@pytest.mark.parametrize("spec,p,needle", [
    ("swing", 8, ("'swing' has no GenModel form; known with model genmodel: cps, hcps, "
                 "recdoub, reduce-broadcast, ring")),
    ("hcps:factors=4x4", 12, "factors=4x4 multiply to 16, not the 12 ranks"),
    ("hcps", 12, ("needs factors=F0xF1x... (fan-ins whose product is the 12 ranks), "
                 "e.g. hcps:factors=4x3")),
    ("hcps:factors=auto", 7, "e.g. hcps:factors=7"),
    ("hcps:factors=2", 1, "p: 1 is not allowed for hcps"),
    ("hcps:factors=4x0x3", 12, "factors: '4x0x3' is not allowed"),
    ("hcps:factors=ax3", 12, "factors: 'ax3' is not allowed"),
    ("hcps:factors=4x3,steps=2", 12, "option steps has no GenModel form"),
    ("recdoub:variant=latency", 8, ("variant=latency has no GenModel form; allowed with model "
                                   "genmodel: variant=bandwidth|auto")),
    ("recdoub:mirrored=true", 8, "mirrored=true has no GenModel form"),
    ("ring:ports=4", 8, "ports=4 has no GenModel form"),
    ("cps:foo=1", 8, "allowed with model genmodel: (no options)"),
    ("ring", 0, "p: 0 is not allowed; expected an integer >= 1"),
    ("ring", 2.5, "p: 2.5 is not allowed"),
    ("ring:ports", 4, "is not key=value"),
])
def test_predict_refuses(spec, p, needle):
    with pytest.raises(ConfigError) as exc:
        gm.predict(spec, p, "1KiB", NET)
    assert needle in str(exc.value) and "\n" not in str(exc.value)


def test_a_factor_of_one_adds_no_step():
    """The schedule takes hcps:factors=4x1x3 as 4x3 (groups of one rank add
    no step, docs/algorithms.md), and run --model genmodel priced it; predict
    and hcps() refused it, and hcps() refused N = 1, which the docs say
    costs 0 as in every other row."""
    assert gm.predict("hcps:factors=4x1x3", 12, "1MiB", NET) == \
        gm.predict("hcps:factors=4x3", 12, "1MiB", NET)
    assert gm.hcps((4, 1, 3), 2**20, 1e-6, 1e-10, 1e-11, 1e-12) == \
        gm.hcps((4, 3), 2**20, 1e-6, 1e-10, 1e-11, 1e-12)
    assert gm.hcps((1,), 2**20, 1e-6, 1e-10, 1e-11, 1e-12) == 0.0
    assert gm.parse_factors("6x4x1") == (6, 4)


def test_predict_refuses_bad_network_and_sizes():
    with pytest.raises(ConfigError, match="network: .* expected a flowemu.core.network.Network"):
        gm.predict("ring", 4, "1KiB", {"bandwidth": 1})
    with pytest.raises(ConfigError, match="sizes"):
        gm.predict("ring", 4, "lots", NET)
    with pytest.raises(ConfigError, match="algorithm: 3 is not allowed"):
        gm.predict(3, 4, "1KiB", NET)


@pytest.mark.parametrize("call,needle", [
    (lambda: gm.ring(0, 1.0, 0, 0, 0, 0), "N: 0 is not allowed"),
    (lambda: gm.ring(True, 1.0, 0, 0, 0, 0), "N: True is not allowed"),
    (lambda: gm.cps(4, -1.0, 0, 0, 0, 0), "S: -1.0 is not allowed"),
    (lambda: gm.cps(4, [[1.0]], 0, 0, 0, 0), "S: [[1.0]] is not allowed"),
    (lambda: gm.cps(4, 1.0, 0, -1e-9, 0, 0), "beta: -1e-09 is not allowed"),
    (lambda: gm.cps(4, 1.0, 0, 0, float("nan"), 0), "gamma: nan is not allowed"),
    (lambda: gm.cps(4, 1.0, 0, 0, 0, 0, 1e-9, -1), "w_t: -1 is not allowed"),
    (lambda: gm.hcps([], 1.0, 0, 0, 0, 0), "factors: [] is not allowed"),
    (lambda: gm.hcps(5, 1.0, 0, 0, 0, 0), "factors: 5 is not allowed"),
    (lambda: gm.chi(0), "x: 0 is not allowed"),
])
def test_functions_refuse_bad_values(call, needle):
    with pytest.raises(ConfigError) as exc:
        call()
    assert needle in str(exc.value)


# ------------------------------------------------------------------- the flow backend agrees

def flow_times(N, algorithm, net, sizes):
    df = flowemu.simulate(f"tree:{N}", algorithm, sizes=sizes, network=net)
    return df.sort_values("size_bytes")["time_s"].to_numpy()


SIM_SIZES = "4KiB,1MiB,256MiB"


@pytest.mark.parametrize("N", [2, 4, 8, 16])
@pytest.mark.parametrize("incast", [False, True])
def test_flow_backend_equals_ring_and_rhd_rows(N, incast):
    """On one non-blocking switch (tree:N) with no link or hop latency, the
    flow-level time of ring and recdoub is the Table 2 row. With incast on
    (w_t = 2 flows: ring runs both ways, two flows into each receiver) the
    rows charge none and neither does the engine."""
    extra = {"incast_threshold": 2, "incast_slope": 1e-9} if incast else {}
    net = Network.from_si(bandwidth=5e10, link_latency=0, hop_latency=0, alpha=ALPHA, gamma=GAMMA,
                  delta=DELTA, **extra)
    assert close(flow_times(N, "ring", net, SIM_SIZES),
                 gm.predict("ring", N, SIM_SIZES, net), rel=1e-9)
    assert close(flow_times(N, "recdoub:variant=bandwidth", net, SIM_SIZES),
                 gm.predict("recdoub", N, SIM_SIZES, net), rel=1e-9)


@pytest.mark.parametrize("N", [3, 6, 12])
def test_flow_backend_ring_any_n_and_rhd_plan_for_other_n(N):
    """Ring's row holds for every N; for N not a power of two the engine runs
    the RHD plan (fold + halving/doubling on P ranks + unfold), which is the
    printed row minus S(1/P − 1/N)(2β + γ + 3δ)."""
    net = Network.from_si(bandwidth=5e10, link_latency=0, hop_latency=0, alpha=ALPHA, gamma=GAMMA,
                  delta=DELTA)
    S = flowemu.core.checks.sizes(SIM_SIZES)
    beta = 1 / net.bandwidth
    assert close(flow_times(N, "ring", net, SIM_SIZES), gm.predict("ring", N, S, net),
                 rel=1e-9)
    P = 1 << (N.bit_length() - 1)
    plan = gm.predict("recdoub", N, S, net) - S * (1 / P - 1 / N) * (2 * beta + GAMMA
                                                                    + 3 * DELTA)
    assert close(flow_times(N, "recdoub:variant=bandwidth", net, SIM_SIZES), plan, rel=1e-9)
    assert close(plan, [tally_rhd_plan(N, s, beta) for s in S])


def test_flow_backend_counts_incast_fan_in_in_flows():
    """The engine's fan-in is the number of flows into a receiver (two for
    ring both ways), the paper's w the number of servers in the group (2 for
    Ring, which it never charges). With w_t = 1 the engine charges ring's two
    flows and the Table 2 row does not: the incast of the test above is live."""
    net = Network.from_si(bandwidth=5e10, link_latency=0, hop_latency=0, alpha=ALPHA, gamma=GAMMA,
                  delta=DELTA, incast_threshold=1, incast_slope=1e-9)
    flow = flow_times(8, "ring", net, SIM_SIZES)
    assert np.all(flow > gm.predict("ring", 8, SIM_SIZES, net) * (1 + 1e-6))
