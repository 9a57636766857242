"""Sweep datasets: the parquet schema, atomic part files, the manifest, loading,
setting aside and pruning.

A dataset is a directory whose parquet files are exactly its sweep's rows::

    DATASET/
      part-<run>-<seq>.parquet            result rows: one per (configuration, size)
      _errors/errors-<run>-<seq>.parquet  configurations that failed, with the message
      _aside/part-<run>-<seq>.parquet     rows of configurations the sweep file no longer lists
      _figures/                           what ``flowemu plot DATASET`` draws
      _journal/<run>-<seq>.jsonl          configurations finished before their part file
      _manifest.json                      the sweep it holds: name, file, config hashes
      _config.toml                        the sweep file of the last run
      .lock                               held while a sweep writes (flock)

Parquet readers skip names starting with ``_`` or ``.`` (pyarrow's dataset
discovery, hence ``pandas.read_parquet(DATASET)``), and a glob such as
DuckDB's ``read_parquet('DATASET/*.parquet')`` sees only the top level: both
read exactly the rows :func:`load` returns. Nothing else belongs at the top
level (a file of another format there breaks ``pandas.read_parquet``).

Each part file is written under a hidden temporary name (``.tmp-*``), synced
and renamed: a crash (even SIGKILL) leaves either the whole file or nothing.
Every configuration lives in exactly one part file, so resuming skips the
hashes already present. Configurations finished before their part file is
written are in the journal (:mod:`.journal`), which the next run saves.

The manifest makes a dataset exactly its sweep: :func:`load` and
:func:`load_errors` keep only the configurations whose hash it lists. Rows of
configurations the sweep file no longer lists are *set aside*: the sweep run
moves them into ``_aside/`` (splitting a part file that also holds current
rows), and back when a later run lists them again (never recomputed), until
:func:`prune` deletes them (:mod:`.layout`). A kill between those moves can
leave set-aside rows at the top level until the next run; :func:`load` still
filters them out by the manifest. A dataset without a manifest (written before
it existed) loads its top-level part files whole.

Datasets written before this layout keep their error records in ``errors/``
and figures in ``figures/``, and may mix current and set-aside rows in a part
file: they load the same, and the next sweep run moves them to this layout
(:func:`flowemu.study.sweep.layout.migrate`).

Result rows hold :data:`flowemu.api.simulation.RESULT_COLUMNS` plus :data:`SWEEP_COLUMNS`
(sweep name, group, configuration key and hash, comparison label, canonical
algorithm spec, the configured sizes).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd

from ...api.simulation import RESULT_COLUMNS
from ...core import checks
from ...core.errors import ConfigError, checked_keywords
from ...core.outputs import check_outside_dataset, replace_atomically
from ...core.version import __version__
from ...whatif.conditions import HEALTHY

ERRORS_DIR = "_errors"
ASIDE_DIR = "_aside"
FIGURES_DIR = "_figures"
#: the directories of the old layout and the names they moved to
OLD_ERRORS_DIR = "errors"
OLD_DIRS = {OLD_ERRORS_DIR: ERRORS_DIR, "figures": FIGURES_DIR}
MANIFEST = "_manifest.json"
#: the sweep file of the last run, the lock of a running one, and what a
#: running or killed one finished before its chunk was written
CONFIG_COPY = "_config.toml"
LOCK = ".lock"
JOURNAL_DIR = "_journal"
#: the names a dataset keeps at its top level: no output may take them
OWNED = frozenset({MANIFEST, CONFIG_COPY, LOCK, JOURNAL_DIR, ERRORS_DIR, ASIDE_DIR})

#: the columns of a job's row (a ``jobs`` configuration, :mod:`.jobs`) beyond the
#: result columns: the job's index, start, time alone and slowdown (NaN in other rows)
JOB_DATASET_COLUMNS = ["job", "job_start_s", "job_alone_s", "job_slowdown"]
#: columns a sweep adds in front of :data:`flowemu.api.simulation.RESULT_COLUMNS`
SWEEP_COLUMNS = ["sweep", "group", "config_key", "config_hash", "label", "algorithm_spec",
                 "sizes_spec"]

_STRING = {"sweep", "group", "config_key", "config_hash", "label", "algorithm_spec",
           "sizes_spec", "topology", "algorithm", "model", "sync", "collective", "variant",
           "options", "ecmp",
           "flowemu_version", "error_type", "error", "note", "fail", "degrade", "fail_policy",
           "slow", "background", "placement"}
_INT = {"nodes", "ranks", "size_bytes", "steps", "seed", "failed_links"}
_FLOAT = {"time_s", "goodput_Bps", "bandwidth_Bps", "link_latency_s", "hop_latency_s",
          "alpha_s", "gamma_s_per_B", "delta_s_per_B", "incast_threshold",
          "incast_slope_s_per_B", "background_Bps", "algbw_Bps", "busbw_Bps", "cross_group_bytes",
          *JOB_DATASET_COLUMNS}
#: the what-if columns (:data:`flowemu.whatif.conditions.WHATIF_COLUMNS`) and what rows
#: written before they existed read as: the healthy network
WHATIF_DEFAULTS = HEALTHY

#: the dataset column of each network field
NETWORK_COLUMNS = {"bandwidth": "bandwidth_Bps", "link_latency": "link_latency_s",
                    "hop_latency": "hop_latency_s", "alpha": "alpha_s",
                    "gamma": "gamma_s_per_B", "delta": "delta_s_per_B",
                    "incast_threshold": "incast_threshold",
                    "incast_slope": "incast_slope_s_per_B"}


# ------------------------------------------------------------------ rows

def sweep_fields(cfg) -> dict:
    """The sweep columns of one configuration (in front of its result rows;
    files named as the sweep file names them, from any directory)."""
    return {"sweep": cfg.sweep, "group": cfg.group, "config_key": cfg.key,
            "config_hash": cfg.hash, "label": cfg.shown(cfg.label),
            "algorithm_spec": cfg.shown(cfg.algorithm), "sizes_spec": cfg.sizes_text}


def rows_frame(batches) -> pd.DataFrame:
    """One frame of the result rows of many configurations: ``batches`` holds
    ``(sweep_fields(cfg), rows)`` per configuration, ``rows`` the dicts of
    :func:`flowemu.api.simulation.simulate_rows` (built once per batch:
    a frame per configuration would cost about as much as the simulation)."""
    return pd.DataFrame([{**fields, **row} for fields, rows in batches for row in rows],
                        columns=SWEEP_COLUMNS + RESULT_COLUMNS + JOB_DATASET_COLUMNS)


def error_row(cfg, error_type: str, message: str, internal: bool) -> dict:
    """One row of the errors table: the configuration's fields and the message."""
    row = {**sweep_fields(cfg), "topology": cfg.shown(cfg.topology), "ranks": cfg.ranks,
           "model": cfg.model, "sync": cfg.sync, "collective": cfg.collective,
           "ecmp": cfg.ecmp, "seed": cfg.seed, "placement": cfg.shown(cfg.placement),
           "fail": cfg.fail, "degrade": cfg.degrade, "fail_policy": cfg.fail_policy,
           "slow": cfg.slow, "background": cfg.shown(cfg.background)}
    row.update({col: float(getattr(cfg, f)) for f, col in NETWORK_COLUMNS.items()})
    row.update(error_type=error_type, error=message, internal=bool(internal),
               flowemu_version=__version__)
    return row


