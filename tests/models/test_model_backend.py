"""``model="genmodel"``: GenModel's analytic prediction as a backend beside
the flow engine, through every door (simulate, ``run --model``, sweeps,
compare, plot).

The acceptance of issue 14: Table 2's closed forms, computed here from the
printed formulas (genmodel-gentree.txt Table 2, not via flowemu.models.genmodel),
hold to 1e-9 for the analytic backend; and the flow backend agrees with
them on a single non-blocking switch for every row, incast on and off, N a
power of two or not — exactly, up to the documented conventions where the
two count differently (each stated at its test and checked as an exact
relation):

* fan-in: the paper's w of a many-to-one step is the number of servers of
  the group (N for CPS, f_i for HCPS step i); the engine counts the flows
  into a receiver (N − 1, f_i − 1). So the engine with threshold w_t is the
  row with threshold w_t + 1.
* Reduce-Broadcast: the row charges the incast of the reduce on the
  broadcast too (2(N−1)S·max(N − w_t, 0)ε); in the engine each broadcast
  receiver has one flow (the root's link is the bottleneck), no incast.
* RHD, N not a power of two: the printed row keeps N in the halving terms;
  the plan halves on P = 2^⌊log N⌋ ranks, S(1/P − 1/N)(2β + γ + 3δ) less.
* HCPS, m >= 3: the printed δ sum Σ_{i=1}^{m−1} Π_{j=1}^{i} f_j is the
  plan's for f_1..f_{m−1} listed in reverse; the printed ε term is read
  with step i's own fan-in and the factor 2 of ReduceScatter + AllGather
  (flowemu/genmodel.py, hcps).
* Ring runs both ways by default (ports=max): two flows into each receiver,
  so incast is on at w_t >= 2 without charging it (the row charges none).
"""

import io
import math
import shutil

import numpy as np
import pandas as pd
import pytest

import flowemu
from flowemu.core.errors import ConfigError
from flowemu.core.network import Network
from flowemu.models import genmodel as gm
from flowemu.topology import parse_topology
from tests.helpers.cli import one_error_line, run

REL = 1e-9

BW = 1.25e9                        # bytes/s: β = 0.8 ns per byte
LINK, HOP, ALPHA = 100e-9, 300e-9, 7e-6
GAMMA, DELTA, EPS = 3e-11, 5e-11, 2e-11
SIZES = np.array([1024.0, 1048576.0, 268435456.0])
SIZES_TEXT = "1KiB,1MiB,256MiB"


def network(w_t=math.inf, eps=0.0, **kw):
    args = {"bandwidth": BW, "link_latency": LINK, "hop_latency": HOP, "alpha": ALPHA,
            "gamma": GAMMA, "delta": DELTA}
    args.update(kw)
    if math.isfinite(w_t):
        args.update(incast_threshold=w_t, incast_slope=eps)
    return Network.from_si(**args)


def close(a, b, rel=REL):
    return np.allclose(a, b, rtol=rel, atol=0)


# ------------------------------------------------------------------ Table 2 as printed
#
# α here is what one step costs before its bytes: the per-message overhead
# plus one host-to-host path on one switch (2 links, 2 hops).

A = ALPHA + 2 * (LINK + HOP)
B = 1 / BW


def xs(w, w_t):
    return max(w - w_t, 0) if math.isfinite(w_t) else 0.0


def printed_reduce_broadcast(N, S, w_t=math.inf, eps=0.0):
    return (2 * A + 2 * (N - 1) * S * B + (N - 1) * S * GAMMA + (N + 1) * S * DELTA
            + 2 * (N - 1) * S * xs(N, w_t) * eps)


def printed_ring(N, S):
    return (2 * (N - 1) * A + 2 * (N - 1) * S / N * B + (N - 1) * S / N * GAMMA
            + 3 * (N - 1) * S / N * DELTA)


def printed_rhd(N, S):
    chi = 0 if N & (N - 1) == 0 else 1
    return (2 * math.ceil(math.log2(N)) * A + 2 * (N - 1) * S / N * B
            + (N - 1) * S / N * GAMMA + 3 * (N - 1) * S / N * DELTA
            + chi * (2 * S * B + S * GAMMA + 3 * S * DELTA))


def printed_cps(N, S, w_t=math.inf, eps=0.0):
    return (2 * A + 2 * (N - 1) * S / N * B + (N - 1) * S / N * GAMMA
            + (N + 1) * S / N * DELTA + 2 * (N - 1) * S / N * xs(N, w_t) * eps)


