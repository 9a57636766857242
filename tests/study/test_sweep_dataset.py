"""A dataset is exactly its sweep: editing the sweep file between runs reuses,
computes and sets aside; --prune deletes; another sweep's dataset is refused.
Pandas, pyarrow and DuckDB, pointed at the directory, read exactly the rows
:func:`flowemu.load` returns, whatever figures, errors and set-aside rows lie
beside them; a dataset of the old layout loads as before and is moved to the
new one by the next sweep run."""

from pathlib import Path

import duckdb
import pandas as pd
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

import flowemu
from flowemu.cli.app import main
from flowemu.core.errors import ConfigError
from flowemu.study.results import (
    ASIDE_DIR,
    ERRORS_DIR,
    FIGURES_DIR,
    MANIFEST,
    compare,
    load,
    load_errors,
)
from flowemu.study.sweep import load_sweep, sweep
from flowemu.study.sweep.dataset import write_manifest
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
    parts = sorted(out.glob("part-*.parquet")) + sorted((out / ASIDE_DIR).glob("part-*.parquet"))
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
    assert s2.set_aside_now == 7
    # the same file again: the rows stay aside, and the summary said so once
    again = sweep(path, out, jobs=1, progress=False)
    assert (again.reused, again.computed, again.set_aside, again.set_aside_now) == (6, 0, 7, 0)
    assert "set aside" not in again.text()
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
    # the set-aside rows stay on disk, in _aside/, where parquet readers do not look ...
    assert set(rows_on_disk(out)["config_hash"]) == h1_ok | h2
    assert set(pd.read_parquet(out / ASIDE_DIR)["config_hash"]) == h1_ok - h2
    pd.testing.assert_frame_equal(by_config(pd.read_parquet(out)), by_config(df),
                                  check_dtype=False, check_exact=True)

    # ... so going back to V1 computes nothing but the failing configuration is
    # still recorded as failed
    write(path, V1)
    s3 = sweep(path, out, jobs=1, progress=False)
    assert (s3.reused, s3.computed, s3.failed_earlier, s3.set_aside) == (8, 0, 1, 4)
    assert s3.set_aside_now == 4 and "set aside: 4 configurations" in s3.text()
    pd.testing.assert_frame_equal(by_config(load(out)), by_config(first), check_exact=True)

    # --prune deletes what V2 no longer lists: rows and error records
    write(path, V2)
    code = main(["sweep", str(path), "--out", str(out), "-q", "--prune"])
    text = capsys.readouterr().out
    assert code == 0 and "pruned: 7 configurations (30 rows)" in text
    on_disk = rows_on_disk(out)
    assert set(on_disk["config_hash"]) == h2 and len(on_disk) == 6 * SIZES
    assert not list((out / ERRORS_DIR).glob("*.parquet"))
    assert not list((out / ASIDE_DIR).glob("*.parquet"))
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
    (out / MANIFEST).unlink()     # the top level: the rows set aside are in _aside/
    assert len(load(out)) == 3 * SIZES
    for part in (out / ASIDE_DIR).glob("part-*.parquet"):   # as a dataset of the old layout
        part.rename(out / f"{part.stem}-aside.parquet")
    assert len(load(out)) == 6 * SIZES
    (out / MANIFEST).write_text("{not json")
    with pytest.raises(ConfigError, match="_manifest.json"):
        load(out)


def test_demo_runs_after_its_config_is_edited(tmp_path, capsys, monkeypatch):
    from flowemu.cli import demo
    figures = []        # the demo's figure has the relative panel under the goodput one
    real_plot = demo.plot_goodput
    monkeypatch.setattr(demo, "plot_goodput",
                        lambda df, out, **kw: figures.append(kw) or real_plot(df, out, **kw))
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
    # its figure is where parquet readers do not look, and `flowemu plot` (make figures)
    # draws its own goodput.png there without replacing it
    shown = out / FIGURES_DIR / "goodput-relative.png"
    assert shown.is_file() and not (out / "goodput.png").exists()
    assert [kw["relative"] for kw in figures] == [True, True]
    before = shown.read_bytes()
    assert main(["plot", str(out)]) == 0
    assert (out / FIGURES_DIR / "goodput.png").is_file() and shown.read_bytes() == before
    plain_readers_agree(out)


