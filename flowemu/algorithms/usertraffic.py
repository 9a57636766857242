"""User traffic: a step-wise traffic matrix from a file, a DataFrame or Traffic objects.

Every form goes through one check (:func:`traffic_steps`) so that a file, a
pandas DataFrame and a list of :class:`~flowemu.algorithms.base.Traffic` are
refused for the same reasons with the same messages: the columns are exactly
``step, src, dst, bytes`` (a missing or an extra column is named), ranks and
steps are non-negative integers, bytes are finite and >= 0, no flow goes to
its own rank, and there is at least one flow.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from ..core import budget, checks
from ..core.errors import ConfigError, checked_keywords, show
from ..core.units import MAX_SIZE
from .base import Reduction, Schedule, Step, Traffic

#: the columns of a traffic table, in this order
COLUMNS = ("step", "src", "dst", "bytes")
#: ranks and steps are stored as int32
MAX_ID = 2**31 - 1
#: parquet file suffixes (anything else is read as CSV)
PARQUET_SUFFIXES = (".parquet", ".pq")


@checked_keywords
def read_traffic(path, max_memory=None) -> list[Traffic]:
    """Read a step-wise traffic matrix (CSV or parquet with exactly the
    columns ``step, src, dst, bytes``; src/dst are rank ids) into one Traffic
    per step, in step order. ``share`` holds absolute bytes.

    Raises
    ------
    ConfigError
        The file is missing or unreadable, a column is missing or extra, a
        value is bad, or reading it would need more memory than ``max_memory``
        (see :mod:`flowemu.core.budget`).
    """
    return read_traffic_steps(path, max_memory)[1]


def read_traffic_steps(path, max_memory=None, whole: bool = False
                       ) -> tuple[np.ndarray, list[Traffic]]:
    """:func:`read_traffic` plus the step numbers of the file, ``(int64[S],
    [Traffic])``; with ``whole``, bytes must be whole numbers (a sweep's)."""
    return frame_steps(read_table(path, "traffic", max_memory), f"traffic {str(path)!r}",
                       path, whole)


def read_table(path, option: str = "traffic", max_memory=None, missing: str = ""):
    """A CSV or parquet file (by suffix) as a DataFrame, or a one-line
    ConfigError naming ``option``: not a path, missing (``missing`` is
    appended to that message), not a file, beyond the memory limit, or
    unreadable."""
    import pandas as pd

    if not isinstance(path, (str, Path)):
        raise ConfigError(f"{option}: {show(path)} is not a path")
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{option}: file {str(path)!r} does not exist{missing}")
    if not path.is_file():
        raise ConfigError(f"{option}: {str(path)!r} is not a file")
    parquet = path.suffix.lower() in PARQUET_SUFFIXES
    budget.check(budget.traffic_file_bytes(path, parquet), budget.limit(max_memory),
                 f"reading {option} file {path.name}")
    try:
        if parquet:
            return pd.read_parquet(path)
        with warnings.catch_warnings():
            # a row with a field more than the header: pandas would take the
            # first column for an index and shift the others (step 7, src 0
            # read as src 7), or with index_col=False drop the last field
            # and warn: refused, never timed
            warnings.simplefilter("error", pd.errors.ParserWarning)
            return pd.read_csv(path, index_col=False)
    except Exception as exc:  # noqa: BLE001 - any reader failure is a user input problem
        long = None if parquet else _first_long_row(path)
        if long is not None:
            raise ConfigError(f"{option}: cannot read {str(path)!r}: line {long[0]} has "
                              f"{long[1]} fields, the header names {long[2]} (a field too "
                              "many, or a trailing comma?)") from None
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ConfigError(f"{option}: cannot read {str(path)!r}: {first}") from None


def _first_long_row(path: Path) -> tuple[int, int, int] | None:
    """``(line, fields, header fields)`` of the first line of a CSV file with
    more fields than its header, or None."""
    import csv

    try:
        with open(path, newline="", encoding="utf-8", errors="replace") as fh:
            rows = csv.reader(fh)
            named = len(next(rows, []))
            for row in rows:
                if len(row) > named:
                    return rows.line_num, len(row), named
    except (OSError, csv.Error):
        return None
    return None


def _is_number_text(text: str) -> bool:
    """Whether a column name is a number (pandas' name for a header-less
    file's first row, ``0.1`` for a second ``0``)."""
    try:
        float(text)
    except ValueError:
        return False
    return True


def frame_steps(df, where: str = "traffic", path=None, whole: bool = False
                ) -> tuple[np.ndarray, list[Traffic]]:
    """Check a DataFrame of flows and split it into steps.

    Parameters
    ----------
    df : pandas.DataFrame
        Exactly the columns ``step, src, dst, bytes`` (any order; numpy or
        object dtypes whose values are numbers).
    where : str
        How messages name the input (``traffic 'x.csv'``).
    path : str or Path, optional
        The CSV file ``df`` was read from: a message naming a row also
        names its line in the file.
    whole : bool
        Bytes must be whole numbers (a sweep's rows hold whole bytes).

    Returns
    -------
    steps : int64[S]
        The distinct step numbers, ascending.
    traffic : list of Traffic
        One per step; ``share`` holds absolute bytes; flows keep file order.
    """
    import pandas as pd

    if not isinstance(df, pd.DataFrame):
        raise ConfigError(f"{where}: expected a pandas DataFrame, got {type(df).__name__}")
    names = [str(c).strip() for c in df.columns]   # ("step, src, ..." as a CSV writes it by hand)
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ConfigError(f"{where}: column(s) {', '.join(dup)} appear more than once")
    missing = [c for c in COLUMNS if c not in names]
    extra = [n for n in names if n not in COLUMNS]
    if missing or extra:
        parts = ([f"missing column(s) {', '.join(missing)}"] if missing else []) \
            + ([f"extra column(s) {', '.join(extra)}"] if extra else [])
        unnamed = [i for i, n in enumerate(names) if n.startswith("Unnamed")]
        hint = " (an index written by to_csv? write with index=False)" if 0 in unnamed else \
            " (a trailing comma on the header line?)" if len(names) - 1 in unnamed else ""
        if len(missing) == len(COLUMNS) and all(_is_number_text(n) for n in extra):
            hint = (" (the first row holds numbers: the file has no header row; its first "
                    "line must name the columns, step,src,dst,bytes)")
        raise ConfigError(f"{where}: {'; '.join(parts)}{hint}; the columns must be exactly "
                          f"{', '.join(COLUMNS)}")
    if len(df) == 0:
        raise ConfigError(f"{where}: no rows; expected at least one flow")
    df = df.rename(columns=dict(zip(df.columns, names, strict=True)))

    def row(i: int) -> str:
        return _row_name(i, path)

    cols = {c: _ids(df[c], c, where, row) for c in ("step", "src", "dst")}
    column = df["bytes"]
    flags = np.full(len(column), column.dtype == bool) if column.dtype != object else \
        column.map(lambda v: isinstance(v, (bool, np.bool_))).to_numpy(dtype=bool)
    if flags.any():   # (pandas reads True as 1: a byte count it is not)
        i = int(np.flatnonzero(flags)[0])
        raise ConfigError(f"{where}: column bytes {row(i)}: {show(df['bytes'].iloc[i])} is not "
                          "a number of bytes")
    # (an integer past 2**53 would round to one in range as a double; pandas
    # reads a column of integers as int64, or as Python ints past int64)
    if column.dtype.kind in "iu":
        big = column.to_numpy() > MAX_SIZE
    elif column.dtype == object:
        big = column.map(lambda v: type(v) is int and v > MAX_SIZE).to_numpy(dtype=bool)
    else:
        big = np.zeros(len(column), dtype=bool)
    if big.any():
        i = int(np.flatnonzero(big)[0])
        raise ConfigError(f"{where}: column bytes {row(i)}: {show(column.iloc[i])} is not "
                          "a number of bytes in 0..2**53 (8PiB)")
    nbytes = _numbers(df["bytes"], "bytes", where, row)
    bad = np.flatnonzero(~np.isfinite(nbytes) | (nbytes < 0) | (nbytes > MAX_SIZE))
    if len(bad):
        i = int(bad[0])
        raise ConfigError(f"{where}: column bytes {row(i)}: {show(df['bytes'].iloc[i])} is not "
                          "a number of bytes in 0..2**53 (8PiB)")
    if whole:
        part = np.flatnonzero(nbytes != np.floor(nbytes))
        if len(part):
            i = int(part[0])
            raise ConfigError(f"{where}: column bytes {row(i)}: {show(df['bytes'].iloc[i])} is "
                              "not a whole number of bytes, as a sweep's size_bytes column "
                              "holds them (round the column, e.g. pandas' df['bytes'].round())")
    same = np.flatnonzero(cols["src"] == cols["dst"])
    if len(same):
        i = int(same[0])
        raise ConfigError(f"{where}: {row(i)}: src equals dst ({int(cols['src'][i])}); a flow "
                          "must go to another rank")
    step = cols["step"]
    order = np.argsort(step, kind="stable")
    sorted_steps = step[order]
    starts = np.concatenate(([0], np.flatnonzero(np.diff(sorted_steps)) + 1))
    ends = np.append(starts[1:], len(order))
    src, dst, share = cols["src"][order], cols["dst"][order], nbytes[order]
    traffic = [Traffic(src[a:b], dst[a:b], share[a:b])
               for a, b in zip(starts.tolist(), ends.tolist(), strict=True)]
    return sorted_steps[starts].astype(np.int64), traffic


def _row_name(i: int, path=None) -> str:
    """``row i`` (rows counted from 0, as a DataFrame's), and with the CSV
    file ``path`` the file line it was read from: ``row 3 (line 5)``."""
    if path is None or Path(path).suffix.lower() in PARQUET_SUFFIXES:
        return f"row {i}"
    line = _data_line(Path(path), i)
    return f"row {i}" if line is None else f"row {i} (line {line})"


def _data_line(path: Path, i: int) -> int | None:
    """The line of a CSV file where its data row ``i`` (from 0, after the
    header) starts, or None. As pandas reads it: a line that is empty or
    only whitespace is skipped (a byte-order mark at the start too), a line
    of empty fields (``,,,``, ``""``) is a row."""
    import csv

    lines: list[str] = []   # the physical lines the reader took for a record

    def taking(fh):
        for line in fh:
            lines.append(line)
            yield line

    try:
        with open(path, newline="", encoding="utf-8-sig", errors="replace") as fh:
            rows = csv.reader(taking(fh))
            start = 1
            header = True
            k = 0
            for _ in rows:
                blank = len(lines) == 1 and not lines[0].strip()
                lines.clear()
                if not blank:
                    if header:
                        header = False
                    elif k == i:
                        return start
                    else:
                        k += 1
                start = rows.line_num + 1
    except (OSError, csv.Error):
        return None
    return None


def _numbers(column, name: str, where: str, row=lambda i: f"row {i}") -> np.ndarray:
    import pandas as pd

    try:
        values = pd.to_numeric(column, errors="coerce")
        out = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        out = None
    if out is None or np.isnan(out).any():
        if out is None:
            i = 0
        else:
            i = int(np.flatnonzero(np.isnan(out))[0])
        value = column.iloc[i]
        if value is None or (isinstance(value, float) and np.isnan(value)):
            raise ConfigError(f"{where}: column {name} {row(i)}: the field is empty or NaN (a "
                              "value missing, or a row with fewer fields than the header); "
                              "expected a number")
        raise ConfigError(f"{where}: column {name} {row(i)}: {show(value)} is not a number")
    return out


def _ids(column, name: str, where: str, row=lambda i: f"row {i}") -> np.ndarray:
    values = _numbers(column, name, where, row)
    bad = np.flatnonzero((values != np.floor(values)) | (values < 0) | (values > MAX_ID)
                         | ~np.isfinite(values))
    if len(bad):
        i = int(bad[0])
        raise ConfigError(f"{where}: column {name} {row(i)}: {show(column.iloc[i])} is not an "
                          f"integer in 0..{MAX_ID}")
    return values.astype(np.int64)


def check_traffic_list(traffic, where: str = "traffic") -> list[Traffic]:
    """A Traffic or a non-empty list/tuple of Traffic, each flow between two
    different ranks with finite bytes >= 0, at least one flow in all."""
    if isinstance(traffic, Traffic):
        traffic = [traffic]
    if not isinstance(traffic, (list, tuple)):
        raise ConfigError(f"{where}: {show(traffic)} is not allowed; expected a path to a "
                          "CSV/parquet file, a DataFrame with columns step, src, dst, bytes, "
                          "or a list of Traffic")
    if not traffic:
        raise ConfigError(f"{where}: the list is empty; expected at least one step")
    for k, t in enumerate(traffic):
        if not isinstance(t, Traffic):
            raise ConfigError(f"{where}: step {k} is {show(t)}, not a Traffic")
        if t.num_flows == 0:
            continue
        if t.src.min() < 0 or t.dst.min() < 0:
            raise ConfigError(f"{where}: step {k}: rank {int(min(t.src.min(), t.dst.min()))} "
                              "is negative")
        same = np.flatnonzero(t.src == t.dst)
        if len(same):
            raise ConfigError(f"{where}: step {k} flow {int(same[0])}: src equals dst "
                              f"({int(t.src[same[0]])}); a flow must go to another rank")
        bad = np.flatnonzero(~np.isfinite(t.share) | (t.share < 0))
        if len(bad):
            raise ConfigError(f"{where}: step {k} flow {int(bad[0])}: bytes "
                              f"{show(t.share[bad[0]])} is not a finite number >= 0")
    if sum(t.num_flows for t in traffic) == 0:
        raise ConfigError(f"{where}: no flows in any step")
    return list(traffic)


def traffic_steps(traffic, max_memory=None) -> tuple[str | None, np.ndarray, list[Traffic]]:
    """Any accepted form of user traffic -> ``(name or None, step numbers,
    [Traffic])``: a path (str or Path) to a CSV/parquet file, a DataFrame,
    one Traffic or a list of them."""
    import pandas as pd

    if isinstance(traffic, (str, Path)):
        name, where = Path(traffic).name, f"traffic {str(traffic)!r}"
        steps, tr = read_traffic_steps(traffic, max_memory)
    elif isinstance(traffic, pd.DataFrame):
        # the checked copies of its columns and the steps cut from them
        budget.check(len(traffic) * budget.TRAFFIC_ROW_BYTES, budget.limit(max_memory),
                     f"checking a traffic DataFrame of {len(traffic)} rows")
        name, where = None, "traffic"
        steps, tr = frame_steps(traffic, where)
    else:
        name, where = None, "traffic"
        tr = check_traffic_list(traffic)
        steps = np.arange(len(tr), dtype=np.int64)
    if not any(t.share.any() for t in tr):   # a background of none is fine; a timing is not
        raise ConfigError(f"{where}: every flow carries 0 bytes; there is nothing to time")
    return name, steps, tr


def traffic_schedule(topology, traffic, name, max_memory) -> Schedule:
    """User traffic (a path, DataFrame, Traffic or list of them) as a Schedule
    on ``topology`` (a :class:`flowemu.topology.Topology`); step labels are
    ``step<number>`` with the table's step numbers. The schedule's variant is
    ``name`` (default: the file name, or ``"traffic"``)."""
    file_name, numbers, steps = traffic_steps(traffic, max_memory)
    if name is None:
        name = file_name or "traffic"
    name = checks.text("name", name, "my-traffic")
    p = max(int(max(t.src.max(), t.dst.max())) for t in steps if t.num_flows) + 1
    if p > topology.num_endpoints:
        raise ConfigError(f"traffic: rank {p - 1} does not exist on {topology.spec} "
                          f"({topology.num_endpoints} endpoints)")
    return Schedule("traffic", name, p,
                    tuple(Step(t, Reduction.none(), f"step{int(k)}")
                          for k, t in zip(numbers.tolist(), steps, strict=True)))


def traffic_ranks(schedule: Schedule) -> np.ndarray:
    """The ranks a schedule's flows leave or reach, sorted (int64): a user's
    traffic numbers its ranks up to its highest but need not use each."""
    used = np.zeros(schedule.p, dtype=bool)
    for step in schedule.steps.patterns:
        used[step.traffic.src] = True
        used[step.traffic.dst] = True
    return np.flatnonzero(used)