def printed_hcps_delta_sum(f):
    """2·Σ_{i=1}^{m−1} Π_{j=1}^{i} f_j of the printed δ coefficient."""
    return 2 * sum(math.prod(f[1:i + 1]) for i in range(1, len(f)))


def hcps_row(f, S, w_t=math.inf, eps=0.0):
    """Table 2's HCPS row with the two readings of the module docstring: the
    δ sum of the printed row over (f_0, f_{m−1}, ..., f_1) — the printed row
    itself for m <= 2 — and the ε term with step i's own fan-in f_i and the
    factor 2 (Σ max(0, f_i − w_t)·2(f_i − 1)·Π_{j>i} f_j / N·S·ε)."""
    N, m = math.prod(f), len(f)
    g = (f[0],) + tuple(reversed(f[1:]))
    if m <= 2:
        assert printed_hcps_delta_sum(g) == printed_hcps_delta_sum(f)
    eps_term = sum(xs(f[i], w_t) * 2 * (f[i] - 1) * math.prod(f[i + 1:]) / N
                   for i in range(m))
    return (2 * m * A + 2 * (N - 1) * S / N * B + (N - 1) * S / N * GAMMA
            + (printed_hcps_delta_sum(g) + N + 1) / N * S * DELTA + eps_term * S * eps)


def analytic(N, algorithm, net, sizes=SIZES_TEXT, **kw):
    df = flowemu.simulate(f"tree:{N}", algorithm, sizes=sizes, network=net, model="genmodel",
                          **kw)
    assert set(df["model"]) == {"genmodel"}
    return df.sort_values("size_bytes")["time_s"].to_numpy()


def flow(N, algorithm, net, sizes=SIZES_TEXT):
    df = flowemu.simulate(f"tree:{N}", algorithm, sizes=sizes, network=net)
    assert set(df["model"]) == {"flow"}
    return df.sort_values("size_bytes")["time_s"].to_numpy()


NS = [2, 3, 5, 6, 8, 12, 16]
INCAST = [(math.inf, 0.0), (2, EPS), (4, EPS)]


# ------------------------------------------------------------------ analytic = Table 2

@pytest.mark.parametrize("N", NS)
@pytest.mark.parametrize("w_t,eps", INCAST)
def test_analytic_backend_is_table2(N, w_t, eps):
    net = network(w_t, eps)

    def exp(fn, *a):
        return np.array([fn(N, S, *a) for S in SIZES])

    assert close(analytic(N, "reduce-broadcast", net), exp(printed_reduce_broadcast, w_t, eps))
    assert close(analytic(N, "ring", net), exp(printed_ring))
    assert close(analytic(N, "recdoub", net), exp(printed_rhd))
    assert close(analytic(N, "cps", net), exp(printed_cps, w_t, eps))


HCPS = [(2, 3), (3, 2), (4, 3), (3, 4), (2, 3, 2), (2, 2, 3), (4, 4), (2, 4, 2), (2, 2, 2, 2),
        (5,)]


@pytest.mark.parametrize("f", HCPS)
@pytest.mark.parametrize("w_t,eps", INCAST)
def test_analytic_hcps_is_table2(f, w_t, eps):
    N = math.prod(f)
    got = analytic(N, "hcps:factors=" + "x".join(map(str, f)), network(w_t, eps))
    assert close(got, [hcps_row(f, S, w_t, eps) for S in SIZES])


def test_hcps_reading_reduces_to_cps_and_differs_from_the_print_for_m3():
    """m = 1 is the CPS row (what the corrected ε reading is for); for m = 3
    with f_1 != f_2 the printed δ sum is not the plan's."""
    for S in SIZES:
        assert close(hcps_row((6,), S, 2, EPS), printed_cps(6, S, 2, EPS))
    assert printed_hcps_delta_sum((2, 2, 3)) != printed_hcps_delta_sum((2, 3, 2))