# ------------------------------------------------------------------ plain parquet readers

def same_rows(read: pd.DataFrame, expected: pd.DataFrame) -> None:
    """The same rows, with the same values in the columns both have."""
    cols = [c for c in expected.columns if c in read.columns]
    assert {"config_hash", "size_bytes", "time_s"} <= set(cols)
    pd.testing.assert_frame_equal(by_config(read[cols]), by_config(expected[cols]),
                                  check_dtype=False, check_exact=True)


def plain_readers_agree(out: Path) -> pd.DataFrame:
    """:func:`load`'s rows, checked against pandas, pyarrow and DuckDB reading
    the directory."""
    expected = load(out)
    assert len(expected)
    same_rows(pd.read_parquet(out), expected)
    same_rows(pads.dataset(out, format="parquet").to_table().to_pandas(), expected)
    same_rows(pq.read_table(out).to_pandas(), expected)
    with duckdb.connect() as con:
        same_rows(con.sql(f"select * from read_parquet('{out}/*.parquet')").df(), expected)
    return expected


def test_parquet_readers_get_exactly_the_sweeps_rows(tmp_path, capsys, monkeypatch):
    fail_when_run(monkeypatch, lambda cfg: cfg.group == "bad")
    path = write(tmp_path / "s.toml", V1)
    out = tmp_path / "d"
    h1 = {c.hash for c in load_sweep(path).configs}
    s1 = sweep(path, out, jobs=1, progress=False, chunk_size=9)   # one part file
    assert (s1.computed, s1.failed) == (8, 1) and len(list(out.glob("part-*"))) == 1
    assert main(["plot", str(out)]) == 0             # figures beside the rows
    assert list((out / FIGURES_DIR).glob("*.png"))
    capsys.readouterr()
    first = plain_readers_agree(out)

    # editing the file splits the part file: 2 of its configurations stay
    h2 = {c.hash for c in load_sweep(write(path, V2)).configs}
    s2 = sweep(path, out, jobs=1, progress=False)
    assert (s2.reused, s2.computed, s2.set_aside) == (2, 4, 7)
    assert f"their rows in {out / ASIDE_DIR}" in s2.text()
    df = plain_readers_agree(out)
    assert set(df["config_hash"]) == h2
    assert set(pd.read_parquet(out / ASIDE_DIR)["config_hash"]) == set(first.config_hash) - h2

    # listed again, the rows come back (not recomputed) and V2's new ones go aside
    s3 = sweep(write(path, V1), out, jobs=1, progress=False)
    assert (s3.reused, s3.computed, s3.failed_earlier, s3.set_aside) == (8, 0, 1, 4)
    assert s3.set_aside_now == 4 and "set aside: 4 configurations" in s3.text()
    pd.testing.assert_frame_equal(by_config(plain_readers_agree(out)), by_config(first),
                                  check_exact=True)
    assert set(pd.read_parquet(out / ASIDE_DIR)["config_hash"]) == h2 - h1
    assert len(load_errors(out)) == 1 and list((out / ERRORS_DIR).glob("errors-*.parquet"))


def test_part_files_hold_plain_types(tmp_path, monkeypatch):
    """Every column of a part file is string, int64, double or bool; a
    reader sees one type for one kind of value (``placement`` was
    ``large_string``, pandas' inference, beside every other text column's
    ``string``)."""
    fail_when_run(monkeypatch, lambda cfg: cfg.group == "bad")
    out = tmp_path / "d"
    sweep(write(tmp_path / "s.toml", V1), out, jobs=1, progress=False)
    for part in [*out.glob("part-*.parquet"), *(out / ERRORS_DIR).glob("*.parquet")]:
        types = {f.name: str(f.type) for f in pq.read_schema(part)}
        odd = {k: v for k, v in types.items() if v not in ("string", "int64", "double", "bool")}
        assert not odd, (part.name, odd)
        assert types["placement"] == "string"


