"""Output files the command line writes: checked before work starts, written atomically.

Every option that names an output file (``run --out``, ``--congestion``,
``--flows-out``, ``compare --out``) goes through this module, so each of them
fails the same way: one :class:`~flowemu.core.errors.ConfigError` whose message
starts with the option as the user wrote it (``--congestion: ...``).

1. :func:`output_format` decides the format from the file's extension and
   refuses a conflicting ``--format``.
2. :func:`check_writable` runs before any simulation: the path must not be a
   directory, its directory must exist, and a probe file must be creatable
   there (this catches read-only places whatever the user's privileges).
3. :func:`write_text`, :func:`write_frame` and :func:`write_atomic` write into
   a hidden temporary file beside the target and rename it into place, so a
   failed write (a full disk) leaves no half file behind.

Extensions: ``.csv`` → CSV, ``.json`` → JSON, ``.parquet``/``.pq`` →
parquet, ``.txt`` → the text table; no extension → ``--format`` (default
table); any other extension is refused unless ``--format`` says what to write.
"""

from __future__ import annotations

import json
import math
import os
import stat
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from .errors import ConfigError, show

#: extension (lower case) -> format it means
EXTENSION_FORMATS = {".csv": "csv", ".json": "json", ".parquet": "parquet", ".pq": "parquet",
                     ".txt": "table"}


def _ext_list(formats: Iterable[str]) -> str:
    return ", ".join(e for e, f in EXTENSION_FORMATS.items() if f in formats)


def output_format(path: str | None, fmt: str | None, allowed: Iterable[str], *,
                  option: str = "--out", format_option: str = "--format",
                  default: str = "table") -> str:
    """The format to write: the one the file's extension means, else ``fmt``.

    Parameters
    ----------
    path : str or None
        The output file (None: standard output).
    fmt : str or None
        ``--format`` as given (None when the user did not give it).
    allowed : iterable of str
        Formats this command can write, e.g. ``("table", "csv", "json", "parquet")``.
    option, format_option : str
        The options' names, for the messages.
    default : str
        Format when neither the extension nor ``fmt`` says.

    Raises
    ------
    ConfigError
        ``fmt`` unknown; an extension of a format this command cannot write; an
        unknown extension without ``fmt``; ``fmt`` conflicting with the
        extension; a binary format (parquet) without a path.
    """
    allowed = tuple(allowed)
    if fmt is not None and fmt not in allowed:
        raise ConfigError(f"{format_option}: unknown format {fmt!r}; allowed: "
                          f"{', '.join(allowed)}")
    if path is None or path == "-":
        chosen = fmt or default
        if chosen == "parquet":
            raise ConfigError(f"{format_option} parquet needs {option} PATH (parquet is binary)")
        return chosen
    ext = Path(path).suffix.lower()
    by_ext = EXTENSION_FORMATS.get(ext)
    if by_ext is not None and by_ext not in allowed:
        raise ConfigError(f"{option}: {path!r}: this command cannot write {by_ext} "
                          f"({ext}); use {_ext_list(allowed)}")
    if by_ext is None:
        if ext and fmt is None:
            raise ConfigError(f"{option}: cannot tell the format of {path!r} from its extension "
                              f"{ext!r}; use {_ext_list(allowed)}"
                              + (f" or give {format_option}" if format_option else ""))
        return fmt or default
    if fmt is not None and fmt != by_ext:
        raise ConfigError(f"{format_option} {fmt} conflicts with {option} {path!r} "
                          f"(a {ext} file is {by_ext}); drop {format_option} or change "
                          "the extension")
    return by_ext