def test_hcps_auto_prices_the_factors_the_schedule_picks():
    """factors=auto is not refused: on one switch the schedule takes F0 =
    the smallest divisor >= sqrt(p), then p / F0 (ps.auto_factors), and the
    row is priced for those."""
    net = network(2, EPS)
    for p, f in [(12, (4, 3)), (6, (3, 2)), (16, (4, 4)), (7, (7,))]:
        df = flowemu.simulate(f"tree:{p}", "hcps", sizes=SIZES_TEXT, network=net,
                              model="genmodel")
        sched = flowemu.simulate(f"tree:{p}", "hcps", sizes="1KiB", network=net)
        assert set(df["variant"]) == {"factors=" + "x".join(map(str, f))} \
            == set(sched["variant"])
        assert close(df["time_s"], [hcps_row(f, S, 2, EPS) for S in SIZES])
        assert set(df["steps"]) == {2 * len(f)} == set(sched["steps"])


def test_ranks_below_the_hosts_price_the_ranks():
    df = flowemu.simulate("tree:16", "cps", sizes=SIZES_TEXT, network=network(), ranks=6,
                          model="genmodel")
    assert close(df["time_s"], [printed_cps(6, S) for S in SIZES])
    assert set(df["ranks"]) == {6} and set(df["nodes"]) == {16}


# ------------------------------------------------------------------ flow = Table 2

@pytest.mark.parametrize("N", NS)
@pytest.mark.parametrize("w_t,eps", [(math.inf, 0.0), (2, EPS)])
def test_flow_ring_is_the_row(N, w_t, eps):
    """Ring (both ways: two flows into a receiver, below w_t = 2) — the row
    charges no incast and neither does the engine."""
    net = network(w_t, eps)
    assert close(flow(N, "ring", net), [printed_ring(N, S) for S in SIZES])
    assert close(flow(N, "ring", net), analytic(N, "ring", net))


@pytest.mark.parametrize("N", NS)
@pytest.mark.parametrize("w_t,eps", [(math.inf, 0.0), (1, EPS)])
def test_flow_rhd_is_the_row(N, w_t, eps):
    """RHD: pairwise exchanges (one flow into a receiver, so no incast even
    at w_t = 1). Powers of two: the row. Otherwise the plan halves on P =
    2^⌊log N⌋ ranks: the row minus S(1/P − 1/N)(2β + γ + 3δ)."""
    net = network(w_t, eps)
    P = 1 << (N.bit_length() - 1)
    want = [printed_rhd(N, S) - S * (1 / P - 1 / N) * (2 * B + GAMMA + 3 * DELTA)
            for S in SIZES]
    got = flow(N, "recdoub:variant=bandwidth", net)
    assert close(got, want)
    if P == N:
        assert close(got, analytic(N, "recdoub", net))
    else:
        assert np.all(got < analytic(N, "recdoub", net))


@pytest.mark.parametrize("N", NS)
@pytest.mark.parametrize("w_t", [math.inf, 1, 2, 4])
def test_flow_cps_is_the_row_with_flows_counted(N, w_t):
    """CPS: the engine counts N − 1 flows into each receiver where the row
    has fan-in N, so the engine at w_t is the row at w_t + 1 (incast live
    whenever N − 1 > w_t)."""
    net = network(w_t, EPS)
    got = flow(N, "cps", net)
    assert close(got, [printed_cps(N, S, w_t + 1, EPS) for S in SIZES])
    if math.isfinite(w_t) and N - 1 > w_t:
        assert np.all(got > np.array([printed_cps(N, S) for S in SIZES]) * (1 + 1e-6))


@pytest.mark.parametrize("f", HCPS)
@pytest.mark.parametrize("w_t", [math.inf, 1, 2])
def test_flow_hcps_is_the_row_with_flows_counted(f, w_t):
    """HCPS: step i has f_i − 1 flows into each receiver (the row: fan-in
    f_i), so again the row at w_t + 1; δ is the plan's (the reading above)."""
    N = math.prod(f)
    got = flow(N, "hcps:factors=" + "x".join(map(str, f)), network(w_t, EPS))
    assert close(got, [hcps_row(f, S, w_t + 1, EPS) for S in SIZES])


@pytest.mark.parametrize("N", NS)
@pytest.mark.parametrize("w_t", [math.inf, 1, 2, 4])
def test_flow_reduce_broadcast_is_the_row_without_broadcast_incast(N, w_t):
    """Reduce-Broadcast: N − 1 flows into the root (row at w_t + 1), and the
    broadcast has one flow into each receiver, no incast: the row's
    broadcast share (N − 1)S·max(N − 1 − w_t, 0)ε is not charged."""
    got = flow(N, "reduce-broadcast", network(w_t, EPS))
    want = [printed_reduce_broadcast(N, S, w_t + 1, EPS) - (N - 1) * S * xs(N - 1, w_t) * EPS
            for S in SIZES]
    assert close(got, want)


