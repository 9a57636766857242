"""The kernels' compiled cache follows every kernel source, not only the file
that defines a kernel (numba re-checks only that one)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from flowemu.kernels import jit
from flowemu.kernels.fill import maxmin_rates_kernel


def _write(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def test_sources_digest_follows_every_source_file(tmp_path):
    _write(tmp_path / "a.py", "x = 1\n")
    _write(tmp_path / "b.py", "y = 2\n")
    _write(tmp_path / "notes.txt", "not a source\n")
    first = jit.sources_digest(str(tmp_path))
    assert first == jit.sources_digest(str(tmp_path))
    _write(tmp_path / "notes.txt", "changed, still not a source\n")
    assert jit.sources_digest(str(tmp_path)) == first
    _write(tmp_path / "b.py", "y = 3\n")
    second = jit.sources_digest(str(tmp_path))
    assert second != first
    _write(tmp_path / "c.py", "")
    assert jit.sources_digest(str(tmp_path)) not in (first, second)


def test_a_stale_stamp_drops_the_kernels_cached_code_only(tmp_path):
    names = ["fill.maxmin_rates_kernel-575.py311.nbi", "fill.maxmin_rates_kernel-575.py311.1.nbc",
             "refill.refill-306.py311.nbi", "fill.cpython-311.pyc", "other.f-1.py311.nbi"]
    for name in names:
        _write(tmp_path / name, "")
    modules = ("fill", "refill")
    # no stamp yet: the kernels' code goes, the rest stays, the stamp is written
    assert jit.drop_stale_cache(str(tmp_path), "d1", modules)
    assert sorted(os.listdir(tmp_path)) == sorted(
        ["fill.cpython-311.pyc", "other.f-1.py311.nbi", jit.STAMP_NAME])
    assert (tmp_path / jit.STAMP_NAME).read_text().strip() == "d1"
    # the same digest: code compiled since is kept
    _write(tmp_path / names[0], "")
    assert not jit.drop_stale_cache(str(tmp_path), "d1", modules)
    assert (tmp_path / names[0]).exists()
    # a source changed: dropped again
    assert jit.drop_stale_cache(str(tmp_path), "d2", modules)
    assert not (tmp_path / names[0]).exists()
    assert (tmp_path / jit.STAMP_NAME).read_text().strip() == "d2"


def test_a_missing_cache_directory_is_no_error(tmp_path):
    assert not jit.drop_stale_cache(str(tmp_path / "absent"), "d", ("fill",))


def test_the_kernels_cache_directory_carries_the_sources_stamp():
    path = maxmin_rates_kernel._cache.cache_path
    with open(os.path.join(path, jit.STAMP_NAME), encoding="ascii") as f:
        assert f.read().strip() == jit.sources_digest()


def _kernel_package(tmp_path, name: str):
    """A package ``name`` in ``tmp_path`` holding a copy of the kernels' jit
    module, for kernels of its own."""
    pkg = tmp_path / name
    pkg.mkdir()
    _write(pkg / "__init__.py", "")
    with open(jit.__file__, encoding="utf-8") as f:
        _write(pkg / "jit.py", f.read())
    return pkg


def test_a_changed_callee_is_compiled_again(tmp_path):
    """End to end, in a copy of the kernels: ``caller`` (in one file) calls
    ``callee`` (in another) and is cached; then only the callee's file
    changes. numba alone would load the cached ``caller`` with the old
    callee compiled in."""
    pkg = _kernel_package(tmp_path, "kpkg")
    _write(pkg / "callee.py", textwrap.dedent("""
        from .jit import njit

        @njit
        def callee(x):
            return x + 1
    """))
    _write(pkg / "caller.py", textwrap.dedent("""
        from .callee import callee
        from .jit import njit

        @njit
        def caller(x):
            return callee(x) * 10
    """))
    run = [sys.executable, "-c", "from kpkg.caller import caller; print(caller(1))"]
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    env.pop("NUMBA_CACHE_DIR", None)
    assert subprocess.run(run, env=env, capture_output=True, text=True,
                          check=True).stdout.strip() == "20"
    assert any(n.startswith("caller.") and n.endswith(".nbi")
               for n in os.listdir(pkg / "__pycache__"))
    with open(pkg / "callee.py", encoding="utf-8") as f:
        text = f.read()
    _write(pkg / "callee.py", text.replace("x + 1", "x + 2"))
    assert subprocess.run(run, env=env, capture_output=True, text=True,
                          check=True).stdout.strip() == "30"


def test_a_process_that_compiles_a_kernel_says_so_once(tmp_path):
    """In a copy of the kernels' jit module: the first run compiles two
    kernels and notes it once on stderr; the next loads them from the cache
    and says nothing; FLOWEMU_COMPILE_NOTE=0 silences the note."""
    pkg = _kernel_package(tmp_path, "notepkg")
    _write(pkg / "two.py", textwrap.dedent("""
        from .jit import njit

        @njit
        def one(x):
            return x + 1

        @njit
        def two(x):
            return one(x) * 2
    """))
    run = [sys.executable, "-c", "from notepkg.two import two; print(two(1))"]
    env = dict(os.environ, PYTHONPATH=str(tmp_path), FLOWEMU_COMPILE_NOTE="1")
    env.pop("NUMBA_CACHE_DIR", None)
    first = subprocess.run(run, env=env, capture_output=True, text=True, check=True)
    assert first.stdout.strip() == "4"
    assert first.stderr.count(jit.COMPILE_NOTE) == 1, first.stderr
    again = subprocess.run(run, env=env, capture_output=True, text=True, check=True)
    assert again.stdout.strip() == "4" and jit.COMPILE_NOTE not in again.stderr
    _write(pkg / "two.py", (pkg / "two.py").read_text().replace("* 2", "* 3"))
    quiet = subprocess.run(run, env=dict(env, FLOWEMU_COMPILE_NOTE="0"), capture_output=True,
                           text=True, check=True)
    assert quiet.stdout.strip() == "6" and jit.COMPILE_NOTE not in quiet.stderr
