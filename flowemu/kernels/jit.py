"""The one place that sets numba options for every kernel, and that keeps
their compiled cache true to the sources.

numba caches each kernel's machine code (``cache=True``) and compiles it
again only when the file that defines it changes, not when a function it
calls into (and has compiled in) changes in another file: after an update
that touched only ``refill.py``, the cached ``incremental`` kernels would go
on running the old fill. So the first kernel a process defines stamps the
kernels' cache directory with a digest of every kernel source
(:func:`sources_digest`), and when the stamp differs, the cached code there
is dropped first (:func:`drop_stale_cache`): a kernel compiles again after
any kernel source changed, and only then.

Compiling takes tens of seconds, once after an install or an update; a
process that compiles one of flowemu's kernels says so once on stderr
(:class:`CompileNote`: numba reports a compiler pass only when it compiles,
not when it loads a kernel from its cache). ``FLOWEMU_COMPILE_NOTE=0``
silences it.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import sys

import numba
from numba.core import event

JIT_OPTIONS = {"cache": True, "nogil": True}
#: the kernel sources (this file's directory)
KERNELS_DIR = os.path.dirname(os.path.abspath(__file__))
#: the stamp's file name in a cache directory
STAMP_NAME = "flowemu-kernels.sha256"

_digest: list[str] = []       # (memo: the sources do not change in a process)
_checked: set[str] = set()    # cache directories stamped by this process


def njit(*args, refcounts=True, **kwargs):
    """``numba.njit`` with flowemu's options (``cache=True, nogil=True``).

    ``refcounts=False`` compiles the function without numba's reference
    counting (its ``_nrt=False``), for the small helpers the solvers' loops
    call for every entry or flow (heaps, holds, releases): a function counts a
    reference to each array it is given, an atomic increment and decrement
    per array per call, which cost more than such a helper's work (~7 % of
    the incremental solver's time on a tapered fat tree, a quarter before
    the heaps went without). Such a function must not allocate arrays (numba
    refuses to compile one that does) nor return one; the caller holds the
    references for the call. ``tests/kernels/test_refcounts.py`` reads the
    compiled code."""
    opts = dict(JIT_OPTIONS)
    if not refcounts:
        opts["_nrt"] = False
    opts.update(kwargs)
    if args and callable(args[0]):
        return _kept_true(numba.njit(**opts)(args[0]))
    wrap = numba.njit(*args, **opts)
    return lambda func: _kept_true(wrap(func))


def sources_digest(directory: str = KERNELS_DIR) -> str:
    """SHA-256 of the names and contents of the ``*.py`` files in
    ``directory`` (hex)."""
    h = hashlib.sha256()
    for name in _modules(directory):
        with open(os.path.join(directory, name + ".py"), "rb") as f:
            h.update(name.encode() + b"\0" + f.read() + b"\0")
    return h.hexdigest()


def _modules(directory: str) -> tuple[str, ...]:
    """The modules of ``directory`` (its ``*.py`` files' names), sorted."""
    return tuple(sorted(n[:-3] for n in os.listdir(directory) if n.endswith(".py")))


def drop_stale_cache(cache_dir: str, digest: str, modules: tuple[str, ...]) -> bool:
    """Delete numba's cached code (``*.nbi``, ``*.nbc``) of ``modules``
    (names without ``.py``) in ``cache_dir`` unless its stamp holds
    ``digest``, then stamp it with ``digest``. Returns whether anything was
    deleted. Errors of the file system (a read-only install, a file another
    process removed first) are ignored: at worst a kernel compiles again."""
    stamp = os.path.join(cache_dir, STAMP_NAME)
    try:
        with open(stamp, encoding="ascii") as f:
            if f.read().strip() == digest:
                return False
    except (OSError, UnicodeDecodeError):
        pass
    try:
        names = os.listdir(cache_dir)
    except OSError:
        return False
    dropped = False
    for name in names:
        if name.endswith((".nbi", ".nbc")) and name.split(".", 1)[0] in modules:
            try:
                os.remove(os.path.join(cache_dir, name))
                dropped = True
            except OSError:
                pass
    tmp = f"{stamp}.{os.getpid()}"
    try:
        with open(tmp, "w", encoding="ascii") as f:
            f.write(digest + "\n")
        os.replace(tmp, stamp)
    except OSError:
        pass
    return dropped


def _kept_true(dispatcher):
    """Check the stamp of the cache directory of ``dispatcher`` (a kernel of
    this package: another's is left to numba) once a process, before
    anything is loaded from it (numba reads its cache at the first call)."""
    try:
        path = dispatcher._cache.cache_path   # (numba's cache of this kernel)
        source = os.path.dirname(os.path.abspath(dispatcher.py_func.__code__.co_filename))
    except AttributeError:
        return dispatcher
    if source == KERNELS_DIR and path not in _checked:
        _checked.add(path)
        if not _digest:
            _digest.append(sources_digest())
        drop_stale_cache(path, _digest[0], _modules(KERNELS_DIR))
    return dispatcher


#: what a process that compiles a kernel says, once
COMPILE_NOTE = ("flowemu: note: compiling numba kernels this run is the first to need "
                "(up to a minute or two; they are cached, and later runs load them; after an "
                "install or an update each kind of run compiles its own once)")


class CompileNote(event.Listener):
    """Says :data:`COMPILE_NOTE` on stderr at the first compiler pass over a
    kernel of this package in the main process (a sweep's workers stay
    quiet), unless ``FLOWEMU_COMPILE_NOTE`` is ``0``."""

    def __init__(self):
        self.said = False

    def on_start(self, ev):
        if self.said or not str(ev.data.get("module", "")).startswith(__package__ + "."):
            return
        self.said = True
        if os.environ.get("FLOWEMU_COMPILE_NOTE", "1") != "0" \
                and multiprocessing.parent_process() is None:
            print(COMPILE_NOTE, file=sys.stderr, flush=True)

    def on_end(self, ev):
        pass


event.register("numba:run_pass", CompileNote())