# ------------------------------------------------------------------ the switch's terms

def test_single_switch_terms_read_the_topology():
    net = network(3, EPS)
    t = gm.single_switch_terms(parse_topology("tree:8"), net)
    assert close([t.alpha, t.beta, t.gamma, t.delta, t.epsilon, t.w_t],
                 [A, B, GAMMA, DELTA, EPS, 3])
    # parallel uplinks add bandwidth; absolute level bandwidth and latency win
    t2 = gm.single_switch_terms(parse_topology("tree:8,uplinks=2,lat=1us"), net)
    assert close([t2.beta, t2.alpha], [B / 2, ALPHA + 2 * (1e-6 + HOP)])
    t3 = gm.single_switch_terms(parse_topology("tree:8,bw=80Gb/s"), network())
    assert close(t3.beta, 1 / 1e10) and t3.epsilon == 0 and math.isinf(t3.w_t)
    # per-level incast terms win over the network's
    t4 = gm.single_switch_terms(parse_topology("tree:8,eps=1ps,wt=5"), net)
    assert close([t4.epsilon, t4.w_t], [1e-12, 5])


def test_single_switch_terms_of_the_gentree_preset():
    """tree:SS24 (Table 5, Middle SW per float, 4 bytes a float): β = 6.40e-9
    s per float = 1.6e-9 s/B (5 Gb/s), each link α = 6.58e-3 s, ε = 1.22e-10
    per float, w_t = 9."""
    t = gm.single_switch_terms(parse_topology("tree:SS24"), Network.from_si(alpha=6.58e-3))
    assert close([t.beta, t.alpha, t.epsilon, t.w_t],
                 [6.4e-9 / 4, 6.58e-3 + 2 * 6.58e-3 + 2 * 300e-9, 1.22e-10 / 4, 9])
    # and the backend prices SS24's CPS with them (incast on: 24 > 9)
    df = flowemu.simulate("tree:SS24", "cps", sizes="4MB", network=Network.from_si(alpha=6.58e-3),
                          model="genmodel")
    S, N, a = 4e6, 24, t.alpha
    want = (2 * a + 2 * (N - 1) * S / N * t.beta + 2 * (N - 1) * S / N * (N - 9) * t.epsilon)
    assert close(df["time_s"], [want])


def test_one_rank_costs_nothing():
    """A predictor asked for one rank (simulate needs two): no step, no time."""
    pred = gm.prediction(parse_topology("tree:4"), 1, "cps", {}, SIZES, network())
    assert pred.seconds.tolist() == [0.0] * 3 and pred.steps == 0


# ------------------------------------------------------------------ API door

def test_rows_say_which_model_timed_them():
    f = flowemu.simulate("tree:4", "ring", sizes="1KiB")
    g = flowemu.simulate("tree:4", "ring", sizes="1KiB", model="genmodel")
    assert list(f.columns) == list(g.columns) == flowemu.RESULT_COLUMNS
    assert f["model"].tolist() == ["flow"] and g["model"].tolist() == ["genmodel"]
    rb = flowemu.simulate("tree:6", "recdoub", sizes="1KiB,1MiB", model="genmodel")
    assert set(rb["variant"]) == {"bandwidth"} and set(rb["steps"]) == {2 * 3}
    assert "bandwidth variant" in rb["note"].iloc[0]


@pytest.mark.parametrize("kw,needle", [
    ({"model": "analytic"}, "model: 'analytic' is not allowed; expected one of flow, genmodel"),
    ({"model": 3}, "model: 3 is not allowed"),
    ({"topology": "torus:4x4"}, "topology torus:4x4 is not a single switch"),
    ({"topology": "tree:4x4"}, "topology tree:4x4 is not a single switch"),
    ({"algorithm": "swing"}, ("algorithm 'swing' has no GenModel predictor; genmodel prices "
                              + ", ".join(__import__("flowemu.models.genmodel").models.genmodel
                                          .predictor_names()))),
    ({"algorithm": "recdoub:variant=latency"}, "variant=latency has no GenModel form"),
    ({"algorithm": "hcps:factors=4x4"}, "factors=4x4 multiply to 16, not the 8 ranks"),
])
def test_api_refusals(kw, needle):
    args = {"topology": "tree:8", "algorithm": "ring", "model": "genmodel"}
    args.update(kw)
    with pytest.raises(ConfigError) as exc:
        flowemu.simulate(args.pop("topology"), args.pop("algorithm"), sizes="1KiB", **args)
    assert needle in str(exc.value) and "\n" not in str(exc.value)