def _arrow(df: pd.DataFrame):
    """A pyarrow table with fixed types for known columns (so every part file
    of a dataset has the same schema)."""
    import pyarrow as pa
    arrays, names = [], []
    for col in df.columns:
        values = df[col]
        if col in _STRING:
            arr = pa.array([None if v is None or (isinstance(v, float) and np.isnan(v))
                            else str(v) for v in values], type=pa.string())
        elif col in _INT:
            arr = pa.array(values.astype("Int64"), type=pa.int64())
        elif col in _FLOAT:
            arr = pa.array(values.to_numpy(dtype=np.float64), type=pa.float64())
        elif col == "internal":
            arr = pa.array(values.astype(bool).to_numpy(), type=pa.bool_())
        else:
            arr = pa.array(values)
        arrays.append(arr)
        names.append(col)
    return pa.Table.from_arrays(arrays, names=names)


# ------------------------------------------------------------------ atomic files

def fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    replace_atomically(path, lambda fh: fh.write(data))


def write_part(directory, table, name: str) -> Path:
    """Write a pyarrow table as ``directory/name.parquet``, atomically."""
    import pyarrow.parquet as pq
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    final = replace_atomically(directory / f"{name}.parquet",
                               lambda fh: pq.write_table(table, fh, compression="zstd"))
    fsync_dir(directory)
    return final


