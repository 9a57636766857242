"""Sweep datasets: the parquet schema, atomic part files, loading, and the
goodput-gain comparison.

A dataset is a directory::

    DATASET/
      part-<run>-<seq>.parquet            result rows: one per (configuration, size)
      errors/errors-<run>-<seq>.parquet   configurations that failed, with the message
      _config.toml                        the sweep file of the last run
      .lock                               held while a sweep writes (flock)

Each part file is written under a hidden temporary name (``.tmp-*``), synced
and renamed: a crash (even SIGKILL) leaves either the whole file or nothing,
and readers ignore names starting with ``.`` or ``_``. Every configuration
lives in exactly one part file, so resuming skips the hashes already present.

Result rows hold :data:`flowemu.api.RESULT_COLUMNS` plus :data:`SWEEP_COLUMNS`
(sweep name, group, configuration key and hash, comparison label, canonical
algorithm spec, the configured sizes).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from .errors import ConfigError

ERRORS_DIR = "errors"

#: columns a sweep adds in front of :data:`flowemu.api.RESULT_COLUMNS`
SWEEP_COLUMNS = ["sweep", "group", "config_key", "config_hash", "label", "algorithm_spec",
                 "sizes_spec"]

_STRING = {"sweep", "group", "config_key", "config_hash", "label", "algorithm_spec",
           "sizes_spec", "topology", "algorithm", "variant", "options", "ecmp",
           "flowemu_version", "error_type", "error", "note"}
_INT = {"nodes", "ranks", "size_bytes", "steps", "seed"}
_FLOAT = {"time_s", "goodput_Bps", "bandwidth_Bps", "link_latency_s", "hop_latency_s",
          "alpha_s", "gamma_s_per_B", "delta_s_per_B", "incast_threshold",
          "incast_slope_s_per_B"}

#: configuration columns that make a comparison scenario when they vary
SCENARIO_COLUMNS = ["group", "topology", "nodes", "ranks", "bandwidth_Bps", "link_latency_s",
                    "hop_latency_s", "alpha_s", "gamma_s_per_B", "delta_s_per_B",
                    "incast_threshold", "incast_slope_s_per_B", "ecmp", "seed"]

_NETWORK_COLUMNS = {"bandwidth": "bandwidth_Bps", "link_latency": "link_latency_s",
                    "hop_latency": "hop_latency_s", "alpha": "alpha_s",
                    "gamma": "gamma_s_per_B", "delta": "delta_s_per_B",
                    "incast_threshold": "incast_threshold",
                    "incast_slope": "incast_slope_s_per_B"}


# ------------------------------------------------------------------ rows

def _sweep_fields(cfg) -> dict:
    """The sweep columns of one configuration (in front of its result rows)."""
    return {"sweep": cfg.sweep, "group": cfg.group, "config_key": cfg.key,
            "config_hash": cfg.hash, "label": cfg.label, "algorithm_spec": cfg.algorithm,
            "sizes_spec": cfg.sizes_text}


def add_config_columns(frames: list[pd.DataFrame], configs: list) -> pd.DataFrame:
    """Concatenate :func:`flowemu.simulate` frames, one per configuration, and
    put the sweep columns of each configuration in front (built once per batch:
    per-frame pandas construction would cost more than the simulation)."""
    counts = np.array([len(f) for f in frames])
    body = pd.concat(frames, ignore_index=True)
    fields = [_sweep_fields(c) for c in configs]
    head = pd.DataFrame({k: np.repeat(np.array([f[k] for f in fields], dtype=object), counts)
                         for k in fields[0]})
    return pd.concat([head, body], axis=1)


def error_row(cfg, error_type: str, message: str, internal: bool) -> dict:
    """One row of the errors table: the configuration's fields and the message."""
    from . import __version__
    row = {**_sweep_fields(cfg), "topology": cfg.topology, "ranks": cfg.ranks,
           "ecmp": cfg.ecmp, "seed": cfg.seed}
    row.update({col: float(getattr(cfg, f)) for f, col in _NETWORK_COLUMNS.items()})
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

def _fsync_dir(directory: Path) -> None:
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
    path = Path(path)
    tmp = path.with_name(f".tmp-{path.name}")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def write_part(directory, table, name: str) -> Path:
    """Write a pyarrow table as ``directory/name.parquet``, atomically."""
    import pyarrow.parquet as pq
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    final = directory / f"{name}.parquet"
    tmp = directory / f".tmp-{name}.parquet"
    with open(tmp, "wb") as fh:
        pq.write_table(table, fh, compression="zstd")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, final)
    _fsync_dir(directory)
    return final