def test_registered_predictor_is_used(monkeypatch):
    """A predictor registered for an algorithm prices it (plain array
    returned); a wrong shape and a duplicate name are refused."""
    calls = []

    def fake(topology, p, sizes, net, options):
        calls.append((topology.spec, p, tuple(sizes), dict(options)))
        return sizes * 1e-9 + p

    monkeypatch.setitem(gm._PREDICTORS, "swing", fake)
    df = flowemu.simulate("torus:4x4", "swing:variant=latency", sizes="1KiB,2KiB",
                          model="genmodel")
    assert close(df["time_s"], [16 + 1024e-9, 16 + 2048e-9])
    # checked first on no sizes (check_simulation: can it be priced?), then priced
    assert [c[:3] for c in calls] == [("torus:4x4", 16, ()), ("torus:4x4", 16, (1024.0, 2048.0))]
    assert calls[-1][3]["variant"] == "latency"
    assert df["variant"].tolist() == ["", ""]
    monkeypatch.setitem(gm._PREDICTORS, "swing", lambda *a: np.zeros(5))
    with pytest.raises(ConfigError, match="returned 5 times for [02] sizes"):   # 0: checked
        flowemu.simulate("torus:4x4", "swing", sizes="1KiB,2KiB", model="genmodel")
    with pytest.raises(ValueError, match="already registered"):
        gm.register_predictor("ring", fake)
    with pytest.raises(TypeError, match="not callable"):
        gm.register_predictor("newname", 3)


# ------------------------------------------------------------------ CLI door

def test_cli_run_model(capsys):
    code, out, _ = run(capsys, ["run", "-t", "tree:8", "-a", "cps", "--sizes", "1MiB",
                                "--model", "genmodel", "-f", "csv"])
    assert code == 0
    df = pd.read_csv(io.StringIO(out))
    assert df["model"].tolist() == ["genmodel"]
    want = flowemu.simulate("tree:8", "cps", sizes="1MiB", model="genmodel")["time_s"]
    assert close(df["time_s"], want)
    code, out, _ = run(capsys, ["run", "-t", "tree:8", "-a", "cps", "--sizes", "1MiB",
                                "--model", "genmodel"])
    assert code == 0 and "genmodel" in out.splitlines()[1]
    code, out, _ = run(capsys, ["run", "-t", "tree:8", "-a", "cps", "--sizes", "1MiB"])
    assert code == 0 and "model" not in out.splitlines()[0]


@pytest.mark.parametrize("extra,needle", [
    (["--model", "gen"], "--model: 'gen' is not allowed; expected flow or genmodel"),
    (["-t", "torus:4x4", "--model", "genmodel"], "torus:4x4 is not a single switch"),
    (["-a", "swing", "--model", "genmodel"], "'swing' has no GenModel predictor"),
    (["--model", "genmodel", "--congestion", "-"], "--congestion: works with --model flow"),
    (["--model", "genmodel", "--flows-out", "x.csv"], "--flows-out: works with --model flow"),
])
def test_cli_refusals(capsys, tmp_path, extra, needle):
    base = ["run", "--sizes", "1KiB"]
    base += [] if "-t" in extra else ["-t", "tree:8"]
    base += [] if "-a" in extra else ["-a", "cps"]
    argv = base + [str(tmp_path / a) if a.startswith("x.") else a for a in extra]
    code, _, err = run(capsys, argv)
    assert code == 2
    assert needle in one_error_line(err)


# ------------------------------------------------------------------ sweep door

SWEEP = """
sizes = "1KiB,1MiB"
link_latency = "0"
hop_latency = "0"
alpha = "5us"
topology = ["tree:8", "tree:6"]
algorithm = ["ring", "cps", "hcps"]
"""