def write_rows(directory, df: pd.DataFrame, name: str) -> Path:
    return write_part(directory, _arrow(df), name)


def write_errors(directory, rows: list[dict], name: str) -> Path:
    return write_part(directory, _arrow(pd.DataFrame(rows)), name)


def clean_temp(dataset) -> int:
    """Remove temporary files a killed sweep left behind (call under the lock)."""
    n = 0
    path = Path(dataset)
    for d in (path, path / ERRORS_DIR, path / ASIDE_DIR, path / OLD_ERRORS_DIR):
        for tmp in d.glob(".tmp-*") if d.is_dir() else ():
            tmp.unlink(missing_ok=True)
            n += 1
    return n


# ------------------------------------------------------------------ reading

def _parts(directory: Path, prefix: str) -> list[Path]:
    return sorted(directory.glob(f"{prefix}-*.parquet")) if directory.is_dir() else []


def is_dataset(directory) -> bool:
    """Whether ``directory`` holds a dataset (its manifest or part files)."""
    path = Path(directory)
    return (path / MANIFEST).is_file() or bool(result_parts(path))


def check_output(path, dataset, option: str) -> None:
    """Refuse an output ``path`` that would break a dataset's readers or
    take one of its own names: inside ``dataset`` or inside any other
    dataset, unless its name starts with ``_`` (see
    :func:`flowemu.core.outputs.check_outside_dataset`)."""
    check_outside_dataset(path, dataset, option, OWNED, is_dataset)


def result_parts(dataset) -> list[Path]:
    """The part files of the sweep's rows (the top level), in the order written."""
    return _parts(Path(dataset), "part")


def aside_parts(dataset) -> list[Path]:
    """The part files of rows set aside."""
    return _parts(Path(dataset) / ASIDE_DIR, "part")


def error_parts(dataset) -> list[Path]:
    """The error records, in the order written (``errors/`` of the old layout too)."""
    path = Path(dataset)
    return sorted(_parts(path / ERRORS_DIR, "errors") + _parts(path / OLD_ERRORS_DIR, "errors"),
                  key=lambda p: p.name)


def read_hashes(path: Path) -> list[str]:
    """The ``config_hash`` column of one part file."""
    return _read_column(path, "config_hash")


def _read_column(path: Path, column: str) -> list:
    import pyarrow.parquet as pq
    try:
        return pq.ParquetFile(path).read(columns=[column]).column(0).to_pylist()
    except Exception as exc:  # noqa: BLE001 - name the broken file
        raise ConfigError(f"dataset: cannot read {str(path)!r}: {exc}") from None


def result_hashes(dataset) -> set[str]:
    """Hashes of the configurations that have result rows (set aside or not)."""
    out: set[str] = set()
    for part in result_parts(dataset) + aside_parts(dataset):
        out.update(read_hashes(part))
    return out


def error_hashes(dataset) -> set[str]:
    """Hashes of the configurations recorded as failed."""
    out: set[str] = set()
    for part in error_parts(dataset):
        out.update(read_hashes(part))
    return out


def read_part(part: Path):
    """One part file as a pyarrow table (a ConfigError naming a broken file)."""
    import pyarrow.parquet as pq
    try:
        return pq.read_table(part)
    except Exception as exc:  # noqa: BLE001
        raise ConfigError(f"dataset: cannot read {str(part)!r}: {exc}") from None


