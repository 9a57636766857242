"""Measured times beside flowemu's prediction (``flowemu fit --compare``),
on nccl-tests output made here from known parameters: ring allreduce on one
switch of P hosts takes 2(P−1)·(α + n/(P·b)) (latencies 0)."""

import numpy as np
import pytest

import flowemu
from flowemu.core.errors import ConfigError
from flowemu.core.presets import write_preset
from flowemu.study.measured import compare_measured
from tests.helpers.cli import one_error_line, run

ALPHA, BANDWIDTH, P = 5e-6, 100e9 / 8, 4     # s, bytes/s, ranks
SIZES = [1024 * 4**k for k in range(9)]        # 1 KiB .. 64 MiB


def ring_time(n):
    return 2 * (P - 1) * (ALPHA + n / (P * BANDWIDTH))


def nccl_text(times):
    """nccl-tests all_reduce_perf output (times in µs) for P ranks."""
    lines = ["# nThread 1 nGpus 1 minBytes 1024 maxBytes 67108864 step: 4(factor)", "#",
             "# Using devices"]
    lines += [f"#  Rank {r:2d} Group  0 Pid  {100 + r} on host{r} device  0 [0x07] GPU"
              for r in range(P)]
    lines += ["#", ("#       size         count      type   redop    root     time   algbw   "
                    "busbw #wrong     time   algbw   busbw #wrong"),
              ("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
               "            (us)  (GB/s)  (GB/s)")]
    for n, t in zip(SIZES, times, strict=True):
        us = t * 1e6
        lines.append(f"{n:12d} {n // 4:12d}     float     sum      -1 {us:12.6f}   1.00   "
                     f"1.00      0 {us:12.6f}   1.00   1.00      0")
    lines.append("# Avg bus bandwidth    : 1.0")
    return "\n".join(lines) + "\n"


@pytest.fixture
def measured(tmp_path):
    times = np.array([ring_time(n) for n in SIZES])
    times[4] *= 1.1    # one size measured 10 % slower than the model
    path = tmp_path / "nccl.txt"
    path.write_text(nccl_text(times))
    return path


@pytest.fixture
def preset(tmp_path):
    return write_preset(tmp_path / "net.toml", {"alpha": ALPHA, "bandwidth": BANDWIDTH,
                                                "link_latency": 0.0, "hop_latency": 0.0})


def test_given_network_predicts_the_closed_form(measured, preset):
    for network in (preset, flowemu.Network.from_si(alpha=ALPHA, bandwidth=BANDWIDTH,
                                                    link_latency=0, hop_latency=0)):
        rows = compare_measured(measured, network=network).rows
        expected = np.array([ring_time(n) for n in SIZES])
        np.testing.assert_allclose(rows["predicted"], expected, rtol=1e-12)
        error = np.zeros(len(SIZES))
        error[4] = 1 / 1.1 - 1
        np.testing.assert_allclose(rows["error"], error, atol=1e-7)
        assert set(rows["topology"]) == {"tree:4"} and set(rows["ranks"]) == {P}


def test_fitted_network_reproduces_exact_measurements(tmp_path):
    path = tmp_path / "exact.txt"
    path.write_text(nccl_text([ring_time(n) for n in SIZES]))
    result = compare_measured(path)
    assert result.network_source == "fitted to the measurements"
    assert np.abs(result.rows["error"]).max() < 1e-6
    assert result.network.bandwidth == pytest.approx(BANDWIDTH, rel=1e-6)
    assert result.network.alpha == pytest.approx(ALPHA, rel=1e-6)


def test_given_topology_and_genmodel(measured, preset):
    rows = compare_measured(measured, network=preset, topology="torus:2x2").rows
    assert set(rows["topology"]) == {"torus:2x2"}
    genmodel = compare_measured(measured, network=preset, model="genmodel").rows
    np.testing.assert_allclose(genmodel["predicted"], [ring_time(n) for n in SIZES],
                               rtol=1e-12)
    with pytest.raises(ConfigError, match="bandwidth: applies to the fit"):
        compare_measured(measured, network=preset, bandwidth="100Gb/s")


def test_cli_compare_table_and_plot(capsys, measured, preset, tmp_path):
    fig = tmp_path / "cmp.png"
    code, out, err = run(capsys, ["fit", str(measured), "--compare", "--network",
                                  str(preset), "--plot", str(fig)])
    assert code == 0, err
    assert "measured against flowemu (flow model; network" in out
    assert "-9.09%" in out and out.count("+0.00%") + out.count("-0.00%") == len(SIZES) - 1
    assert fig.stat().st_size > 0 and "rms relative residual" not in out   # no fit made
    code, out, err = run(capsys, ["fit", str(measured), "--compare"])
    assert code == 0, err
    assert "rms relative residual" in out and "network fitted to the measurements" in out


@pytest.mark.parametrize("argv, needle", [
    (["--network", "x.toml"], "--network applies with --compare only"),
    (["--compare", "--network", "x.toml", "--save", "p.toml"], "--save writes the fit"),
    (["--compare", "--network", "nope"], "--network: "),
    # the measured ranks, not a --ranks never given (it blamed --ranks)
    (["--compare", "-t", "torus:3"], ("--topology: torus:3 has 3 endpoints; the "
                                        "measurements have 4 ranks")),
])
def test_cli_compare_refusals(capsys, measured, argv, needle):
    code, _, err = run(capsys, ["fit", str(measured), *argv])
    assert code == 2 and needle in one_error_line(err)