def test_old_layout_loads_and_is_moved_to_the_new_one_by_the_next_run(tmp_path, monkeypatch):
    fail_when_run(monkeypatch, lambda cfg: cfg.group == "bad")
    path = write(tmp_path / "s.toml", V1)
    out = tmp_path / "d"
    sweep(path, out, jobs=1, progress=False, chunk_size=9)
    first, errors = load(out), load_errors(out)
    # the old layout, by hand: errors/ and figures/ directories ...
    (out / ERRORS_DIR).rename(out / "errors")
    (out / "figures").mkdir()
    (out / "figures" / "gain.png").write_bytes(b"\x89PNG old figure")
    pd.testing.assert_frame_equal(load(out), first)
    pd.testing.assert_frame_equal(load_errors(out), errors)
    # ... and the sweep file edited: the old sweep run only changed the manifest,
    # so the part file mixes configurations the sweep lists with set-aside ones
    h2 = {c.hash for c in load_sweep(write(path, V2)).configs}
    write_manifest(out, "s", path, h2)
    [mixed] = out.glob("part-*.parquet")
    held = set(pq.read_table(mixed).column("config_hash").to_pylist())
    assert held & h2 and held - h2
    old = load(out)
    pd.testing.assert_frame_equal(by_config(old), by_config(first[first.config_hash.isin(h2)]),
                                  check_exact=True)
    assert load_errors(out).empty                        # the failing one is set aside

    s = sweep(path, out, jobs=1, progress=False)
    assert (s.reused, s.computed, s.set_aside) == (2, 4, 7)
    assert not (out / "errors").exists() and not (out / "figures").exists()
    assert (out / FIGURES_DIR / "gain.png").read_bytes() == b"\x89PNG old figure"
    assert list((out / ERRORS_DIR).glob("errors-*.parquet"))
    df = plain_readers_agree(out)
    pd.testing.assert_frame_equal(by_config(df[df.config_hash.isin(held)]), by_config(old),
                                  check_exact=True)
    # nothing recomputed, nothing lost: V1 again has every row and the error
    s = sweep(write(path, V1), out, jobs=1, progress=False)
    assert (s.reused, s.computed, s.failed_earlier) == (8, 0, 1)
    pd.testing.assert_frame_equal(by_config(plain_readers_agree(out)), by_config(first),
                                  check_exact=True)
    pd.testing.assert_frame_equal(load_errors(out), errors)


def test_figures_of_both_layouts_join(tmp_path):
    """A dataset plotted by this flowemu before its first sweep run: the old
    figures join the new ones; the same name in both is an old drawing."""
    out = tmp_path / "d"
    sweep(write(tmp_path / "s.toml", V2), out, jobs=1, progress=False)
    (out / "figures").mkdir()
    (out / "figures" / "gain.png").write_bytes(b"old")
    (out / "figures" / "fig6.png").write_bytes(b"mine")
    (out / FIGURES_DIR).mkdir()
    (out / FIGURES_DIR / "gain.png").write_bytes(b"new")
    s = sweep(tmp_path / "s.toml", out, jobs=1, progress=False)
    assert s.reused == 6 and not (out / "figures").exists()
    assert {p.name: p.read_bytes() for p in (out / FIGURES_DIR).iterdir()} == \
        {"gain.png": b"new", "fig6.png": b"mine"}