def _read_parts(parts: list[Path]) -> pd.DataFrame | None:
    import pyarrow as pa
    if not parts:
        return None
    tables = [read_part(part) for part in parts]
    return pa.concat_tables(tables, promote_options="default").to_pandas()


def _dataset_dir(dataset) -> Path:
    path = checks.path("dataset", dataset, "a dataset (a sweep's directory, a parquet or CSV "
                                           "file)")
    if not path.exists():
        raise ConfigError(f"dataset: {str(path)!r} does not exist")
    return path


@checked_keywords
def load(dataset) -> pd.DataFrame:
    """The result rows of a dataset (a sweep's directory, or one parquet/CSV
    file), in the order they were written: of a directory, only the
    configurations of its sweep (the manifest); rows set aside are left out.

    Returns
    -------
    pandas.DataFrame
        :data:`SWEEP_COLUMNS` + :data:`flowemu.api.simulation.RESULT_COLUMNS`, one row
        per (configuration, size). Empty (with those columns) when the sweep
        produced no results yet.
    """
    path = _dataset_dir(dataset)
    if path.is_file():
        if path.suffix.lower() == ".toml":
            raise ConfigError(f"dataset: {str(path)!r} is a sweep file, not its results; run "
                              f"flowemu sweep {path} and give the dataset directory it "
                              f"writes (results/{path.stem}/, or the one given by --out)")
        if path.suffix.lower() not in (".csv", ".parquet", ".pq"):
            raise ConfigError(f"dataset: {str(path)!r} is neither a CSV (.csv) nor a parquet "
                              "(.parquet, .pq) file of result rows (the name says which), nor "
                              "a sweep's directory")
        try:
            df = pd.read_csv(path) if path.suffix.lower() == ".csv" else pd.read_parquet(path)
        except Exception as exc:  # noqa: BLE001
            raise ConfigError(f"dataset: cannot read {str(path)!r}: {exc}") from None
        if "size_bytes" not in df.columns and len(df.columns):
            traffic = {"step", "src", "dst", "bytes"} <= set(df.columns)
            raise ConfigError(f"dataset: {str(path)!r} holds no result rows (no column "
                              "size_bytes): "
                              + ("a traffic file; time it with flowemu run --traffic or "
                                 "flowemu.time_traffic" if traffic else
                                 "expected a sweep's dataset or rows of flowemu results"))
        return with_model(df)
    df = _current(_read_parts(result_parts(path)), path)
    if df is None:
        inner = sorted(str(d) for d in path.iterdir()   # (not its own _aside/, _errors/)
                       if d.is_dir() and not d.name.startswith(("_", "."))
                       and ((d / MANIFEST).is_file() or result_parts(d)))
        if inner:   # a folder of datasets (results/), not one
            raise ConfigError(f"dataset: {str(path)!r} holds datasets, not results of its "
                              f"own; give one of them: {', '.join(inner[:8])}"
                              + (", ..." if len(inner) > 8 else ""))
        other = sorted(p.name for p in path.iterdir() if not p.name.startswith((".", "_")))
        if other and not (path / MANIFEST).is_file():
            # (empty, or a sweep's before its first rows: no rows yet; files of another
            # kind are no dataset's)
            raise ConfigError(f"dataset: {str(path)!r} is no flowemu dataset (no "
                              f"{MANIFEST}, no part-*.parquet files; it holds "
                              f"{', '.join(other[:3])}{', ...' if len(other) > 3 else ''}); "
                              "give a sweep's directory, or a parquet or CSV file of result "
                              "rows")
        return pd.DataFrame(columns=SWEEP_COLUMNS + RESULT_COLUMNS)
    return with_model(df)


