"""The package's public surface: every public name resolves, and the names
loaded on first use are listed by ``dir(flowemu)`` (tab completion)."""

import subprocess
import sys

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