def test_sweep_crosses_models_and_keeps_flow_hashes(tmp_path):
    from flowemu.study.sweep import load_sweep
    plain = tmp_path / "s.toml"
    plain.write_text(SWEEP)
    both = tmp_path / "b" / "s.toml"
    both.parent.mkdir()
    both.write_text(SWEEP + 'model = ["flow", "genmodel"]\n')
    old = load_sweep(plain).configs
    new = load_sweep(both).configs
    assert len(new) == 2 * len(old)
    flow_new = {c.hash: c.key for c in new if c.model == "flow"}
    assert all("model" not in c.canonical() for c in old)   # the hashed fields as before
    assert all(c.canonical()["model"] == "genmodel" for c in new if c.model == "genmodel")
    assert flow_new == {c.hash: c.key for c in old}      # identity of flow configs unchanged
    gen = [c for c in new if c.model == "genmodel"]
    assert all(c.key.endswith("|model=genmodel|sizes=1KiB,1MiB") for c in gen)
    assert not {c.hash for c in gen} & set(flow_new)
    summary = flowemu.sweep(both, tmp_path / "ds", jobs=1, progress=False)
    assert summary.failed == 0
    df = flowemu.load(tmp_path / "ds")
    assert set(df["model"]) == {"flow", "genmodel"} and len(df) == 2 * 6 * 2
    # the genmodel rows are the API's prediction of the same configuration
    g = df[(df["model"] == "genmodel") & (df["topology"] == "tree:6") & (df["label"] == "cps")]
    api = flowemu.simulate("tree:6", "cps", sizes="1KiB,1MiB", link_latency=0, hop_latency=0,
                           alpha="5us", model="genmodel")
    assert close(g.sort_values("size_bytes")["time_s"], api["time_s"])
    # a where expression sees the model
    sel = tmp_path / "w" / "s.toml"
    sel.parent.mkdir()
    sel.write_text(SWEEP + 'model = ["flow", "genmodel"]\n'
                   'where = "model == \'flow\' or algorithm == \'cps\'"\n')
    assert len(load_sweep(sel).configs) == 6 + 2


def test_sweep_lists_every_pair_genmodel_cannot_price(tmp_path):
    from flowemu.study.sweep import load_sweep
    path = tmp_path / "bad.toml"
    path.write_text('topology = ["tree:8", "torus:4x4"]\nalgorithm = ["ring", "swing"]\n'
                    'model = ["flow", "genmodel"]\n')
    with pytest.raises(ConfigError) as exc:
        load_sweep(path)
    text = str(exc.value)
    assert "3 problems" in text
    for alg, topo in [("swing", "tree:8"), ("ring", "torus:4x4"), ("swing", "torus:4x4")]:
        assert f"model: genmodel cannot price {alg} on {topo} (" in text
    assert "cannot price ring on tree:8" not in text
    bad = tmp_path / "bad2.toml"
    bad.write_text('topology = "tree:8"\nalgorithm = "ring"\nmodel = ["flow", "gen"]\n')
    with pytest.raises(ConfigError, match=r"model\[1\]: 'gen' is not allowed; expected one "
                                          r"of 'flow', 'genmodel'"):
        load_sweep(bad)