def with_model(df: pd.DataFrame) -> pd.DataFrame:
    """Rows written before the ``model`` column existed were timed by the
    flow engine: a missing column (or value, in a dataset mixing old and new
    part files) reads as ``"flow"``, placed after ``algorithm``. Likewise
    rows written before the what-if columns ran on the healthy network:
    :data:`WHATIF_DEFAULTS` (``""``, ``"strict"``, 0 failed links, NaN
    background throughput), placed before ``note``."""
    if not {"time_s", "size_bytes"} <= set(df.columns):
        return df     # not result rows (e.g. a compare table): left as they are
    if "model" not in df.columns:
        at = df.columns.get_loc("algorithm") + 1 if "algorithm" in df.columns else len(df.columns)
        df = df.copy()
        df.insert(at, "model", "flow")
    elif df["model"].isna().any():
        df = df.assign(model=df["model"].fillna("flow"))
    if "sync" not in df.columns:   # rows written before dataflow ran at a barrier
        df = df.assign(sync="barrier")
    elif df["sync"].isna().any():
        df = df.assign(sync=df["sync"].fillna("barrier"))
    return _with_whatif(_with_collective(df))


def _with_collective(df: pd.DataFrame) -> pd.DataFrame:
    """Rows written before collectives timed allreduces: ``collective``
    reads as ``"allreduce"``, ``algbw_Bps`` as the goodput and
    ``busbw_Bps`` as it times 2(p−1)/p. A user's traffic (algorithm
    ``traffic``) is no collective: ``""``."""
    traffic = df["algorithm"] == "traffic" if "algorithm" in df.columns else False
    if "collective" not in df.columns:
        df = df.assign(collective=np.where(traffic, "", "allreduce"))
    elif df["collective"].isna().any():
        df = df.assign(collective=df["collective"].where(
            df["collective"].notna(), np.where(traffic, "", "allreduce")))
    for col in ("algbw_Bps", "busbw_Bps"):
        if col not in df.columns:
            df = df.assign(**{col: np.nan})
    if "goodput_Bps" not in df.columns:
        return df
    old = df["algbw_Bps"].isna() & (df["collective"] == "allreduce") & df["goodput_Bps"].notna()
    if old.any() and "ranks" in df.columns:
        p = df["ranks"].astype(float)
        df = df.assign(algbw_Bps=df["algbw_Bps"].where(~old, df["goodput_Bps"]),
                       busbw_Bps=df["busbw_Bps"].where(~old, df["goodput_Bps"] * 2 * (p - 1) / p))
    return df


def _with_whatif(df: pd.DataFrame) -> pd.DataFrame:
    missing = [c for c in WHATIF_DEFAULTS if c not in df.columns]
    if missing:
        df = df.copy()
        at = df.columns.get_loc("note") if "note" in df.columns else len(df.columns)
        for col in missing:   # in WHATIF_COLUMNS order, each after the last placed
            at = (df.columns.get_loc(_before(col, df)) + 1) if _before(col, df) else at
            df.insert(at, col, WHATIF_DEFAULTS[col])
    fills = {c: v for c, v in WHATIF_DEFAULTS.items()
             if c in df.columns and c != "background_Bps" and df[c].isna().any()}
    if fills:   # a dataset mixing part files written before and after the columns
        for c, v in fills.items():   # (a CSV's all-empty text column reads as float NaN)
            if isinstance(v, str) and pd.api.types.is_float_dtype(df[c]):
                df = df.assign(**{c: df[c].astype(object)})
        df = df.fillna(fills)
        if "failed_links" in fills:
            df["failed_links"] = df["failed_links"].astype("int64")
    return df


def _before(col: str, df: pd.DataFrame) -> str | None:
    """The what-if column that goes right before ``col``, if ``df`` has it."""
    names = list(WHATIF_DEFAULTS)
    i = names.index(col)
    return names[i - 1] if i and names[i - 1] in df.columns else None


def load_errors(dataset) -> pd.DataFrame:
    """The failed configurations of a dataset's sweep: the latest record of
    each, leaving out those that have results now (a retry succeeded) and
    those set aside."""
    path = _dataset_dir(dataset)
    df = _current(_read_parts(error_parts(path)), path)
    if df is None:
        return pd.DataFrame(columns=SWEEP_COLUMNS[:4] + ["topology", "error_type", "error"])
    df = df.drop_duplicates("config_hash", keep="last")
    done = result_hashes(path)
    return df[~df["config_hash"].isin(done)].reset_index(drop=True)



