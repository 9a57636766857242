"""The package layout keeps to DESIGN.md ("Layout: layers as packages, imports
point down"). The layer, independence and cycle contracts are import-linter's
(``[tool.importlinter]`` in pyproject.toml, run by ``make test``); this file
checks what import-linter does not: where an import stands, which names it
takes, and the size of the rooms."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "flowemu"
MODULES = sorted(PACKAGE.rglob("*.py"))
MAX_LINES = 800
MAX_TOP_LEVEL = 10


def _name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _target(path: Path, node: ast.ImportFrom) -> str:
    """The absolute module an ``from X import ...`` reads from."""
    if node.level == 0:
        return node.module or ""
    here = _name(path).split(".")
    if path.name != "__init__.py":
        here = here[:-1]
    base = here[: len(here) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(path: Path):
    """``(node, module it reads, inside a function)`` of every import of flowemu."""
    tree = ast.parse(path.read_text())

    def walk(node, in_function):
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                      ast.Lambda))
            if isinstance(child, ast.ImportFrom):
                target = _target(path, child)
                if target == "flowemu" or target.startswith("flowemu."):
                    yield child, target, in_function
            elif isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name == "flowemu" or alias.name.startswith("flowemu."):
                        yield child, alias.name, in_function
            yield from walk(child, inner)

    yield from walk(tree, False)


def _where(path: Path, node) -> str:
    return f"{path.relative_to(PACKAGE.parent)}:{node.lineno}"


def test_the_scan_sees_every_module():
    # guards the checks below against passing on an empty or wrong tree
    assert len(MODULES) > 80
    assert any(p.name == "profiles.py" for p in MODULES)


def test_no_function_local_imports_of_flowemu():
    """Imports of flowemu's own modules stand at module level: a cycle is
    designed away, not dodged at run time. Only optional heavy third-party
    dependencies (matplotlib, dask, scipy) may load lazily, and those are
    not flowemu modules."""
    found = [f"{_where(p, node)} imports {target}"
             for p in MODULES for node, target, local in _imports(p) if local]
    assert not found, "function-local imports of flowemu modules:\n" + "\n".join(found)


def test_no_module_imports_another_modules_private_names():
    found = []
    for path in MODULES:
        own = _name(path)
        for node, target, _ in _imports(path):
            if not isinstance(node, ast.ImportFrom) or target == own:
                continue
            private = [a.name for a in node.names
                       if a.name.startswith("_") and not a.name.startswith("__")]
            if private:
                found.append(f"{_where(path, node)} takes {', '.join(private)} from {target}")
    assert not found, "private names imported across modules:\n" + "\n".join(found)


def test_private_modules_stay_in_their_package():
    """A ``_name`` module (``algorithms/_blocks.py``, ``topology/_grids.py``) is
    its package's own helper: only modules of that package import it."""
    found = []
    for path in MODULES:
        package = _name(path) if path.name == "__init__.py" else _name(path).rpartition(".")[0]
        for node, target, _ in _imports(path):
            names = [target] + ([f"{target}.{a.name}" for a in node.names]
                                if isinstance(node, ast.ImportFrom) else [])
            for name in names:
                parts = name.split(".")
                for i, part in enumerate(parts):
                    if part.startswith("_") and not part.startswith("__") \
                            and (PACKAGE.parent / Path(*parts[:i + 1])).with_suffix(".py").exists():
                        owner = ".".join(parts[:i])
                        if package != owner and not package.startswith(owner + "."):
                            found.append(f"{_where(path, node)} imports {name}")
    assert not found, "private modules imported from outside their package:\n" + "\n".join(found)


def test_nothing_imports_the_package_root():
    """Modules read what they need from its home (``flowemu.core.version``,
    ...), never through ``flowemu/__init__.py``, which re-exports the API."""
    found = [_where(p, node) for p in MODULES if p.parent != PACKAGE
             for node, target, _ in _imports(p) if target == "flowemu"]
    assert not found, "imports of the package root:\n" + "\n".join(found)


def test_top_level_holds_the_layers():
    entries = sorted(p.name for p in PACKAGE.iterdir()
                     if p.name not in ("__init__.py", "__main__.py", "__pycache__"))
    assert len(entries) <= MAX_TOP_LEVEL, entries


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_module_size(path):
    rel = str(path.relative_to(PACKAGE))
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{rel}: {lines} lines (one idea a module, at most {MAX_LINES})"
