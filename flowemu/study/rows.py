"""What every reading of a dataset's rows shares: the scenario columns
(those that tell comparison scenarios apart, what-if conditions among them),
result rows from a DataFrame or a dataset's path, the ``--where`` filter,
and when two goodputs are a tie. The rankings are in
:mod:`flowemu.study.ranking`, the what-if slowdowns in
:mod:`flowemu.study.slowdowns`; :mod:`flowemu.study.results` gathers them."""

from __future__ import annotations

import os
import re

import numpy as np
import pandas as pd

from ..core.errors import ConfigError, show
from ..whatif.conditions import HEALTHY, WHATIF_COLUMNS
from .sweep.dataset import load
from .sweep.where import where_rows

#: the what-if columns that are conditions of a run (failed and degraded links,
#: the policy, slow ranks, background traffic): scenario columns, so a healthy
#: and a faulty row are never ranked against each other as algorithms.
#: ``failed_links`` and ``background_Bps`` are outputs of a run, not conditions.
WHATIF_SCENARIO = [c for c in WHATIF_COLUMNS if c not in ("failed_links", "background_Bps")]

#: configuration columns that make a comparison scenario when they vary
SCENARIO_COLUMNS = ["group", "topology", "nodes", "ranks", "bandwidth_Bps", "link_latency_s",
                    "hop_latency_s", "alpha_s", "gamma_s_per_B", "delta_s_per_B",
                    "incast_threshold", "incast_slope_s_per_B", "ecmp", "seed", "placement",
                    "model", "sync", "collective"] + WHATIF_SCENARIO


def with_whatif(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with missing what-if text read as the healthy defaults (``""``,
    policy ``"strict"``): rows written before the columns existed, or a file
    that lost empty strings (CSV), compare like rows that have them."""
    fill = {c: HEALTHY[c] for c in WHATIF_SCENARIO if c in df.columns and df[c].isna().any()}
    return df.fillna(fill) if fill else df


def result_frame(data, who: str) -> pd.DataFrame:
    """``data`` as result rows: a DataFrame as it is, a dataset (a sweep's
    directory, a parquet or CSV file, as a path) loaded (:func:`load`);
    anything else is a ConfigError naming ``who``."""
    if isinstance(data, pd.DataFrame):
        return _numeric(data, who)
    if isinstance(data, (str, os.PathLike)):
        return load(data)
    raise ConfigError(f"{who}: {type(data).__name__} {show(data, 40)} is not allowed; expected "
                      "a DataFrame of results or a dataset's path (a sweep's directory, a "
                      "parquet or CSV file)")


#: the columns of result rows whose values are compared as numbers
NUMERIC_COLUMNS = ("size_bytes", "time_s", "goodput_Bps", "healthy_time_s", "slowdown")


def _numeric(df: pd.DataFrame, who: str) -> pd.DataFrame:
    """``df``, or a ConfigError naming a column of :data:`NUMERIC_COLUMNS`
    that holds something else than numbers (a CSV read with ``dtype=str``:
    its texts would be ranked as texts, '9' above '10')."""
    for col in NUMERIC_COLUMNS:
        if col in df.columns and not (pd.api.types.is_numeric_dtype(df[col])
                                      and not pd.api.types.is_bool_dtype(df[col])):
            raise ConfigError(f"{who}: column {col} holds {df[col].dtype} values, not numbers; "
                              "read the rows with flowemu.load, or convert it "
                              f"(df[{col!r}] = pd.to_numeric(df[{col!r}]))")
    return df


def query(df: pd.DataFrame, where: str) -> pd.DataFrame:
    """Rows matching a where expression as a sweep file writes it
    (:func:`flowemu.study.sweep.where.where_rows`), e.g.
    ``"bandwidth == rate('100Gb/s') and hop_latency < time('1us')"``; the
    dataset's column names work too (``"bandwidth_Bps == 1.25e10"``).
    An expression outside that language is still tried as a pandas query
    (``@name``, backquoted names, ``.str`` methods), as ``--where`` took
    before; when neither reads it, the language's refusal is raised."""
    try:
        return df[where_rows(df, where)]
    except ConfigError as refused:
        if re.search(r"\boptions\s*\.\s*get\b", where):
            # pandas reads options as the text column, whose .get is a label lookup:
            # every row would compare None, silently
            raise ConfigError(f"where: {where!r}: options.get is not offered; write "
                              "options['variant']: an option a row's algorithm does not have "
                              "reads as None there") from None
        try:
            return df.query(where, engine="python")
        except Exception:  # noqa: BLE001 - not a pandas query either: say what is allowed
            raise refused from None


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


def same_goodput(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise: ``a`` and ``b`` differ by at most :data:`TIE_RTOL` of the
    larger (NaN never ties)."""
    with np.errstate(invalid="ignore"):
        return np.abs(a - b) <= TIE_RTOL * np.maximum(np.abs(a), np.abs(b))


def with_labels(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with a ``label`` column, which tells the rows' algorithms
    apart: as it is where the rows have one (a sweep's). Rows without one
    (``simulate``'s) are labelled by the algorithm's name, and where one name
    has rows of several option sets at one scenario and size (two variants
    simulated side by side: ``recdoub:variant=latency`` and
    ``recdoub:variant=bandwidth``), by the name and the options that differ
    among its rows; an ``auto`` option, resolved to one variant at each size,
    keeps the name alone."""
    if "label" in df.columns or "algorithm" not in df.columns:
        return df
    name = df["algorithm"].astype(str)
    if "options" not in df.columns or df.empty:
        return df.assign(label=name)
    options = df["options"].fillna("").astype(str)
    keys = scenario_columns(df) + [c for c in ("size_bytes",) if c in df.columns]
    sets = df[keys].assign(_name=name, _options=options).groupby(
        keys + ["_name"], dropna=False, sort=False)["_options"].nunique()
    several = set(sets[sets > 1].index.get_level_values("_name"))
    label = name.copy()
    for alg in several:
        rows = (name == alg).to_numpy()
        parsed = [dict(item.split("=", 1) for item in text.split(",") if "=" in item)
                  for text in options[rows]]
        differ = [k for k in dict.fromkeys(k for p in parsed for k in p)
                  if len({p.get(k) for p in parsed}) > 1]
        label[rows] = [alg + ":" + ",".join(f"{k}={p[k]}" for k in differ if k in p)
                       for p in parsed]
    return df.assign(label=label)