def write_rows(directory, df: pd.DataFrame, name: str) -> Path:
    return write_part(directory, _arrow(df), name)


def write_errors(directory, rows: list[dict], name: str) -> Path:
    return write_part(directory, _arrow(pd.DataFrame(rows)), name)


def clean_temp(dataset) -> int:
    """Remove temporary files a killed sweep left behind (call under the lock)."""
    n = 0
    for d in (Path(dataset), Path(dataset) / ERRORS_DIR):
        for tmp in d.glob(".tmp-*") if d.is_dir() else ():
            tmp.unlink(missing_ok=True)
            n += 1
    return n


# ------------------------------------------------------------------ reading

def _parts(directory: Path, prefix: str) -> list[Path]:
    return sorted(directory.glob(f"{prefix}-*.parquet")) if directory.is_dir() else []


def _read_column(path: Path, column: str) -> list:
    import pyarrow.parquet as pq
    try:
        return pq.ParquetFile(path).read(columns=[column]).column(0).to_pylist()
    except Exception as exc:  # noqa: BLE001 - name the broken file
        raise ConfigError(f"dataset: cannot read {str(path)!r}: {exc}") from None


def result_hashes(dataset) -> set[str]:
    """Hashes of the configurations that have result rows."""
    out: set[str] = set()
    for part in _parts(Path(dataset), "part"):
        out.update(_read_column(part, "config_hash"))
    return out


def error_hashes(dataset) -> set[str]:
    """Hashes of the configurations recorded as failed."""
    out: set[str] = set()
    for part in _parts(Path(dataset) / ERRORS_DIR, "errors"):
        out.update(_read_column(part, "config_hash"))
    return out


def _read_parts(parts: list[Path]) -> pd.DataFrame | None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    if not parts:
        return None
    tables = []
    for part in parts:
        try:
            tables.append(pq.read_table(part))
        except Exception as exc:  # noqa: BLE001
            raise ConfigError(f"dataset: cannot read {str(part)!r}: {exc}") from None
    return pa.concat_tables(tables, promote_options="default").to_pandas()


def _dataset_dir(dataset) -> Path:
    path = Path(os.fspath(dataset))
    if not path.exists():
        raise ConfigError(f"dataset: {str(path)!r} does not exist")
    return path


def load(dataset) -> pd.DataFrame:
    """All result rows of a dataset (a sweep's directory, or one parquet/CSV
    file), in the order they were written.

    Returns
    -------
    pandas.DataFrame
        :data:`SWEEP_COLUMNS` + :data:`flowemu.api.RESULT_COLUMNS`, one row
        per (configuration, size). Empty (with those columns) when the sweep
        produced no results yet.
    """
    path = _dataset_dir(dataset)
    if path.is_file():
        try:
            return pd.read_csv(path) if path.suffix.lower() == ".csv" else pd.read_parquet(path)
        except Exception as exc:  # noqa: BLE001
            raise ConfigError(f"dataset: cannot read {str(path)!r}: {exc}") from None
    df = _read_parts(_parts(path, "part"))
    if df is None:
        from .api import RESULT_COLUMNS
        return pd.DataFrame(columns=SWEEP_COLUMNS + RESULT_COLUMNS)
    return df


def load_errors(dataset) -> pd.DataFrame:
    """The failed configurations of a dataset: the latest record of each,
    leaving out those that have results now (a retry succeeded)."""
    path = _dataset_dir(dataset)
    df = _read_parts(_parts(path / ERRORS_DIR, "errors"))
    if df is None:
        return pd.DataFrame(columns=SWEEP_COLUMNS[:4] + ["topology", "error_type", "error"])
    df = df.drop_duplicates("config_hash", keep="last")
    done = result_hashes(path)
    return df[~df["config_hash"].isin(done)].reset_index(drop=True)


# ------------------------------------------------------------------ comparison

def query(df: pd.DataFrame, where: str) -> pd.DataFrame:
    """Rows matching a pandas query over the dataset columns, e.g.
    ``"bandwidth_Bps == 5e10 and hop_latency_s < 1e-6"``."""
    try:
        return df.query(where, engine="python")
    except Exception as exc:  # noqa: BLE001 - a user expression
        raise ConfigError(f"--where: cannot apply {where!r}: {type(exc).__name__}: {exc}; "
                          f"columns: {', '.join(df.columns)}") from None


