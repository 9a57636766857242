"""The glibc malloc tuning of flowemu.kernels.memory: on by default on
Linux/glibc, off with FLOWEMU_MALLOC_TUNING=0, and idempotent."""

import os
import platform
import subprocess
import sys

import pytest

CODE = ("import flowemu.kernels.memory as m, flowemu.kernels; "
        "print(m.tune_malloc(), m.tune_malloc())")


def _run(env_value):
    env = dict(os.environ)
    env.pop("FLOWEMU_MALLOC_TUNING", None)
    if env_value is not None:
        env["FLOWEMU_MALLOC_TUNING"] = env_value
    out = subprocess.run([sys.executable, "-c", CODE], env=env, capture_output=True, text=True,
                         check=True)
    return out.stdout.split()


def test_disabled_by_environment():
    assert _run("0") == ["False", "False"]
    # the usual spellings of "off" turned it on (only "0" was read as off)
    for off in ("false", "No", "OFF"):
        assert _run(off) == ["False", "False"], off


def test_another_value_leaves_malloc_alone_and_a_run_refuses_it(monkeypatch):
    assert _run("maybe") == ["False", "False"]
    import flowemu
    from flowemu.core.errors import ConfigError
    monkeypatch.setenv("FLOWEMU_MALLOC_TUNING", "maybe")
    for run in (lambda: flowemu.simulate("torus:4", "ring", "1KiB"),
                lambda: flowemu.simulate("torus:4", "ring", "1KiB", sync="dataflow"),
                lambda: flowemu.simulate_jobs("torus:4", ["algorithm=ring size=1KiB"])):
        with pytest.raises(ConfigError, match="^FLOWEMU_MALLOC_TUNING: 'maybe' is not "
                                              "allowed; expected 0 or 1"):
            run()


@pytest.mark.skipif(not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc",
                    reason="mallopt tuning applies to Linux/glibc only")
def test_enabled_on_glibc():
    assert _run(None) == ["True", "True"]
    assert _run("1") == ["True", "True"]
    assert _run("yes") == ["True", "True"]
    assert _run("") == ["True", "True"]   # set but empty: as unset (it was before)
