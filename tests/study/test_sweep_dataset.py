"""A dataset is exactly its sweep: editing the sweep file between runs reuses,
computes and sets aside; --prune deletes; another sweep's dataset is refused."""

from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

import flowemu
from flowemu.cli.app import main
from flowemu.core.errors import ConfigError
from flowemu.study.results import MANIFEST, compare, load, load_errors
from flowemu.study.sweep import load_sweep, sweep
from tests.helpers.sweeps import fail_when_run

REPO_ROOT = Path(flowemu.__file__).resolve().parents[1]

# 2 topologies x 2 algorithms x 2 bandwidths = 8, plus one that fails (32 ranks
# on 16 nodes)
V1 = """
sizes = "1KiB..16KiB"
[groups.g]
topology = ["torus:4x4", "torus:8"]
algorithm = ["ring", "recdoub:variant=latency"]
bandwidth = ["100Gb/s", "400Gb/s"]
[groups.bad]
topology = "torus:4x4"
algorithm = "ring"
ranks = 8                   # fails when it runs (fail_when_run)
"""

# torus:8 removed, an algorithm added, 100Gb/s edited to 200Gb/s, group bad removed:
# 1 topology x 3 algorithms x 2 bandwidths = 6, of which 2 (torus:4x4, ring and
# recdoub:variant=latency at 400Gb/s) were in V1
V2 = """
sizes = "1KiB..16KiB"
[groups.g]
topology = "torus:4x4"
algorithm = ["ring", "recdoub:variant=latency", "recdoub:variant=bandwidth"]
bandwidth = ["200Gb/s", "400Gb/s"]
"""

SIZES = 5   # 1KiB..16KiB


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def by_config(df):
    return df.sort_values(["config_hash", "size_bytes"]).reset_index(drop=True)


def rows_on_disk(out: Path) -> pd.DataFrame:
    """Every row in the part files, set aside or not (read without flowemu)."""
    parts = sorted(out.glob("part-*.parquet"))
    return pd.concat([pq.read_table(p).to_pandas() for p in parts], ignore_index=True)


def test_edited_sweep_file_reuses_computes_and_sets_aside(tmp_path, capsys, monkeypatch):
    fail_when_run(monkeypatch, lambda cfg: cfg.group == "bad")
    path = tmp_path / "study.toml"
    out = tmp_path / "d"
    plan1 = load_sweep(write(path, V1))
    h1 = {c.hash for c in plan1.configs}
    h1_ok = {c.hash for c in plan1.configs if c.group == "g"}
    s1 = sweep(path, out, jobs=1, progress=False)
    assert (s1.total, s1.computed, s1.failed, s1.reused, s1.set_aside) == (9, 8, 1, 0, 0)
    first = load(out)
    assert len(load_errors(out)) == 1

    h2 = {c.hash for c in load_sweep(write(path, V2)).configs}
    assert (len(h1), len(h2), len(h1 & h2)) == (9, 6, 2)
    s2 = sweep(path, out, jobs=1, progress=False)
    assert (s2.total, s2.reused, s2.computed, s2.failed, s2.set_aside) == (6, 2, 4, 0, 7)
    assert s2.rows == 4 * SIZES and s2.errors == []
    assert "2 reused" in s2.text() and "set aside: 7 configurations" in s2.text()
    df = load(out)
    assert set(df["config_hash"]) == h2 and len(df) == 6 * SIZES
    assert load_errors(out).empty                   # the failing one is set aside too
    # reused rows are the very rows of the first run, bit for bit
    kept = h1 & h2
    pd.testing.assert_frame_equal(by_config(df[df.config_hash.isin(kept)]),
                                  by_config(first[first.config_hash.isin(kept)]),
                                  check_exact=True)
    # compare and plot see only the sweep: one scenario per bandwidth of V2
    assert set(compare(df)["bandwidth_Bps"]) == {200e9 / 8, 400e9 / 8}
    # the set-aside rows stay on disk ...
    assert set(rows_on_disk(out)["config_hash"]) == h1_ok | h2

    # ... so going back to V1 computes nothing but the failing configuration is
    # still recorded as failed
    write(path, V1)
    s3 = sweep(path, out, jobs=1, progress=False)
    assert (s3.reused, s3.computed, s3.failed_earlier, s3.set_aside) == (8, 0, 1, 4)
    pd.testing.assert_frame_equal(by_config(load(out)), by_config(first), check_exact=True)

    # --prune deletes what V2 no longer lists: rows and error records
    write(path, V2)
    code = main(["sweep", str(path), "--out", str(out), "-q", "--prune"])
    text = capsys.readouterr().out
    assert code == 0 and "pruned: 7 configurations (30 rows)" in text
    on_disk = rows_on_disk(out)
    assert set(on_disk["config_hash"]) == h2 and len(on_disk) == 6 * SIZES
    assert not list((out / "errors").glob("*.parquet"))
    pd.testing.assert_frame_equal(by_config(load(out)), by_config(df), check_exact=True)


