"""The ``traffic`` field of sweep files: a user's traffic file timed in place
of an algorithm, as ``flowemu run --traffic`` times it; its checks before
any work, its labels and its identity."""

import pandas as pd
import pytest

from flowemu.study.results import compare, load
from flowemu.study.sweep import SweepConfigError, load_sweep, sweep
from tests.helpers.cli import run

BANDWIDTH = 50e9      # bytes/s ("400Gb/s")
LINK_LATENCY = 100e-9
HOP_LATENCY = 300e-9
ALPHA = 1e-6


def write_traffic(path, rows):
    pd.DataFrame(rows, columns=["step", "src", "dst", "bytes"]).to_csv(path, index=False)
    return path


def write(tmp_path, text, name="cfg.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


NETWORK = """
bandwidth = "400Gb/s"
link_latency = "100ns"
hop_latency = "300ns"
alpha = "1us"
"""


def test_one_flow_over_one_link_is_latency_plus_bytes_over_bandwidth(tmp_path):
    # one flow of B bytes between ring neighbours: one link, nothing shares it
    nbytes = 3 * 2**20
    (tmp_path / "data").mkdir()
    write_traffic(tmp_path / "data" / "one.csv", [(0, 0, 1, nbytes)])
    cfg = write(tmp_path, NETWORK + 'topology = "torus:8"\ntraffic = "data/one.csv"\n')
    sweep(cfg, tmp_path / "out", progress=False, jobs=1)
    df = load(tmp_path / "out")
    assert len(df) == 1
    row = df.iloc[0]
    expected = ALPHA + LINK_LATENCY + HOP_LATENCY + nbytes / BANDWIDTH
    assert abs(row["time_s"] - expected) <= 1e-12 * expected
    assert row["algorithm"] == "traffic" and row["label"] == "traffic:one.csv"
    assert row["variant"] == "one.csv" and row["size_bytes"] == nbytes


def test_sweep_time_equals_run_traffic(tmp_path, capsys):
    # two steps, a ring shift then a crossing pattern that shares links
    rows = [(0, r, (r + 1) % 16, 2**20) for r in range(16)] \
        + [(1, r, (r + 5) % 16, 3 * 2**19) for r in range(16)]
    write_traffic(tmp_path / "shift.csv", rows)
    write_traffic(tmp_path / "one.csv", [(0, 0, 5, 2**20)])
    cfg = write(tmp_path, NETWORK + 'topology = "torus:4x4"\n'
                                    'traffic = ["shift.csv", "one.csv"]\n'
                                    'ecmp = ["split", "dor"]\n')
    assert len(load_sweep(cfg).configs) == 4
    sweep(cfg, tmp_path / "out", progress=False, jobs=1)
    df = load(tmp_path / "out")
    for ecmp in ("split", "dor"):
        out = tmp_path / f"run-{ecmp}.parquet"
        code, _, err = run(capsys, ["run", "-t", "torus:4x4", "--traffic",
                                    str(tmp_path / "shift.csv"), "--bandwidth", "400Gb/s",
                                    "--link-latency", "100ns", "--hop-latency", "300ns",
                                    "--alpha", "1us", "--ecmp", ecmp, "-o", str(out)])
        assert code == 0, err
        alone = pd.read_parquet(out)["time_s"].iloc[0]
        mine = df[(df["label"] == "traffic:shift.csv") & (df["ecmp"] == ecmp)]["time_s"]
        assert len(mine) == 1 and abs(mine.iloc[0] - alone) <= 1e-12 * alone
    # compare ranks the traffic files of one scenario by their labels
    assert set(compare(df)["algorithm"]) == {"traffic:shift.csv", "traffic:one.csv"}


def test_traffic_in_a_group_beside_algorithms(tmp_path):
    write_traffic(tmp_path / "t.csv", [(0, 0, 1, 1024)])
    cfg = write(tmp_path, 'topology = "torus:4x4"\nalgorithm = "ring"\nsizes = "1KiB"\n'
                          '[groups.algs]\n[groups.mine]\ntraffic = "t.csv"\n')
    plan = load_sweep(cfg)
    assert [c.label for c in plan.groups["algs"]] == ["ring"]
    assert [c.label for c in plan.groups["mine"]] == ["traffic:t.csv"]


@pytest.mark.parametrize("text, needle", [
    ('traffic = "nope.csv"', "traffic: nope.csv: file not found; looked for"),
    ('traffic = ["t.csv", 3]', "traffic[1]: expected the path"),
    ('traffic = "bad.csv"', "missing column(s) bytes"),
    ('traffic = "t.csv"\nalgorithm = "ring"', "algorithm: does not apply beside traffic"),
    ('traffic = "t.csv"\nsizes = "1KiB"', "sizes: does not apply beside traffic"),
    ('traffic = "t.csv"\nranks = 4', "ranks does not apply to traffic"),
    ('traffic = "t.csv"\nmodel = "genmodel"', "model = \"flow\" only"),
    ('traffic = "far.csv"', "uses rank 99, which does not exist on torus:4x4"),
    # fractional bytes: the sweep wrote its rows with a traceback (size_bytes is an
    # integer column of a dataset)
    ('traffic = "half.csv"', ("column bytes row 0 (line 2): 1024.5 is not a whole number of "
                              "bytes, as a sweep's size_bytes column holds them")),
    # what a reduction costs: traffic reduces nothing (the row recorded gamma, the
    # time was the same)
    ('traffic = "t.csv"\ngamma = "1ns"', "gamma: does not apply beside traffic"),
    ('traffic = "t.csv"\ndelta = "1ns"', "delta: does not apply beside traffic"),
    ('traffic = "t.csv"\nslow = ["1=0.5", "1=0.5:compute"]',
     "slow '1=0.5:compute' slows a rank's reduction, and traffic 't.csv' has none"),
])
def test_bad_traffic_is_refused_up_front_naming_field_and_file(tmp_path, text, needle):
    write_traffic(tmp_path / "t.csv", [(0, 0, 1, 1024)])
    write_traffic(tmp_path / "far.csv", [(0, 0, 99, 1024)])
    write_traffic(tmp_path / "half.csv", [(0, 0, 1, 1024.5)])
    pd.DataFrame({"step": [0], "src": [0], "dst": [1]}).to_csv(tmp_path / "bad.csv",
                                                              index=False)
    cfg = write(tmp_path, f'topology = "torus:4x4"\n{text}\n')
    with pytest.raises(SweepConfigError) as exc:
        load_sweep(cfg)
    msg = str(exc.value)
    assert needle in msg, msg
    if needle.startswith(("traffic: nope.csv", "missing", "uses rank", "column bytes")):
        assert text.split('"')[1] in msg   # the file is named


def test_identity_is_the_file_name_and_contents(tmp_path):
    write_traffic(tmp_path / "t.csv", [(0, 0, 1, 1024)])
    cfg = write(tmp_path, 'topology = "torus:4x4"\ntraffic = "t.csv"\n')
    first = load_sweep(cfg).configs[0]
    assert first.key == "main|torus:4x4|traffic:t.csv|sizes="
    # the same file elsewhere is the same configuration; edited, a new one
    other = tmp_path / "elsewhere"
    other.mkdir()
    write_traffic(other / "t.csv", [(0, 0, 1, 1024)])
    moved = write(other, 'topology = "torus:4x4"\ntraffic = "t.csv"\n')
    assert load_sweep(moved).configs[0].hash == first.hash
    write_traffic(tmp_path / "t.csv", [(0, 0, 1, 2048)])
    assert load_sweep(cfg).configs[0].hash != first.hash


def test_a_failure_policy_is_one_configuration_for_traffic(tmp_path):
    # traffic is always routed over the surviving links: 'reroute' would time
    # the same flows again, and time_traffic refuses it
    write_traffic(tmp_path / "t.csv", [(0, 0, 1, 1024), (0, 1, 2, 2048)])
    cfg = write(tmp_path, 'topology = "torus:4x4"\ntraffic = "t.csv"\nfail = "0,0-1,0"\n'
                          'fail_policy = ["strict", "reroute"]\n')
    configs = load_sweep(cfg).configs
    assert [(c.fail, c.fail_policy) for c in configs] == [("0,0-1,0", "strict")]


def test_every_problem_of_a_traffic_list_is_said_at_once(tmp_path):
    """A malformed file hid the good files' grid checks (a rank beyond the
    topology was said only once the other file was mended)."""
    write_traffic(tmp_path / "t.csv", [(0, 0, 1, 1024)])
    write_traffic(tmp_path / "far.csv", [(0, 0, 99, 1024)])
    write_traffic(tmp_path / "half.csv", [(0, 0, 1, 1024.5)])
    pd.DataFrame({"step": [0], "src": [0], "dst": [1]}).to_csv(tmp_path / "bad.csv",
                                                              index=False)
    cfg = write(tmp_path, 'topology = "torus:4x4"\ntraffic = ["bad.csv", "far.csv", "t.csv"]\n')
    with pytest.raises(SweepConfigError) as exc:
        load_sweep(cfg)
    msg = str(exc.value)
    assert "traffic[0]: traffic '" in msg and "bad.csv': missing column(s) bytes" in msg
    assert "traffic 'far.csv' uses rank 99, which does not exist on torus:4x4" in msg
    # a good file beside a bad one runs nothing: the sweep is refused whole
    cfg.write_text('topology = "torus:4x4"\ntraffic = ["bad.csv", "t.csv"]\n')
    with pytest.raises(SweepConfigError, match="missing column"):
        sweep(cfg, tmp_path / "out", progress=False, jobs=1)
    assert not (tmp_path / "out").exists()