def _special(path: Path) -> bool:
    """An existing non-regular file (``/dev/stdout``, a FIFO): written in
    place, since renaming a temporary file over it would replace the device."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def check_writable(path, option: str) -> Path:
    """Check, before any work, that ``path`` can be written; return it as a Path.

    Raises
    ------
    ConfigError
        ``option: ...`` when ``path`` is empty, is a directory, its directory
        is missing or not a directory, or nothing can be created there
        (read-only file system, no permission).
    """
    if path is None or (isinstance(path, str) and path.strip() == ""):
        raise ConfigError(f"{option}: empty path; give a file name")
    if not isinstance(path, (str, os.PathLike)):
        raise ConfigError(f"{option}: {show(path)} is not allowed; expected a file name")
    p = Path(path)
    if str(path).endswith(os.sep) or p.is_dir():
        raise ConfigError(f"{option}: {str(path)!r} is a directory; give a file name in it")
    if _special(p):
        if not os.access(p, os.W_OK):
            raise ConfigError(f"{option}: {str(path)!r} is not writable")
        return p
    parent = p.parent
    if not parent.exists():
        raise ConfigError(f"{option}: directory {str(parent)!r} of {str(path)!r} does not exist")
    if not parent.is_dir():
        raise ConfigError(f"{option}: {str(parent)!r} (in {str(path)!r}) is not a directory")
    if p.exists() and not os.access(p, os.W_OK):
        raise ConfigError(f"{option}: {str(path)!r} exists and is not writable")
    try:  # the one reliable test: create (and remove) a file where the output will go
        fd, probe = tempfile.mkstemp(prefix=f".tmp-{p.name}.", dir=parent)
    except OSError as exc:
        raise ConfigError(f"{option}: cannot write {str(path)!r}: no file can be created in "
                          f"{str(parent)!r} ({exc.strerror or exc})") from None
    os.close(fd)
    os.unlink(probe)
    return p


def check_distinct(paths: dict[str, str | None]) -> None:
    """Refuse two options that would write the same file (``{option: path}``)."""
    seen: dict[str, str] = {}
    for option, path in paths.items():
        if path is None or path == "-":
            continue
        key = os.path.realpath(path)
        if key in seen:
            raise ConfigError(f"{option}: {path!r} is also the file of {seen[key]}; "
                              "give each output its own file")
        seen[key] = option


def check_outside_dataset(path, dataset, option: str, owned=frozenset(),
                          is_dataset: Callable | None = None) -> None:
    """Refuse to write ``path`` into the directory of ``dataset`` (a sweep's
    results), or into any directory ``is_dataset`` says is one (another
    dataset than the one read): its parquet files are read as a whole
    (``pd.read_parquet(DIR)``, :func:`flowemu.load`), and a CSV or figure
    among them breaks that. A file or directory whose name starts with
    ``_`` or ``.`` in it (``_compare.csv``, ``_figures/``) is skipped by those
    readers, and allowed, unless it is one of the ``owned`` names the
    dataset keeps at its top level (its manifest, its sweep file, its
    lock); such a directory of it is made when it does not exist yet (as
    ``flowemu plot DATASET`` makes ``_figures/``)."""
    if path is None or path == "-":
        return
    target = os.path.realpath(path)
    homes = [] if dataset is None else [os.path.realpath(dataset)]
    if is_dataset is not None and is_dataset(os.path.dirname(target)):
        homes.append(os.path.dirname(target))
    for home in dict.fromkeys(homes):
        if not os.path.isdir(home):
            continue
        rel = os.path.relpath(target, home)
        if rel == os.curdir or rel.startswith(os.pardir + os.sep) or rel == os.pardir:
            continue
        parts = rel.split(os.sep)
        if parts[0] in owned:
            raise ConfigError(f"{option}: {str(path)!r} is the dataset's own {parts[0]} (in "
                              f"{home!r}); give another name")
        if any(part.startswith(("_", ".")) for part in parts):
            if len(parts) > 1 and not os.path.exists(os.path.join(home, *parts[:-1])):
                try:
                    os.makedirs(os.path.join(home, *parts[:-1]), exist_ok=True)
                except OSError as exc:
                    raise ConfigError(f"{option}: cannot make the directory of {str(path)!r} "
                                      f"({exc.strerror or exc})") from None
            continue
        raise ConfigError(f"{option}: {str(path)!r} is inside the dataset {home!r}, whose "
                          "readers (pd.read_parquet of the directory, flowemu.load) would then "
                          "fail on it; write it outside the dataset, or give it a name "
                          "starting with _ (as _compare.csv, or a directory as _figures/)")


def write_atomic(path, option: str, write: Callable) -> Path:
    """Write ``path`` through ``write(binary_file)`` into a temporary file in
    the same directory, then rename it over ``path``.

    A failure while writing (e.g. ``ENOSPC``, a full disk) removes the
    temporary file, leaves any previous ``path`` untouched, and raises
    ``ConfigError("option: cannot write ...")``.
    """
    p = Path(path)
    if _special(p):  # a device or pipe: nothing to rename, write through
        try:
            with open(p, "wb") as fh:
                write(fh)
        except OSError as exc:
            raise ConfigError(f"{option}: cannot write {str(path)!r}: "
                              f"{exc.strerror or exc}") from None
        return p
    try:
        return replace_atomically(p, write)
    except OSError as exc:
        raise ConfigError(f"{option}: cannot write {str(path)!r}: "
                          f"{exc.strerror or exc}") from None


def replace_atomically(path, write: Callable) -> Path:
    """The mechanism under :func:`write_atomic`: ``write(binary_file)`` into a
    temporary ``.tmp-NAME.*`` beside ``path``, synced, given the usual mode and
    renamed over ``path``. An ``OSError`` removes the temporary file and
    passes through (a sweep reports a full disk as failed work, exit 1)."""
    p = Path(path)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".tmp-{p.name}.", dir=p.parent)
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_UMASK)   # mkstemp makes 0600; give the usual mode
        os.replace(tmp, p)
        tmp = None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    return p


def _read_umask() -> int:
    mask = os.umask(0)   # the only portable way to read it: set and restore, once at import
    os.umask(mask)
    return mask


_UMASK = _read_umask()


def write_text(path, option: str, text: str) -> Path:
    """Write ``text`` (a final newline added if missing) atomically."""
    data = (text if text.endswith("\n") else text + "\n").encode()
    return write_atomic(path, option, lambda fh: fh.write(data))


def frame_text(df, fmt: str) -> str:
    """CSV or JSON (one object per row) text of a DataFrame."""
    if fmt == "csv":
        return df.to_csv(index=False)
    if fmt == "json":
        return json_records(df)
    raise ValueError(fmt)


def json_records(df) -> str:
    """A DataFrame as a JSON array of one object per row, each number as
    Python writes it (the shortest text that reads back as the same double:
    pandas' ``to_json`` keeps 10 decimals, which wrote gamma = 1.5e-10 s/B as
    0.0000000002 and an incast slope of 30.5 ps as 0.0); NaN and infinities
    as ``null`` (JSON has no numbers for them)."""

    def plain(v):
        if hasattr(v, "item") and not isinstance(v, (str, bytes)):
            v = v.item()   # numpy scalars
        if isinstance(v, float) and not math.isfinite(v):
            return None
        if v is None or isinstance(v, (str, int, float, bool)):
            return v
        if type(v).__name__ in ("NAType", "NaTType"):   # pandas' missing values
            return None
        return str(v)

    rows = [{str(k): plain(v) for k, v in row.items()}
            for row in df.to_dict(orient="records")]
    return json.dumps(rows, indent=1, ensure_ascii=False)


def write_frame(path, option: str, df, fmt: str) -> Path:
    """Write a DataFrame as ``fmt`` (``csv``, ``json`` or ``parquet``) atomically."""
    if fmt == "parquet":
        return write_atomic(path, option, lambda fh: df.to_parquet(fh, index=False))
    return write_text(path, option, frame_text(df, fmt))