def scenario_columns(df: pd.DataFrame) -> list[str]:
    """Columns that tell comparison scenarios apart: topology and nodes, plus
    every other configuration column that varies in ``df`` (group, bandwidth,
    latencies, ...). ``ranks`` counts only where it differs from ``nodes``."""
    cols = []
    for c in SCENARIO_COLUMNS:
        if c not in df.columns:
            continue
        if c in ("topology", "nodes"):
            cols.append(c)
        elif c == "ranks":
            if "nodes" in df.columns and (df["ranks"] != df["nodes"]).any() \
                    and df["ranks"].nunique(dropna=False) > 1:
                cols.append(c)
        elif df[c].nunique(dropna=False) > 1:
            cols.append(c)
    return cols


#: goodputs whose relative difference is at most this are a tie: floating-point
#: noise (two algorithms that move the same bytes over the same links agree to
#: ~1e-15, rarely exactly), far below any difference a model can claim
TIE_RTOL = 1e-9


def compare(df: pd.DataFrame, by: str = "label") -> pd.DataFrame:
    """Per scenario and size: each algorithm's goodput, the best algorithm(s),
    and each algorithm's gain over the best *other* one.

    ``gain = goodput / (best goodput among the other algorithms) − 1`` — the
    Swing paper's "goodput gain" (§5: 100 % = twice as fast as the best other).

    Goodputs within :data:`TIE_RTOL` (relative) of each other are equal: every
    algorithm within it of the highest goodput is best (``is_best``), ``best``
    names them all joined by ``=`` in alphabetical order (``bucket=ring``),
    ``tie`` is true on every row of that scenario and size, and the gain of
    an algorithm tied with its best other is exactly 0.

    Parameters
    ----------
    df : DataFrame
        Rows with ``size_bytes`` and ``goodput_Bps`` (e.g. :func:`load`), and a
        ``label`` or ``algorithm`` column.
    by : {"label", "algorithm"}
        ``label`` compares algorithm variants (name + options that differ from
        the defaults, e.g. ``ring:ports=2``); ``algorithm`` merges the variants
        of one algorithm, taking the best per size.

    Returns
    -------
    DataFrame
        One row per (scenario, size, algorithm): the scenario columns
        (:func:`scenario_columns`), ``size_bytes``, ``algorithm``,
        ``goodput_Bps``, ``time_s``, ``best``, ``best_goodput_Bps`` (the
        highest), ``best_other``, ``best_other_goodput_Bps``, ``gain`` (NaN
        when the algorithm is alone), ``is_best`` and ``tie`` (several
        algorithms share the best). A later row of the same configuration and
        size replaces an earlier one.
    """
    if by not in ("label", "algorithm"):
        raise ConfigError(f"compare: by={by!r} is not allowed; expected 'label' or 'algorithm'")
    need = ["size_bytes", "goodput_Bps"]
    missing = [c for c in need if c not in df.columns]
    source = "label" if by == "label" and "label" in df.columns else "algorithm"
    if source not in df.columns:
        missing.append("label or algorithm")
    if missing:
        raise ConfigError(f"compare: the data lacks column(s) {', '.join(missing)}")
    keys = scenario_columns(df)
    d = df.copy()
    extra = [c for c in ("time_s", "variant") if c in d.columns]
    # a later row of the same configuration (label) and size replaces an earlier one
    variant_of = "label" if "label" in d.columns else "algorithm"
    d = d.drop_duplicates(keys + ["size_bytes", variant_of], keep="last")
    d["_alg"] = d[source].astype(str)
    if by == "algorithm":
        # best variant of each algorithm per scenario and size
        d = d.sort_values("goodput_Bps", ascending=False, kind="stable")
        d = d.drop_duplicates(keys + ["size_bytes", "_alg"], keep="first")
    gk = keys + ["size_bytes"]
    d = d[gk + ["_alg", "goodput_Bps"] + extra].rename(columns={"_alg": "algorithm"})
    d = d.sort_values(gk + ["goodput_Bps", "algorithm"],
                      ascending=[True] * len(gk) + [False, True], kind="stable")
    d = d.reset_index(drop=True)
    rank = d.groupby(gk, sort=False, dropna=False).cumcount().to_numpy()
    first = d[rank == 0][gk + ["algorithm", "goodput_Bps"]].rename(
        columns={"algorithm": "_first", "goodput_Bps": "best_goodput_Bps"})
    second = d[rank == 1][gk + ["algorithm", "goodput_Bps"]].rename(
        columns={"algorithm": "_second", "goodput_Bps": "_second_goodput"})
    d = d.merge(first, on=gk, how="left").merge(second, on=gk, how="left")
    top = rank == 0
    d["best_other"] = np.where(top, d["_second"], d["_first"])
    d["best_other_goodput_Bps"] = np.where(top, d["_second_goodput"], d["best_goodput_Bps"])
    goodput = d["goodput_Bps"].to_numpy(dtype=float)
    other = d["best_other_goodput_Bps"].to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        gain = goodput / other - 1.0
    gain[_same_goodput(goodput, other)] = 0.0
    d["gain"] = gain
    d["is_best"] = _same_goodput(goodput, d["best_goodput_Bps"].to_numpy(dtype=float))
    n_best = d.groupby(gk, sort=False, dropna=False)["is_best"].transform("sum").to_numpy()
    d["tie"] = n_best > 1
    d["best"] = d["_first"]
    if d["tie"].any():
        # name every tied best; only the (few) tied scenario-sizes pay for the join
        tied = d[d["tie"] & d["is_best"]]
        names = tied.groupby(gk, sort=False, dropna=False)["algorithm"].agg(
            lambda s: "=".join(sorted(s))).rename("_tied").reset_index()
        d = d.merge(names, on=gk, how="left")
        d["best"] = d["_tied"].where(d["tie"], d["best"])
    cols = gk + ["algorithm", "goodput_Bps"] + extra + [
        "best", "best_goodput_Bps", "best_other", "best_other_goodput_Bps", "gain", "is_best",
        "tie"]
    d = d[cols].sort_values(gk + ["algorithm"], kind="stable").reset_index(drop=True)
    return d


