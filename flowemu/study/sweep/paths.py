"""Files a sweep file names: graph topologies (``graph:FILE``), placement
files (of the grid and of its jobs), network presets, background and traffic
files. Each is read relative to the directory of the sweep file (an absolute
path as it is), so a sweep file moves with its files and runs from any
directory.

Files other than traffic files used to be read relative to the directory
flowemu runs in. For the sweep files written then, a file that is not beside
the sweep file but is in the current directory is still used, and
:attr:`SweepFiles.notes` says so (``flowemu sweep`` prints each as a note).
A file in neither place is a ConfigError naming the paths looked at.

The files of the sweep file being read are :func:`current`: the values of a
grid and of its ``[[exclude]]`` entries are parsed by the same functions
(:mod:`.fields`), which take the sweep file's directory from there instead of
from every caller.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path

from ...core.errors import ConfigError

#: a file's name rather than a preset's or a generator's: a directory in it,
#: or a suffix such as ``.toml`` or ``.csv``
_FILE_NAME = re.compile(r"[/\\]|\.[A-Za-z][A-Za-z0-9]*$")


@dataclass
class SweepFiles:
    """Where the files of one sweep file are; ``notes`` are the files found
    in the current directory only, one line each."""

    sweep: Path | None = None    # the sweep file (None: the current directory)
    notes: list[str] = field(default_factory=list)
    #: the path opened -> the text the sweep file gives, where they differ
    written: dict = field(default_factory=dict)
    _noted: set = field(default_factory=set, init=False, repr=False)

    @property
    def base(self) -> Path:
        """The directory relative paths are read from."""
        return self.sweep.parent if self.sweep is not None else Path(".")

    def path(self, text: str, loc: str, required: bool = True,
             checked_later: bool = False) -> str:
        """The path to open for the file ``text`` the sweep file names at
        ``loc``: beside the sweep file, else in the current directory (with a
        note). Beside a sweep file in the current directory it is ``text``
        itself (the configurations keep the identity they had), else relative
        to the current directory when it lies below it, else absolute.
        ``text`` is taken without its ``./`` and ``dir/..`` parts
        (``os.path.normpath``): ``./p.txt`` and ``p.txt`` are one file, one
        configuration, from any directory.

        Raises
        ------
        ConfigError
            The file is in neither place and ``required`` (or ``text`` looks
            like a file name: a preset or generator name is left to its
            field's check); the message names every path looked at. With
            ``checked_later`` the path beside the sweep file is returned
            instead, for the field's own check to report with the others.
        """
        if not text or os.path.isabs(text):
            return text
        given, text = text, os.path.normpath(text)
        beside = self.base / text
        if os.path.exists(beside):
            return self._opened(text, beside)
        if not self._here() and os.path.exists(text):
            if text not in self._noted:
                self._noted.add(text)
                self.notes.append(
                    f"{self.sweep}: {loc}: read {os.path.abspath(text)} from the current "
                    f"directory: there is no {os.path.abspath(beside)} beside the sweep "
                    "file, where its paths are read from")
            return text
        if not (required or _FILE_NAME.search(given)):
            return given
        if checked_later:
            return self._opened(text, beside)
        raise ConfigError(f"{text}: file not found; looked for {self._looked(text)}")

    def missing(self, path: str) -> str | None:
        """For a path :meth:`path` returned (``checked_later``) that does not
        exist and is written as a file name (a suffix or a directory):
        ``"file TEXT not found; looked for ..."``, naming the file as the
        sweep file writes it and every place looked at; else None."""
        if not path or os.path.isabs(path) or os.path.exists(path):
            return None
        text = self.written.get(path, path)
        if not _FILE_NAME.search(text):   # (not named as a file: its field says what it is)
            return None
        return f"file {text!r} not found; looked for {self._looked(text)}"

    def _looked(self, text: str) -> str:
        """The places a file the sweep file names is looked for."""
        looked = f"{os.path.abspath(self.base / text)} (beside the sweep file)"
        if not self._here():
            looked += f" and {os.path.abspath(text)} (in the current directory)"
        return looked

    def _opened(self, text: str, beside: Path) -> str:
        """The path of ``text`` beside the sweep file, as a configuration
        names it (its ``written`` text kept for the configuration's hash)."""
        if self._here():
            return text
        path = _from_here(beside)
        self.written[path] = text
        return path

    def as_written(self, canonical: dict) -> dict:
        """A configuration's identity (:meth:`Config.canonical`) with each
        file named as the sweep file names it, not by the path opened from
        the current directory: a sweep identifies its configurations alike
        from any directory."""
        return {key: self._text(value) for key, value in canonical.items()}

    def _text(self, value):
        if isinstance(value, dict):
            return self.as_written(value)
        if isinstance(value, (list, tuple)):
            return type(value)(self._text(v) for v in value)
        return named_as_written(value, self.written)

    def _here(self) -> bool:
        """Whether the sweep file lies in the current directory."""
        try:
            return os.path.samefile(self.base, ".")
        except OSError:
            return False


#: a path within a text: not part of a longer name (``graph:P``, ``placement=P|``, ``P``)
_PATH_CHARS = r"\w./\\-"


def named_as_written(value, written: dict):
    """``value`` (a text: a spec, a job, a configuration's key, a result
    row's field) with each path opened (a key of ``written``) named as the
    sweep file names it; anything else as it is."""
    if not isinstance(value, str) or not written:
        return value
    for path, text in written.items():
        if path in value:
            value = re.sub(rf"(?<![{_PATH_CHARS}]){re.escape(path)}(?![{_PATH_CHARS}])",
                           lambda _m, text=text: text, value)
    return value


def _from_here(path: Path) -> str:
    """``path`` relative to the current directory when it lies below it,
    else absolute: one text however the sweep file's path was typed."""
    full = os.path.abspath(path)
    rel = os.path.relpath(full)
    return full if rel == os.pardir or rel.startswith(os.pardir + os.sep) else rel


_CURRENT: ContextVar[SweepFiles | None] = ContextVar("flowemu_sweep_files", default=None)


def current() -> SweepFiles:
    """The files of the sweep file being read (:func:`reading`); outside
    one, relative to the current directory."""
    files = _CURRENT.get()
    return files if files is not None else SweepFiles()


@contextmanager
def reading(sweep: Path) -> Iterator[SweepFiles]:
    """Within: the files named are those of the sweep file ``sweep``."""
    files = SweepFiles(Path(sweep))
    token = _CURRENT.set(files)
    try:
        yield files
    finally:
        _CURRENT.reset(token)