def test_a_move_killed_halfway_loads_and_the_next_run_finishes_it(tmp_path, monkeypatch):
    fail_when_run(monkeypatch, lambda cfg: cfg.group == "bad")
    from flowemu.study.sweep import layout
    path = write(tmp_path / "s.toml", V1)
    out = tmp_path / "d"
    sweep(path, out, jobs=1, progress=False, chunk_size=9)   # one part file
    first = load(out)
    writes = []

    def killed_after_the_copy(directory, table, name):
        writes.append(name)
        if len(writes) == 2:     # the set-aside rows are in _aside/, still at the top too
            raise KeyboardInterrupt
        return layout_write(directory, table, name)

    layout_write = layout.write_part
    monkeypatch.setattr(layout, "write_part", killed_after_the_copy)
    h2 = {c.hash for c in load_sweep(write(path, V2)).configs}
    with pytest.raises(KeyboardInterrupt):
        sweep(path, out, jobs=1, progress=False)
    monkeypatch.undo()
    assert writes and all(w == writes[0] for w in writes)
    pd.testing.assert_frame_equal(by_config(load(out)),
                                  by_config(first[first.config_hash.isin(h2)]), check_exact=True)
    s = sweep(path, out, jobs=1, progress=False)
    assert (s.reused, s.computed, s.set_aside) == (2, 4, 7)
    plain_readers_agree(out)
    on_disk = rows_on_disk(out)
    assert not on_disk.duplicated(["config_hash", "size_bytes"]).any()
    s = sweep(write(path, V1), out, jobs=1, progress=False)
    assert (s.reused, s.computed) == (8, 0)
    pd.testing.assert_frame_equal(by_config(plain_readers_agree(out)), by_config(first),
                                  check_exact=True)


def test_plot_moves_an_old_figures_directory_out_of_the_readers_way(tmp_path, monkeypatch):
    """``flowemu plot`` of a dataset still in the old layout (figures in
    ``figures/``) moves them to ``_figures/`` with the new ones, so plain
    readers work before the next sweep run migrates the rest."""
    fail_when_run(monkeypatch, lambda cfg: cfg.group == "bad")
    path = write(tmp_path / "s.toml", V1)
    out = tmp_path / "d"
    sweep(path, out, jobs=1, progress=False)
    (out / "figures").mkdir()
    (out / "figures" / "old.png").write_bytes(b"\x89PNG an old figure")
    assert main(["plot", str(out)]) == 0
    assert not (out / "figures").exists()
    assert (out / FIGURES_DIR / "old.png").is_file() and (out / FIGURES_DIR / "gain.png").is_file()
    plain_readers_agree(out)


def test_a_sweep_file_given_as_the_dataset_says_what_to_give(tmp_path, capsys):
    """``flowemu compare mine.toml`` read the TOML as parquet ("Parquet magic
    bytes not found"): it now says the file is the sweep, not its results,
    and which directory the sweep writes."""
    toml = tmp_path / "mine.toml"
    toml.write_text('topology = "torus:4x4"\nalgorithm = "ring"\nsizes = "1KiB"\n')
    with pytest.raises(ConfigError, match=r"is a sweep file, not its results; run flowemu "
                                          r"sweep .*mine\.toml .*results/mine/"):
        flowemu.load(toml)
    assert main(["compare", str(toml)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is a sweep file" in err and "Parquet" not in err


def test_out_into_a_folder_of_other_files_is_refused(tmp_path, capsys):
    """A sweep wrote its parts beside a folder's own files, and
    pd.read_parquet of the folder then failed on them ('Could not read
    schema from notes.txt'). A folder that is no dataset yet and holds
    other files is refused, before anything runs (the dry run says so);
    a dataset's own '_' folders and an empty folder are fine."""
    cfg = write(tmp_path / "s.toml", 'sizes = "1KiB"\ntopology = "torus:4x4"\n'
                'algorithm = "ring"\n')
    out = tmp_path / "notes"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match=r"out: .*notes' holds files that are no dataset's "
                                          r"\(notes.txt\)"):
        sweep(cfg, out, jobs=1, progress=False)
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    assert main(["sweep", str(cfg), "--dry-run", "--out", str(out)]) == 0
    said = capsys.readouterr()
    assert "holds files that are no dataset's (notes.txt): a run into it is refused" in said.err
    assert "to run" not in said.out   # (no count of a run that would be refused)
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "_mine").mkdir()
    sweep(cfg, empty, jobs=1, progress=False)
    (empty / "notes.txt").write_text("mine")   # a dataset already: left as it is
    assert sweep(cfg, empty, jobs=1, progress=False).reused == 1
    assert len(pd.read_parquet(next(empty.glob("part-*.parquet")))) == 1