def compare_table(cmp: pd.DataFrame) -> str:
    """A readable wide table of :func:`compare`: one line per scenario and
    size, one column per algorithm with ``goodput (gain)``, and the best;
    one block per group when there are several."""
    if cmp.empty:
        return "(no results)"
    if "group" in cmp.columns:
        blocks = []
        for g, sub in cmp.groupby("group", sort=True):
            blocks.append(f"== group {g} ==\n" + _wide_table(sub.drop(columns="group")))
        return "\n\n".join(blocks)
    return _wide_table(cmp)


def _wide_table(cmp: pd.DataFrame) -> str:
    from .units import format_rate, format_size
    gk = [c for c in cmp.columns if c not in (
        "algorithm", "goodput_Bps", "time_s", "variant", "best", "best_goodput_Bps",
        "best_other", "best_other_goodput_Bps", "gain", "is_best", "tie")]
    gain = cmp["gain"].map(lambda g: "" if pd.isna(g) else f" ({g:+.0%})")
    if "tie" in cmp.columns:      # a tied best: "(tie)", not "(+0%)" that reads as a win
        gain = gain.where(~(cmp["tie"] & cmp["is_best"]), " (tie)")
    cell = cmp["goodput_Bps"].map(format_rate) + gain
    wide = cmp.assign(_cell=cell).pivot_table(index=gk, columns="algorithm", values="_cell",
                                              aggfunc="first", sort=True)
    # "best" names every tied best (bucket=ring), the same on each of their rows
    best = cmp[cmp["is_best"]].drop_duplicates(gk).set_index(gk)["best"]
    wide.columns.name = None
    wide = wide.fillna("-")
    wide["best"] = best.reindex(wide.index)
    wide = wide.reset_index()
    wide["size_bytes"] = wide["size_bytes"].map(format_size)
    wide = wide.rename(columns={"size_bytes": "size"})
    if "bandwidth_Bps" in wide.columns:
        wide["bandwidth_Bps"] = wide["bandwidth_Bps"].map(format_rate)
        wide = wide.rename(columns={"bandwidth_Bps": "bandwidth"})
    return wide.to_string(index=False)


def _same_goodput(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise: ``a`` and ``b`` differ by at most :data:`TIE_RTOL` of the
    larger (NaN never ties)."""
    with np.errstate(invalid="ignore"):
        return np.abs(a - b) <= TIE_RTOL * np.maximum(np.abs(a), np.abs(b))