def test_prune_rewrites_a_part_that_holds_both(tmp_path):
    path = tmp_path / "s.toml"
    out = tmp_path / "d"
    sweep(write(path, V2), out, jobs=1, progress=False, chunk_size=6)   # one part file
    before = load(out)
    edited = V2.replace('"recdoub:variant=bandwidth"', "")
    s = sweep(write(path, edited), out, jobs=1, progress=False, prune=True)
    assert (s.reused, s.computed, s.pruned, s.pruned_rows) == (4, 0, 2, 2 * SIZES)
    assert len(list(out.glob("part-*.parquet"))) == 1
    left = before[before.label != "recdoub:variant=bandwidth"]
    pd.testing.assert_frame_equal(by_config(rows_on_disk(out)), by_config(left),
                                  check_exact=True)


def test_another_sweep_file_never_mixes(tmp_path, capsys):
    a = write(tmp_path / "a.toml", V2)
    b = write(tmp_path / "b.toml", V2.replace('"400Gb/s"]', '"800Gb/s"]'))
    out = tmp_path / "d"
    sweep(a, out, jobs=1, progress=False)
    before = load(out)
    with pytest.raises(ConfigError) as err:
        sweep(b, out, jobs=1, progress=False)
    msg = str(err.value)
    assert "'a'" in msg and "'b'" in msg and "--out" in msg and "--prune" in msg
    code = main(["sweep", str(b), "--out", str(out), "-q"])
    stderr = capsys.readouterr().err
    assert code == 2 and stderr.count("\n") == 1 and "Traceback" not in stderr
    assert stderr.startswith("flowemu: error: --out:") and "'a'" in stderr
    pd.testing.assert_frame_equal(load(out), before, check_exact=True)
    # a dataset from before manifests existed is recognised by its rows
    (out / MANIFEST).unlink()
    with pytest.raises(ConfigError, match="holds the results of sweep 'a'"):
        sweep(b, out, jobs=1, progress=False)
    # --prune replaces the other sweep's results
    s = sweep(b, out, jobs=1, progress=False, prune=True)
    assert s.replaced == "a" and s.computed == 6 and s.reused == 0
    df = load(out)
    assert set(df["sweep"]) == {"b"} and len(rows_on_disk(out)) == 6 * SIZES
    assert set(df["config_hash"]) == {c.hash for c in load_sweep(b).configs}


def test_dataset_without_manifest_loads_whole(tmp_path):
    path = write(tmp_path / "s.toml", V2)
    out = tmp_path / "d"
    sweep(path, out, jobs=1, progress=False)
    sweep(write(path, V2.replace('"200Gb/s", ', "")), out, jobs=1, progress=False)
    assert len(load(out)) == 3 * SIZES
    (out / MANIFEST).unlink()
    assert len(load(out)) == 6 * SIZES
    (out / MANIFEST).write_text("{not json")
    with pytest.raises(ConfigError, match="_manifest.json"):
        load(out)


def test_demo_runs_after_its_config_is_edited(tmp_path, capsys):
    from flowemu.cli import demo
    text = (REPO_ROOT / "configs" / "demo.toml").read_text()
    assert 'sizes = "32B..512MiB"' in text and 'bandwidth = "400Gb/s"' in text
    text = text.replace("torus:16x16", "torus:4x4").replace('"32B..512MiB"', '"1KiB..4KiB"')
    cfg = write(tmp_path / "demo.toml", text)
    out = tmp_path / "demo"
    demo.main(config=cfg, out=out)
    first = capsys.readouterr().out
    assert "on torus:4x4: 400Gb/s links, 100ns link + 300ns per-hop latency, ECMP split" in first
    # the edit that used to fail with "cannot reindex on an axis with duplicate labels"
    write(cfg, text.replace('"recdoub"]', '"recdoub", "recdoub:variant=latency"]')
          .replace('bandwidth = "400Gb/s"', 'bandwidth = ["200Gb/s", "800Gb/s"]'))
    demo.main(config=cfg, out=out)
    second = capsys.readouterr().out
    assert "on torus:4x4: 200Gb/s links" in second and "on torus:4x4: 800Gb/s links" in second
    assert "400Gb/s links" not in second and "recdoub:variant=latency" in second
    assert len(load(out)) == 2 * 5 * 3