def test_cli_sweep_refusal_one_report(capsys, tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('topology = "torus:4x4"\nalgorithm = "ring"\nmodel = "genmodel"\n')
    code, _, err = run(capsys, ["sweep", str(path), "-o", str(tmp_path / "ds"), "-q"])
    assert code == 2
    assert "genmodel cannot price ring on torus:4x4" in one_error_line(err)


# ------------------------------------------------------------------ compare and plot

@pytest.fixture(scope="module")
def both_models(tmp_path_factory):
    d = tmp_path_factory.mktemp("both")
    (d / "s.toml").write_text(
        SWEEP.replace('"tree:8", "tree:6"', '"tree:6"').replace('"ring", "cps", "hcps"',
                                                               '"cps", "recdoub:variant=bandwidth"')
        + 'model = ["flow", "genmodel"]\n')
    flowemu.sweep(d / "s.toml", d / "ds", jobs=1, progress=False)
    return d / "ds"


def test_compare_keeps_models_apart(both_models):
    df = flowemu.load(both_models)
    cmp = flowemu.results.compare(df)
    assert "model" in cmp.columns
    # every gain compares algorithms of one model: recomputed within the model
    for (model, size), sub in cmp.groupby(["model", "size_bytes"]):
        rows = df[(df["model"] == model) & (df["size_bytes"] == size)]
        assert len(sub) == 2 == len(rows)
        best = rows["goodput_Bps"].max()
        for r in sub.itertuples():
            other = rows[rows["label"] != r.algorithm]["goodput_Bps"].max()
            assert close(r.gain, r.goodput_Bps / other - 1)
            assert r.is_best == (r.goodput_Bps == best)


def test_compare_by_model_shows_where_they_part(both_models, capsys):
    """On tree:6 (no power of two) RHD's row is the printed accounting, S(1/4
    − 1/6)(2β + γ + 3δ) above the plan the engine runs; CPS agrees."""
    df = flowemu.load(both_models)
    cmp = flowemu.results.compare(df, by="model")
    assert list(cmp.columns) == ["topology", "nodes", "size_bytes", "algorithm", "flow_time_s",
                                 "genmodel_time_s", "ratio", "best_flow", "best_genmodel",
                                 "same_best"]
    for r in cmp.itertuples():
        f = df[(df.model == "flow") & (df.label == r.algorithm) & (df.size_bytes == r.size_bytes)]
        g = df[(df.model == "genmodel") & (df.label == r.algorithm)
               & (df.size_bytes == r.size_bytes)]
        assert close(r.ratio, g["time_s"].iloc[0] / f["time_s"].iloc[0])
    cps = cmp[cmp.algorithm == "cps"]
    assert close(cps["ratio"], 1.0)
    rhd = cmp[cmp.algorithm != "cps"]
    beta = 1 / Network().bandwidth
    assert close(rhd["genmodel_time_s"] - rhd["flow_time_s"],
                 rhd["size_bytes"] * (1 / 4 - 1 / 6) * 2 * beta)
    assert (rhd["ratio"] > 1).all() and cmp["same_best"].all()
    code, out, _ = run(capsys, ["compare", str(both_models), "--by", "model"])
    assert code == 0 and "genmodel/flow" in out.splitlines()[0]
    only = df[df.model == "flow"]
    with pytest.raises(ConfigError, match="holds model\\(s\\) flow only"):
        flowemu.results.compare(only, by="model")


def test_dataset_without_model_column_reads_as_flow(tmp_path, both_models):
    df = flowemu.load(both_models)
    old = df[df.model == "flow"].drop(columns="model")
    old.to_parquet(tmp_path / "old.parquet")
    back = flowemu.load(tmp_path / "old.parquet")
    assert back["model"].tolist() == ["flow"] * len(old)
    assert list(back.columns).index("model") == list(back.columns).index("algorithm") + 1
    # a directory mixing part files from before the column and after
    ds = tmp_path / "ds"
    shutil.copytree(both_models, ds)
    from flowemu.study.sweep.dataset import write_rows
    part = min(ds.glob("part-*.parquet"))
    table = pd.read_parquet(part)
    part.unlink()
    write_rows(ds, table.drop(columns="model"), part.name[:-len(".parquet")])
    mixed = flowemu.load(ds)
    assert mixed["model"].notna().all()
    assert (mixed["model"] == "flow").sum() == len(table) + (df.model == "flow").sum() \
        - (table.model == "flow").sum()


def test_plot_draws_genmodel_dashed_beside_flow(both_models):
    from flowemu.study.figures.plots import goodput_figure
    df = flowemu.load(both_models)
    for metric in ("time", "goodput"):
        fig = goodput_figure(df, metric=metric)
        axes = [ax for ax in fig.axes if ax.get_visible() and ax.get_lines()]
        assert len(axes) == 1                       # one scenario: models share the panel
        lines = {ln.get_label(): ln for ln in axes[0].get_lines()
                 if not ln.get_label().startswith("_")}
        assert set(lines) == {"cps", "cps · genmodel", "recdoub:variant=bandwidth",
                              "recdoub:variant=bandwidth · genmodel"}
        for lab in ("cps", "recdoub:variant=bandwidth"):
            flow_line, gen_line = lines[lab], lines[f"{lab} · genmodel"]
            assert gen_line.get_linestyle() == "--" and gen_line.get_marker() in ("none", "None")
            assert flow_line.get_linestyle() != "--"
            assert gen_line.get_color() == flow_line.get_color()
            col = "time_s" if metric == "time" else "goodput_Bps"
            scale = 1.0 if metric == "time" else 8 / 1e9
            rows = df[(df.model == "genmodel") & (df.label == lab)].sort_values("size_bytes")
            assert close(gen_line.get_ydata(), rows[col].to_numpy() * scale)
