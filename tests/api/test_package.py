"""The package's public surface: every public name resolves, and the names
loaded on first use are listed by ``dir(flowemu)`` (tab completion)."""

import subprocess
import sys
import textwrap

import flowemu


def test_every_public_name_is_listed_and_resolves():
    listed = dir(flowemu)
    for name in flowemu.__all__:
        assert name in listed, name
        assert getattr(flowemu, name) is not None
    # what the package imports for itself is no public name
    assert "sys" not in listed and not [n for n in listed if n.startswith("_") and
                                        n != "__version__"]


def test_dir_lists_the_lazy_names_before_they_are_loaded():
    """In a fresh interpreter nothing lazy is loaded yet; ``dir`` still
    lists ``simulate`` and ``time_traffic``, and listing loads nothing."""
    code = ("import sys, flowemu; d = dir(flowemu); "
            "print('simulate' in d, 'time_traffic' in d, 'flowemu.api.simulation' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True", "False"]


def test_the_public_modules_import_by_their_dotted_names():
    """docs/sweeps.md writes flowemu.results.load_errors and
    flowemu.sweep.run_sweep: `import flowemu.results` and `from
    flowemu.sweep import run_sweep` failed (ModuleNotFoundError), as the
    names were attributes only. Each is the module the attribute is, which
    keeps its own name and file; a name that is no module still fails."""
    code = textwrap.dedent("""
        import sys, importlib
        import flowemu.results as r
        from flowemu.sweep import run_sweep
        import flowemu.fit
        import flowemu
        assert r is flowemu.results is sys.modules['flowemu.study.results']
        assert run_sweep is flowemu.sweep.run_sweep
        assert flowemu.fit.__name__ == 'flowemu.study.fit'
        assert r.__spec__.name == 'flowemu.study.results' and r.__file__.endswith('results.py')
        from flowemu.results import load_errors, compare
        importlib.reload(r)
        try:
            import flowemu.simulate
        except ModuleNotFoundError:
            print('refused')
        """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["refused"]


def test_traffic_is_public():
    t = flowemu.Traffic([0, 1], [1, 0], [1.0, 2.0])
    assert t.num_flows == 2 and "Traffic" in dir(flowemu)