# ------------------------------------------------------------------ the manifest

def read_manifest(dataset) -> dict | None:
    """``{"sweep": name, "file": path, "hashes": [...]}`` of a dataset, or
    None for a dataset written before manifests existed."""
    path = Path(os.fspath(dataset)) / MANIFEST
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        doc, problem = None, str(exc)
    else:
        problem = "expected keys sweep and hashes"
    if not (isinstance(doc, dict) and isinstance(doc.get("sweep"), str)
            and isinstance(doc.get("hashes"), list)):
        raise ConfigError(f"dataset: cannot read {str(path)!r}: {problem}; delete it (the "
                          "next sweep run writes it again)")
    return doc


def write_manifest(dataset, sweep: str, file, hashes) -> None:
    """Make the dataset hold exactly the configurations ``hashes`` of ``sweep``
    (atomic: readers see the old manifest or the new one)."""
    doc = {"sweep": sweep, "file": str(file), "hashes": sorted(hashes)}
    atomic_write_bytes(Path(dataset) / MANIFEST, (json.dumps(doc, indent=1) + "\n").encode())


def _current(df: pd.DataFrame | None, path: Path) -> pd.DataFrame | None:
    """The rows of the configurations the manifest lists (all without one)."""
    doc = read_manifest(path)
    if df is None or doc is None:
        return df
    return df[df["config_hash"].isin(set(doc["hashes"]))].reset_index(drop=True)


def sweep_names(dataset) -> set[str]:
    """The sweep names recorded in a dataset's rows and errors (for a dataset
    without manifest, to tell whether it holds another sweep)."""
    out: set[str] = set()
    for part in result_parts(dataset) + aside_parts(dataset) + error_parts(dataset):
        out.update(_read_column(part, "sweep"))
    return out


def prune(dataset, keep) -> tuple[int, int]:
    """Delete the rows (set aside or not) and error records of configurations
    not in ``keep``: a part file holding none of them is removed, one holding
    some is rewritten (atomically) with the rows that stay. Call under the lock.

    Returns
    -------
    (configurations, rows)
        How many configurations and result rows were deleted.
    """
    keep = set(keep)
    gone: set[str] = set()
    rows = 0
    results = result_parts(dataset) + aside_parts(dataset)
    for part in results + error_parts(dataset):
        hashes = read_hashes(part)
        stale = {h for h in hashes if h not in keep}
        if not stale:
            continue
        gone |= stale
        if part in results:
            rows += sum(h in stale for h in hashes)
        _drop_from_part(part, hashes, stale)
    return len(gone), rows


def _drop_from_part(part: Path, hashes: list, stale: set) -> None:
    """Delete the rows of the configurations ``stale`` from a part file whose
    ``config_hash`` column is ``hashes``: the file goes when none is left,
    else it is rewritten (atomically) with the others."""
    import pyarrow.compute as pc
    if set(hashes) <= stale:
        part.unlink()
    else:
        table = read_part(part)
        mask = pc.invert(pc.is_in(table.column("config_hash"), value_set=string_array(stale)))
        write_part(part.parent, table.filter(mask), part.stem)
    fsync_dir(part.parent)


def drop_errors(dataset, hashes, parts=None) -> int:
    """Delete the error records of the configurations ``hashes`` from the
    error part files ``parts`` (default: all): those that have results now
    (a retry succeeded) and the older records of those that ran again, so
    that the ``_errors`` folder read as plain parquet holds each current
    failure once (:func:`load_errors` reads the latest record of each and
    leaves out those with results). Call under the lock. Returns how many
    records were deleted."""
    hashes = set(hashes)
    deleted = 0
    for part in error_parts(dataset) if parts is None else parts:
        have = read_hashes(part)
        stale = sum(h in hashes for h in have)
        if stale:
            deleted += stale
            _drop_from_part(part, have, hashes)
    return deleted


def string_array(values):
    import pyarrow as pa
    return pa.array(sorted(values), type=pa.string())
