"""What-if fields of sweep files (issue 16): failed and degraded links, the
failure policy, Monte-Carlo failures (``failures`` × ``failure_seed``), slow
ranks, background traffic and ``ecmp = "adaptive"``; their validation at plan
time, their identity (hash), resume, and the dataset columns."""

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import flowemu
from flowemu.core.network import Network
from flowemu.study.results import load
from flowemu.study.sweep import SweepConfigError, config_hash, load_sweep, sweep
from flowemu.whatif.conditions import WHATIF_COLUMNS

SIZES = [1024, 65536]


def write(tmp_path, text, name="cfg.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def quiet(path, out, **kw):
    return sweep(path, out, progress=False, jobs=1, **kw)


def alone(cfg, **kw):
    """The configuration's times from an independent flowemu.simulate call."""
    df = flowemu.simulate(cfg.topology, cfg.algorithm, SIZES, ecmp=cfg.ecmp, **kw)
    return df["time_s"].to_numpy()


MONTE_CARLO = """
sizes = ["1KiB", "64KiB"]
topology = "torus:4x4"
algorithm = ["recdoub:variant=bandwidth", "swing"]
failures = [0, 1, 4]
failure_seed = [0, 1, 2]
"""


# ------------------------------------------------------------------ Monte-Carlo failures

def test_failures_times_seeds_expand_and_match_simulate(tmp_path):
    plan = load_sweep(write(tmp_path, MONTE_CARLO))
    # K = 0 adds no failure: its three seeds are one (healthy) configuration
    assert len(plan.configs) == 2 * (1 + 3 + 3)
    for alg in ("recdoub", "swing"):
        fails = sorted(c.fail for c in plan.configs if c.label.startswith(alg))
        want = [""] + [f"random:{k}:{s}" for k in (1, 4) for s in (0, 1, 2)]
        assert fails == sorted(want)
    assert all(c.fail_policy == "strict" for c in plan.configs)
    summary = quiet(plan.path, tmp_path / "d")
    assert summary.computed == 14 and not summary.errors
    df = load(tmp_path / "d")
    assert len(df) == 14 * len(SIZES)
    by_cfg = {c.hash: c for c in plan.configs}
    for h, rows in df.groupby("config_hash"):
        cfg = by_cfg[h]
        rows = rows.sort_values("size_bytes")
        assert (rows["fail"] == cfg.fail).all()
        k = cfg.failures
        assert (rows["failed_links"] == k).all()   # k cables drawn, both directions one
        want = alone(cfg, fail=cfg.fail or None)
        np.testing.assert_allclose(rows["time_s"].to_numpy(), want, rtol=1e-12)
    # every row pairs with its healthy twin (K = 0): the slowdown of the failures
    from flowemu.study.results import slowdown
    sd = slowdown(df)
    assert sd["slowdown"].notna().all()
    assert (sd.loc[sd["failed_links"] == 0, "slowdown"] == 1).all()
    assert (sd.loc[sd["failed_links"] == 4, "slowdown"] > 1).any()


def test_explicit_fail_and_draw_combine(tmp_path):
    text = """
    sizes = "1KiB"
    topology = "torus:4x4"
    algorithm = "recdoub"
    fail = ["", "0,0-1,0", "0,0-1,0; 2,2-2,3"]
    failures = [0, 1]
    """
    plan = load_sweep(write(tmp_path, text))
    assert sorted(c.fail for c in plan.configs) == sorted([
        "", "0,0-1,0", "0,0-1,0;2,2-2,3", "random:1:0", "0,0-1,0;random:1:0",
        "0,0-1,0;2,2-2,3;random:1:0"])
    # the key shows the what-if, the dry run prints the key
    assert any("|fail=0,0-1,0;random:1:0|" in c.key for c in plan.configs)


def test_failure_seed_without_failures_is_refused(tmp_path):
    text = MONTE_CARLO.replace("failures = [0, 1, 4]", "failures = 0")
    with pytest.raises(SweepConfigError) as err:
        load_sweep(write(tmp_path, text))
    assert [loc for loc, _ in err.value.problems] == ["failure_seed"]
    assert "applies only with failures > 0" in err.value.problems[0][1]


def test_where_and_exclude_see_the_what_if_fields(tmp_path):
    text = MONTE_CARLO + """
    [[exclude]]
    algorithm = "swing"
    failures = 4
    """
    plan = load_sweep(write(tmp_path, text.replace("failure_seed = [0, 1, 2]",
                                                    "failure_seed = [0, 1, 2]\n"
                                                    "where = \"failure_seed < 2\"")))
    assert len([c for c in plan.configs if c.label.startswith("recdoub")]) == 1 + 2 + 2
    assert len([c for c in plan.configs if c.label == "swing"]) == 1 + 2


# ------------------------------------------------------------------ identity

def test_healthy_configurations_keep_their_hash(tmp_path):
    """A configuration without what-ifs hashes exactly as before the fields
    existed: its canonical dict, written out here field by field."""
    text = """
    sizes = ["1KiB", "64KiB"]
    topology = "torus:4x4"
    algorithm = "ring"
    bandwidth = "400Gb/s"
    """
    (cfg,) = load_sweep(write(tmp_path, text)).configs
    net = Network.from_si(bandwidth=50e9)
    canonical = {"group": "main", "topology": "torus:4x4", "algorithm": "ring:ports=max",
                 "ranks": None, "sizes": [1024, 65536], "ecmp": "split", "seed": 0,
                 **{k: float(f"{v:.12g}") for k, v in net.as_dict().items()}}
    assert cfg.hash == config_hash(canonical)
    assert cfg.key == "main|torus:4x4|ring:ports=max|sizes=1KiB,64KiB"
    # the what-if defaults spelled out change nothing
    spelled = text + 'fail = ""\ndegrade = ""\nfail_policy = "strict"\nslow = ""\n' \
                     'background = ""\nfailures = 0\nfailure_seed = 0\n'
    (same,) = load_sweep(write(tmp_path, spelled, "b.toml")).configs
    assert (same.hash, same.key) == (cfg.hash, cfg.key)
    # a policy without failures is the healthy configuration too
    (pol,) = load_sweep(write(tmp_path, text + 'fail_policy = "reroute"\n', "c.toml")).configs
    assert (pol.hash, pol.fail_policy) == (cfg.hash, "strict")
    # a what-if enters the canonical dict (and so the hash) by its canonical text
    # (rerouted: under the strict policy the ring on a failed link is refused)
    (bad,) = load_sweep(write(tmp_path, text + 'fail = " 0,0 - 1,0 "\nfail_policy = "reroute"\n',
                              "d.toml")).configs
    assert bad.fail == "0,0-1,0"
    assert bad.hash == config_hash({**canonical, "fail": "0,0-1,0", "fail_policy": "reroute"})


def test_background_file_is_identified_by_its_contents(tmp_path):
    bg = tmp_path / "bg.csv"
    bg.write_text("step,src,dst,bytes\n0,0,5,1e9\n")
    text = f"""
    sizes = "1KiB"
    topology = "torus:4x4"
    algorithm = "recdoub"
    background = "{bg}"
    """
    first = load_sweep(write(tmp_path, text)).configs[0]
    bg.write_text("step,src,dst,bytes\n0,0,5,2e9\n")
    second = load_sweep(write(tmp_path, text)).configs[0]
    assert first.key == second.key and first.hash != second.hash


# ------------------------------------------------------------------ resume

def test_resume_computes_only_new_seeds(tmp_path):
    path = write(tmp_path, MONTE_CARLO)
    first = quiet(path, tmp_path / "d")
    assert (first.computed, first.reused) == (14, 0)
    again = quiet(path, tmp_path / "d")
    assert (again.computed, again.reused) == (0, 14)
    path.write_text(MONTE_CARLO.replace("failure_seed = [0, 1, 2]",
                                        "failure_seed = [0, 1, 2, 3]"))
    more = quiet(path, tmp_path / "d")
    # seed 3 of K = 1 and K = 4, for each algorithm; K = 0 stays one configuration
    assert (more.computed, more.reused) == (4, 14)
    df = load(tmp_path / "d")
    assert set(df.loc[df["fail"].str.endswith(":3"), "fail"]) == {"random:1:3", "random:4:3"}


# ------------------------------------------------------------------ validation

def test_bad_values_are_reported_with_locations_all_at_once(tmp_path):
    text = f"""
    sizes = "1KiB"
    topology = "torus:4x4"
    algorithm = "recdoub"

    [groups.policy]
    fail = "0,0-1,0"
    fail_policy = "lenient"

    [groups.selector]
    fail = ["", "node:99"]

    [groups.slow]
    slow = "20=0.5"

    [groups.background]
    background = "{tmp_path / 'missing.csv'}"

    [groups.genmodel]
    model = ["flow", "genmodel"]
    failures = 1

    [groups.types]
    degrade = 0.5
    failures = -1
    failure_seed = "x"
    """
    with pytest.raises(SweepConfigError) as err:
        load_sweep(write(tmp_path, text))
    probs = dict(err.value.problems)
    assert set(probs) == {"groups.policy.fail_policy", "groups.selector.fail[1]",
                          "groups.slow.slow", "groups.background.background",
                          "groups.genmodel.model", "groups.types.degrade",
                          "groups.types.failures", "groups.types.failure_seed"}
    assert "'lenient' is not allowed" in probs["groups.policy.fail_policy"]
    assert "'strict' or 'reroute'" in probs["groups.policy.fail_policy"]
    assert "99" in probs["groups.selector.fail[1]"]
    assert "torus:4x4" in probs["groups.selector.fail[1]"]
    assert "20" in probs["groups.slow.slow"] and "16 ranks" in probs["groups.slow.slow"]
    assert "missing.csv" in probs["groups.background.background"]
    assert "does not exist" in probs["groups.background.background"]
    assert "genmodel" in probs["groups.genmodel.model"]
    assert "got a number" in probs["groups.types.degrade"]
    assert "-1 is not allowed" in probs["groups.types.failures"]
    assert "'x' is not allowed" in probs["groups.types.failure_seed"]
    # the messages do not repeat the field the location names
    assert not any(m.startswith(("fail", "slow:", "background:")) for m in probs.values())


def test_draw_larger_than_the_fabric_names_failures_and_seed(tmp_path):
    text = """
    sizes = "1KiB"
    topology = "torus:4x4"
    algorithm = "recdoub"
    failures = [1, 1000]
    failure_seed = 7
    """
    with pytest.raises(SweepConfigError) as err:
        load_sweep(write(tmp_path, text))
    ((loc, msg),) = err.value.problems
    assert loc == "failures[1]" and "1000" in msg and "failure_seed 7" in msg


def test_cli_reports_a_bad_policy(tmp_path, capsys):
    from flowemu.cli.app import main
    path = write(tmp_path, MONTE_CARLO + 'fail_policy = "sometimes"\n')
    assert main(["sweep", "--dry-run", str(path)]) == 2
    err = capsys.readouterr().err
    assert "fail_policy" in err and "sometimes" in err and "Traceback" not in err


def test_dry_run_shows_the_what_ifs(tmp_path, capsys):
    from flowemu.cli.app import main
    path = write(tmp_path, MONTE_CARLO + 'slow = "3=0.5"\n')
    assert main(["sweep", "--dry-run", str(path)]) == 0
    out = capsys.readouterr().out
    assert "|fail=random:4:2|slow=3=0.5|" in out
    assert "14 configurations" in out


# ------------------------------------------------------------------ end to end

def test_degrade_slow_background_policy_and_adaptive_run(tmp_path):
    bg = tmp_path / "bg.csv"
    bg.write_text("step,src,dst,bytes\n0,0,5,1e10\n0,3,12,2e10\n")
    text = f"""
    sizes = ["1KiB", "64KiB"]

    [groups.tree]
    topology = "fattree:k=4"
    algorithm = ["recdoub", "ring"]
    ecmp = ["split", "adaptive"]
    degrade = ["", "core:0=0.5", "agg:1=0.25:lat=2"]
    slow = ["", "3=0.5"]

    [groups.torus]
    topology = "torus:4x4"
    algorithm = "ring"
    fail = "0,0-1,0"
    fail_policy = "reroute"
    background = ["perm:0.5:3", "{bg}"]
    """
    plan = load_sweep(write(tmp_path, text))
    assert len(plan.groups["tree"]) == 2 * 2 * 3 * 2 and len(plan.groups["torus"]) == 2
    summary = quiet(plan.path, tmp_path / "d")
    assert not summary.errors and summary.computed == len(plan.configs)
    df = load(tmp_path / "d")
    assert list(df.columns[df.columns.get_loc("fail"):][:len(WHATIF_COLUMNS)]) == WHATIF_COLUMNS
    by_cfg = {c.hash: c for c in plan.configs}
    for h, rows in df.groupby("config_hash"):
        cfg = by_cfg[h]
        rows = rows.sort_values("size_bytes")
        for col in ("fail", "degrade", "fail_policy", "slow", "background"):
            assert (rows[col] == getattr(cfg, col)).all(), col
        want = alone(cfg, fail=cfg.fail or None, degrade=cfg.degrade or None,
                     fail_policy=cfg.fail_policy, slow=cfg.slow or None,
                     background=cfg.background or None)
        np.testing.assert_allclose(rows["time_s"].to_numpy(), want, rtol=1e-12)
        assert rows["background_Bps"].notna().all() == bool(cfg.background)
    torus = df[df["group"] == "torus"]
    assert (torus["fail_policy"] == "reroute").all() and (torus["failed_links"] == 1).all()
    assert (torus["background_Bps"] > 0).all()
    # a degraded core link on the paths slows recdoub under split routing
    tree = df[(df["group"] == "tree") & (df["size_bytes"] == 65536) & (df["slow"] == "")
              & (df["algorithm"] == "recdoub") & (df["ecmp"] == "split")]
    t = dict(zip(tree["degrade"], tree["time_s"]))
    assert t["core:0=0.5"] > t[""]


def test_strict_policy_refusal_and_cut_off_ranks_fail_the_sweep_up_front(tmp_path):
    text = """
    sizes = "1KiB"
    topology = "torus:4x4"
    algorithm = "ring"
    fail = ["0,0-1,0", "node:5"]
    slow = "2=0.5"
    """
    with pytest.raises(SweepConfigError) as e:
        quiet(write(tmp_path, text), tmp_path / "d")
    (loc0, msg0), (loc1, msg1) = e.value.problems
    assert (loc0, loc1) == ("fail[0]", "fail[1]")
    assert "|fail=0,0-1,0|slow=2=0.5|" in msg0 and "reroute" in msg0  # strict: the bound ring
    assert "|fail=node:5|" in msg1 and "cuts off node 5 (rank 5)" in msg1
    assert not (tmp_path / "d").exists()


# ------------------------------------------------------------------ old datasets

def _old_part(tmp_path, with_whatif: bool):
    """A dataset part file as written before the what-if columns existed (or after)."""
    from flowemu.study.sweep.dataset import SWEEP_COLUMNS
    row = {c: "x" for c in SWEEP_COLUMNS}
    row.update(topology="torus:4x4", nodes=16, ranks=16, algorithm="ring", model="flow",
               variant="", options="", size_bytes=1024, time_s=1e-6, goodput_Bps=1e9,
               steps=30, ecmp="split", seed=0, placement="linear", note="",
               flowemu_version="0")
    if with_whatif:
        row.update(fail="random:1:0", degrade="", fail_policy="reroute", slow="",
                   background="perm:0.5", failed_links=1, background_Bps=3e9)
    return pa.Table.from_pandas(pd.DataFrame([row]), preserve_index=False)


def test_old_datasets_load_with_the_healthy_defaults(tmp_path):
    old = tmp_path / "old"
    old.mkdir()
    pq.write_table(_old_part(tmp_path, False), old / "part-a-00000.parquet")
    df = load(old)
    assert list(df.columns[df.columns.get_loc("fail"):]) == WHATIF_COLUMNS + [
        "note", "flowemu_version", "sync", "collective", "algbw_Bps", "busbw_Bps"]
    assert set(df["sync"]) == {"barrier"}   # rows written before dataflow ran at a barrier
    assert set(df["collective"]) == {"allreduce"}   # and before collectives, allreduces
    row = df.iloc[0]
    assert (row["fail"], row["degrade"], row["fail_policy"], row["slow"], row["background"]) \
        == ("", "", "strict", "", "")
    assert row["failed_links"] == 0 and np.isnan(row["background_Bps"])
    # old and new part files in one dataset: the old rows are healthy, the new keep theirs
    pq.write_table(_old_part(tmp_path, True), old / "part-b-00000.parquet")
    df = load(old).sort_values("fail")
    assert list(df["fail"]) == ["", "random:1:0"]
    assert list(df["fail_policy"]) == ["strict", "reroute"]
    assert list(df["failed_links"]) == [0, 1] and df["failed_links"].dtype == np.int64
    assert np.isnan(df["background_Bps"].iloc[0]) and df["background_Bps"].iloc[1] == 3e9


def test_every_what_if_of_one_configuration_is_reported(tmp_path):
    """A bad selector, degrade factor, slow rank and missing background file
    in one group: four problems in one report, not one per try."""
    path = write(tmp_path, """
topology = "torus:4x4"
algorithm = "swing"
sizes = "1KiB"
[groups.a]
fail = "9,9"
degrade = "0,0-1,0=2"
slow = "99=0.5"
background = "missing.csv"
""")
    with pytest.raises(SweepConfigError) as err:
        load_sweep(path)
    locs = [loc for loc, _ in err.value.problems]
    assert locs == ["groups.a.fail", "groups.a.degrade", "groups.a.slow", "groups.a.background"]


def test_one_background_written_several_ways_is_one_configuration(tmp_path):
    """perm:0.5, perm:0.5:0 (seed 0 is the default), perm:0.50 and perm:.5
    are one background: they ran as four configurations with the same
    times, four scenarios in compare. Its canonical text is in the rows, and
    simulate's row shows the same."""
    path = write(tmp_path, 'sizes = "1KiB"\ntopology = "torus:4x4"\nalgorithm = "ring"\n'
                           'background = ["perm:0.5", "perm:0.5:0", "perm:0.50", "perm:.5", '
                           '"perm:0.5:3", "hotspot:0.2:0"]\n')
    plan = load_sweep(path)
    assert [c.background for c in plan.configs] == ["perm:0.5", "perm:0.5:3", "hotspot:0.2"]
    assert plan.notes == [f"background: {b!r} is the same as 'perm:0.5'; the grid counts it once"
                          for b in ("perm:0.5:0", "perm:0.50", "perm:.5")]
    # perm:0.5 keeps the hash it had (the text was already canonical)
    plain = write(tmp_path, 'sizes = "1KiB"\ntopology = "torus:4x4"\nalgorithm = "ring"\n'
                            'background = "perm:0.5"\n', "plain.toml")
    assert load_sweep(plain).configs[0].hash == plan.configs[0].hash
    row = flowemu.simulate("torus:4x4", "ring", "1KiB", background="perm:.50:0")
    assert row["background"][0] == "perm:0.5"
    assert row["time_s"][0] == flowemu.simulate("torus:4x4", "ring", "1KiB",
                                                background="perm:0.5")["time_s"][0]


def test_one_slow_rank_written_several_ways_is_one_configuration(tmp_path):
    """3=0.5, 3=0.50, 3-3=0.5 and ' 3 = 0.5 ' slow the same rank alike: they
    ran as separate configurations with equal times."""
    path = write(tmp_path, 'sizes = "1KiB"\ntopology = "torus:4x4"\nalgorithm = "ring"\n'
                           'slow = ["3=0.5", "3=0.50", "3-3=0.5", " 3 = 0.5 ", '
                           '"3=0.5:NETWORK", "random:04:1=0.25"]\n')
    plan = load_sweep(path)
    assert [c.slow for c in plan.configs] == ["3=0.5", "3=0.5:network", "random:4:1=0.25"]
    assert plan.notes[:3] == [f"slow: {s!r} is the same as '3=0.5'; the grid counts it once"
                              for s in ("3=0.50", "3-3=0.5", " 3 = 0.5 ")]
    row = flowemu.simulate("torus:4x4", "ring", "1KiB", slow="3-3=0.50")
    assert row["slow"][0] == "3=0.5"
    assert row["time_s"][0] == flowemu.simulate("torus:4x4", "ring", "1KiB",
                                                slow="3=0.5")["time_s"][0]


def test_a_failure_or_degradation_that_reads_the_same_is_noted(tmp_path):
    """'0,0-0,1=.5' and '0,0-0,1=0.5', or '0,0-0,1; 0,0-0,1' and '0,0-0,1',
    read the same on the topology and were merged into one configuration
    without the note every other repeated value gets."""
    path = write(tmp_path, 'sizes = "1KiB"\ntopology = "torus:4x4"\nalgorithm = "ring"\n'
                           'fail_policy = "reroute"\n'
                           'degrade = ["0,0-0,1=0.5", "0,0-0,1=.5"]\n'
                           'fail = ["", "0,0-0,1; 0,0-0,1", "0,0-0,1"]\n')
    plan = load_sweep(path)
    assert len(plan.configs) == 2
    assert plan.notes == [
        ("degrade[1]: '0,0-0,1=.5' is the same as '0,0-0,1=0.5' on torus:4x4; the grid counts "
        "it once"),
        ("fail[2]: '0,0-0,1' is the same as '0,0-0,1;0,0-0,1' on torus:4x4; the grid counts it "
        "once")]


def test_an_integer_range_a_missing_background_file_and_a_repeated_key(tmp_path,
                                                                        monkeypatch):
    """Three refusals a new user found unhelpful: failure_seed = "0..19"
    said only "expected an integer"; a background file in neither place
    named a relative path, not where it was looked for (as a traffic file's
    refusal does); and a refusal listed one configuration twice, once per
    seed the routing ignores."""
    head = 'sizes = "1KiB"\ntopology = "torus:4x4"\nalgorithm = "ring"\n'
    path = write(tmp_path, head + 'failures = [1]\nfail_policy = "reroute"\n'
                                  'failure_seed = "0..19"\n')
    with pytest.raises(SweepConfigError) as err:
        load_sweep(path)
    assert str(err.value).endswith(
        "failure_seed: '0..19' is not allowed; expected an integer in 0..9223372036854775807; "
        "there is no range syntax for integers: list them, failure_seed = [0, 1, ..., 19]")
    (tmp_path / "cfg").mkdir()
    path = write(tmp_path / "cfg", head + 'background = "bg.csv"\n')
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SweepConfigError) as err:
        load_sweep(path)
    assert str(err.value).endswith(
        f"background: file 'bg.csv' not found; looked for {tmp_path / 'cfg' / 'bg.csv'} "
        f"(beside the sweep file) and {tmp_path / 'bg.csv'} (in the current directory)")
    path = write(tmp_path, head + "seed = [0, 1]\necmp = [\"split\", \"hash\"]\nranks = 100\n")
    with pytest.raises(SweepConfigError) as err:
        load_sweep(path)
    keys = str(err.value).partition("configurations (")[2].partition("):")[0].split(", ")
    assert len(keys) == len(set(keys)) == 3   # split once, hash with seeds 0 and 1
