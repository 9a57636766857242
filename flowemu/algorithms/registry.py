"""The registry of algorithms by name: the built-in families register on import
(:func:`register`), algorithms from outside the package through
:func:`register_algorithm` and the ``flowemu.algorithms`` entry-point group;
:func:`get_algorithm` and :func:`algorithm_names` look them up.

A plug-in is a builder ``build(p, topology, blocks, **options) -> Schedule``
(see :mod:`flowemu.algorithms.base`). Once registered by name, ``flowemu
run``, :func:`flowemu.simulate`, sweeps and ``flowemu verify`` take it like a
built-in algorithm.

Three ways in:

* ``flowemu.register_algorithm("naive", build, params=..., doc=...)`` in the
  user's own code (a script, a notebook, a ``conftest.py``); sweeps with local
  worker processes inherit it (fork), a Dask cluster does not — use an entry
  point there.
* a module that calls :func:`register_algorithm` when imported, named in the
  environment variable ``FLOWEMU_PLUGINS`` (``flowemu --plugin`` adds to it):
  items separated by commas, each a module name (``myalgs``, ``mypkg.algs``,
  imported from ``sys.path``) or the path of a ``.py`` file (``./myalgs.py``,
  relative to the current directory; imported under its stem, ``myalgs``).
  They are imported at the first lookup that needs the plug-ins (an unknown
  name, a listing, a registration), each once per process; worker processes
  inherit the variable (:func:`flowemu.core.plugins.add_plugins`).
* an entry point of an installed distribution, group ``flowemu.algorithms``::

      [project.entry-points."flowemu.algorithms"]
      naive = "mypkg.allreduce:build"

  The entry point's name is the algorithm's name. Its object is a builder
  (registered with no options, its docstring's first line as the doc), an
  :class:`~flowemu.algorithms.base.AlgorithmSpec` of that name, or a module
  that calls :func:`register_algorithm` for that name when imported.

Entry points are read on the first registry lookup and each is imported only
when its name is looked up (or every name is listed, or a name is unknown:
its error lists every name). A plug-in that fails to load is reported as one
line naming the entry point when its name is used; the other algorithms are
not affected. So is a ``FLOWEMU_PLUGINS`` module that fails to import: its
line ends the error of an unknown name and is one of :func:`plugin_errors`.
A sweep identifies a plug-in's configurations by its code too
(:func:`plugin_sources`).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.util
import inspect
import os
import re
import sys
import types
from collections.abc import Callable, Mapping

import numpy as np

from ..core.errors import ConfigError, FlowEmuError, checked_keywords, show, suggest
from ..core.plugins import PLUGINS_VARIABLE, add_plugins, is_plugin_file, plugin_items
from .base import AlgorithmSpec, Param, Schedule
from .collectives import get_collective
from .guards import error_line, guarded, guarded_sized

__all__ = ["ENTRY_POINT_GROUP", "PLUGINS_VARIABLE", "add_plugins", "algorithm_names",
           "get_algorithm", "plugin_errors", "plugin_items", "plugin_names", "plugin_sources",
           "register", "register_algorithm", "unregister_algorithm"]

#: the entry-point group plug-ins register under
ENTRY_POINT_GROUP = "flowemu.algorithms"

#: where the names of plug-ins come from, the end of an "unknown name" message
PLUGIN_HINT = (f"plug-ins come from the {ENTRY_POINT_GROUP!r} entry-point group of installed "
               f"packages, from the modules and .py files named in {PLUGINS_VARIABLE} "
               "(flowemu --plugin FILE_OR_MODULE) or from flowemu.register_algorithm "
               "(docs/plugins.md)")

#: what an algorithm name may be: it is typed in ``NAME[:key=val,...]`` specs
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*$")

#: names registered through this module (they may be replaced and unregistered)
_PLUGINS: set[str] = set()
#: entry points found but not yet imported, by name
_PENDING: dict = {}
#: entry points that failed to load: name -> one-line message
_ERRORS: dict[str, str] = {}
_scanned = False
#: FLOWEMU_PLUGINS items imported or tried in this process: a file by its
#: absolute path, a module by its name (each is imported once)
_IMPORTED: set[str] = set()
#: FLOWEMU_PLUGINS items that failed to import: item -> one-line message
_MODULE_ERRORS: dict[str, str] = {}


@checked_keywords
def register_algorithm(name: str, build: Callable[..., Schedule], params=(), doc: str = "",
                       *, families=None, auto_param: str | None = None, sized=None,
                       replace: bool = False) -> AlgorithmSpec:
    """Register an allreduce algorithm written outside flowemu.

    Parameters
    ----------
    name : str
        The name ``run --algorithm``, sweeps and ``verify`` take: a letter,
        then letters, digits, ``_``, ``-`` or ``.``; not a built-in's name.
    build : callable
        ``build(p, topology, blocks, **options) -> Schedule``: the schedule
        on ``p`` ranks (``topology`` may be None; ``blocks=True`` asks for
        block content, which ``flowemu verify`` needs). Options arrive
        parsed, with their defaults filled in.
    params : sequence of Param, or mapping name -> default
        The algorithm's options; a mapping infers each option's type from
        its default (int, float, str or bool).
    doc : str
        One line for ``flowemu list`` (default: the builder's docstring's
        first line).
    families : sequence of str, optional
        Topology families the algorithm runs on, each a family ``flowemu
        list`` names (default: every family).
    auto_param : str, optional
        An option whose choices include ``"auto"``: with ``auto`` flowemu
        builds every other choice and keeps the fastest per size (as
        ``recdoub:variant=auto``); the builder always gets a concrete one.
    sized : callable, optional
        For a schedule that depends on the vector size and the network:
        ``sized(p, topology, network, sizes, options, blocks=False) ->
        [(Schedule, indices of the sizes it serves)]`` — every size served
        exactly once. ``simulate``, ``run`` and sweeps then time each
        schedule for its sizes; ``verify --size`` proves the one for its size.
    replace : bool
        Replace an earlier plug-in of the same name (re-running a notebook
        cell); built-ins are never replaced.

    Returns
    -------
    AlgorithmSpec
        The registered algorithm.

    Raises
    ------
    ConfigError
        A bad name, a name taken, a builder that is not callable, or bad
        params.
    """
    _scan()
    name = _check_name(name)
    if not callable(build):
        raise ConfigError(f"register_algorithm: build {show(build)} of {name!r} is not "
                          "callable; expected build(p, topology, blocks, **options) -> "
                          "Schedule")
    params = _params(name, params)
    if not isinstance(doc, str):
        raise ConfigError(f"register_algorithm: doc of {name!r} must be a string, got "
                          f"{show(doc)}")
    doc = doc.strip() or ((getattr(build, "__doc__", None) or "").strip().splitlines()
                          or ["plug-in"])[0]
    if families is not None:
        if isinstance(families, str) or not all(isinstance(f, str) for f in families):
            raise ConfigError(f"register_algorithm: families of {name!r} must be a sequence "
                              f"of family names, got {show(families)}")
        families = tuple(families)
    if auto_param is not None:
        choices = next((x.choices for x in params if x.name == auto_param), None)
        if not choices or "auto" not in choices or len(choices) < 2:
            raise ConfigError(f"register_algorithm: auto_param {show(auto_param)} of {name!r} "
                              "must name an option whose choices include 'auto' and at least "
                              "one other value")
    if sized is not None and auto_param is not None:
        raise ConfigError(f"register_algorithm: {name!r} takes auto_param= or sized=, not both "
                          "(a sized hook chooses per size itself)")
    if sized is not None and not callable(sized):
        raise ConfigError(f"register_algorithm: sized {show(sized)} of {name!r} is not "
                          "callable; expected sized(p, topology, network, sizes, options, "
                          "blocks=False) -> [(Schedule, size indices)]")
    if not isinstance(replace, (bool, np.bool_)):
        raise ConfigError(f"register_algorithm: replace {show(replace)} of {name!r} is not "
                          "allowed; expected True or False")
    spec = AlgorithmSpec(name, guarded(name, build), params, doc, families=families,
                         auto_param=auto_param,
                         sized=None if sized is None else guarded_sized(name, sized))
    return _install(spec, replace)


@checked_keywords
def unregister_algorithm(name: str) -> None:
    """Remove a plug-in registered with :func:`register_algorithm` (built-ins
    stay; an unknown name is a ConfigError)."""
    if name not in _PLUGINS:
        raise ConfigError(f"unregister_algorithm: {show(name)} is not a registered plug-in"
                          + (f"; plug-ins: {', '.join(sorted(_PLUGINS))}" if _PLUGINS else ""))
    _PLUGINS.discard(name)
    _REGISTRY.pop(name, None)


def plugin_sources(name: str, collective: str = "allreduce") -> tuple[str, ...]:
    """The source files of a plug-in's code: the modules that define its
    builder and its ``sized`` hook (a sweep folds their contents into the
    configuration's hash, so an edited plug-in is computed again); ``()``
    for a built-in algorithm, a name not registered, or code without a file
    (typed at an interactive prompt)."""
    if collective != "allreduce" or name not in _PLUGINS or name not in _REGISTRY:
        return ()
    spec = _REGISTRY[name]
    files = (_source_file(code) for code in (spec.build, spec.sized) if code is not None)
    return tuple(sorted({f for f in files if f}))


def _source_file(code) -> str | None:
    """The file of the module that defines a callable (unwrapped from its
    guard, a functools.partial or a callable object's class), or None."""
    code = inspect.unwrap(code)
    while isinstance(code, functools.partial):
        code = inspect.unwrap(code.func)
    if not (inspect.isfunction(code) or inspect.ismethod(code) or inspect.isclass(code)):
        code = type(code)
    try:
        path = inspect.getsourcefile(code)
    except TypeError:   # (defined in C or in a module without a file)
        path = None
    if path is None:
        path = getattr(inspect.getmodule(code), "__file__", None)
    return os.path.abspath(path) if path and os.path.isfile(path) else None


def plugin_names() -> set[str]:
    """The registered algorithms that are plug-ins (not built in)."""
    return set(_PLUGINS) & set(_REGISTRY)


def plugin_errors() -> dict[str, str]:
    """Every entry point of the group that failed to load: name -> the one-line
    message (imports every pending entry point first); and every
    ``FLOWEMU_PLUGINS`` module that failed to import, under
    ``"FLOWEMU_PLUGINS:<item>"``."""
    load_all()
    return {**_ERRORS, **{f"{PLUGINS_VARIABLE}:{item}": msg
                          for item, msg in _MODULE_ERRORS.items()}}


# ------------------------------------------------------------------ the registry

_REGISTRY: dict[str, AlgorithmSpec] = {}
#: the algorithms of the other collectives: collective -> name -> spec
_OTHERS: dict[str, dict[str, AlgorithmSpec]] = {}


def register(spec: AlgorithmSpec) -> AlgorithmSpec:
    table = _REGISTRY if spec.collective == "allreduce" else \
        _OTHERS.setdefault(spec.collective, {})
    if spec.name in table:
        raise ValueError(f"algorithm {spec.name!r} of {spec.collective} is already registered")
    table[spec.name] = spec
    return spec


def get_algorithm(name: str, collective: str = "allreduce") -> AlgorithmSpec:
    """The algorithm ``name`` of ``collective`` (default allreduce); a
    ConfigError naming the known ones otherwise."""
    if collective != "allreduce":
        table = _OTHERS.get(get_collective(collective).name, {})
        if name not in table:
            raise ConfigError(f"algorithm: {name!r} is not an algorithm of "
                              f"{get_collective(collective).name}{suggest(name, table)}; known: "
                              f"{', '.join(sorted(table)) or '(none)'}")
        return table[name]
    if name not in _REGISTRY:   # a plug-in's entry point, imported on first use
        lookup(name)
    if name not in _REGISTRY:   # every plug-in: a module may register names beside its
        load_all()              # entry point's, and an error lists every name
    try:
        return _REGISTRY[name]
    except KeyError:
        serves = serving(name)
        if serves:
            raise ConfigError(
                f"algorithm: {name!r} is not an algorithm of allreduce; it serves "
                f"{', '.join(serves)} (give the collective: --collective, collective=); "
                f"allreduce's: {', '.join(sorted(_REGISTRY))}") from None
        # (a plug-in module that failed to import may be why the name is unknown)
        raise ConfigError(
            f"algorithm: unknown name {name!r}{suggest(name, _REGISTRY)}; known: "
            f"{', '.join(sorted(_REGISTRY))}; {PLUGIN_HINT}"
            + "".join(f"; {msg}" for msg in _MODULE_ERRORS.values())
        ) from None


def serving(name: str) -> list[str]:
    """The collectives other than allreduce that have an algorithm ``name``."""
    return [c for c, table in _OTHERS.items() if name in table]


def algorithm_names(collective: str = "allreduce") -> list[str]:
    """The algorithms of ``collective`` (default allreduce, plug-ins included)."""
    if collective != "allreduce":
        return sorted(_OTHERS.get(get_collective(collective).name, {}))
    load_all()
    return sorted(_REGISTRY)


# ------------------------------------------------------------------ registry hooks

def lookup(name: str) -> None:
    """Called by :func:`get_algorithm` for a name not
    registered yet: import its entry point, or raise the ConfigError of one
    that failed."""
    _scan()
    if name in _PENDING:
        _load(name)
    if name in _ERRORS and name not in _REGISTRY:
        raise ConfigError(_ERRORS[name])


def load_all() -> None:
    """Called before every name is listed: import every pending entry point
    (failures are kept in :func:`plugin_errors`, never raised)."""
    _scan()
    for name in list(_PENDING):
        # (importing one entry point's module may register the names of others,
        # which leave _PENDING then: each entry point is loaded once)
        if name in _PENDING:
            _load(name)


def _scan() -> None:
    """Read the group's entry points once (metadata only, nothing imported),
    then import the ``FLOWEMU_PLUGINS`` modules not imported yet (the
    variable is read at every scan: :func:`add_plugins` may add to it after
    the first)."""
    global _scanned
    if not _scanned:
        _scanned = True
        _scan_entry_points()
    _import_plugin_modules()


def _scan_entry_points() -> None:
    from importlib import metadata
    try:
        found = metadata.entry_points(group=ENTRY_POINT_GROUP)
    except Exception as exc:  # noqa: BLE001 - broken metadata of a distribution: say it, go on
        _ERRORS["(entry points)"] = (f"plug-ins: cannot read the {ENTRY_POINT_GROUP!r} entry "
                                     f"points: {type(exc).__name__}: {error_line(exc)}")
        return
    for ep in found:
        if ep.name in _REGISTRY and ep.name not in _PLUGINS:
            _ERRORS[ep.name] = (f"plug-in entry point {_ep_text(ep)}: the name {ep.name!r} "
                                "is a built-in algorithm; the built-in is kept")
        elif ep.name in _PENDING:
            _ERRORS[ep.name] = (f"plug-in entry point {_ep_text(ep)}: the name {ep.name!r} "
                                "is given by two entry points; neither is loaded")
        else:
            _PENDING[ep.name] = ep
    for name in _ERRORS:
        _PENDING.pop(name, None)


def _load(name: str) -> None:
    ep = _PENDING.pop(name)
    try:
        obj = ep.load()
        if name in _PLUGINS:
            # importing its module registered it (register_algorithm at import,
            # the entry point naming the builder): that registration stands
            return
        if isinstance(obj, AlgorithmSpec):
            if obj.name != name:
                raise ConfigError(f"its AlgorithmSpec is named {obj.name!r}, not {name!r}")
            _install(dataclasses.replace(obj, build=guarded(name, obj.build)), False)
        elif isinstance(obj, types.ModuleType):
            if name not in _REGISTRY:
                raise ConfigError(f"importing module {obj.__name__} registered no algorithm "
                                  f"{name!r}")
        elif callable(obj):
            register_algorithm(name, obj)
        else:
            raise ConfigError(f"it is {show(obj)}; expected a builder, an AlgorithmSpec or "
                              "a module that registers the algorithm")
    except Exception as exc:  # noqa: BLE001 - a plug-in bug: one line, the others work
        what = "" if isinstance(exc, FlowEmuError) else f"{type(exc).__name__}: "
        _ERRORS[name] = f"plug-in entry point {_ep_text(ep)} failed to load: {what}{error_line(exc)}"


# ------------------------------------------------------------------ FLOWEMU_PLUGINS

def _import_plugin_modules() -> None:
    """Import every ``FLOWEMU_PLUGINS`` item not tried yet in this process; a
    failure is kept as one line in ``_MODULE_ERRORS``, never raised."""
    todo = []
    for item in plugin_items():
        key = os.path.abspath(item) if is_plugin_file(item) else item
        if key not in _IMPORTED:
            # (marked before importing any: a module's own register_algorithm
            # scans again, and must not import it, or the next, a second time)
            _IMPORTED.add(key)
            todo.append((item, key))
    for item, key in todo:
        try:
            if is_plugin_file(item):
                _import_file(key)
            else:
                importlib.import_module(item)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - one line, the rest works
            what = "" if isinstance(exc, FlowEmuError) else f"{type(exc).__name__}: "
            hint = ""
            if (isinstance(exc, ModuleNotFoundError) and exc.name == item
                    and os.path.isfile(f"{item}.py")):
                hint = f"; to import the file {item}.py, give its path: {item}.py"
            _MODULE_ERRORS[item] = (f"{PLUGINS_VARIABLE}: {item} failed to import: "
                                    f"{what}{error_line(exc)}{hint}")


def _import_file(path: str) -> None:
    """Import a ``.py`` file as the module named by its stem, entered in
    ``sys.modules`` before it runs (``inspect`` finds its source, which a
    sweep's configuration hash reads: :func:`plugin_sources`)."""
    if not path.endswith(".py"):
        raise ConfigError("not a module name, nor a path to a .py file")
    if not os.path.isfile(path):
        raise ConfigError(f"no file {path}")
    name = os.path.basename(path)[:-3]
    for module in (sys.modules.get(name), sys.modules.get("__main__")):
        # the file imported already (by the user's script, or run as it)
        if _same_file(getattr(module, "__file__", None), path):
            return
    if name in sys.modules:
        taken = getattr(sys.modules[name], "__file__", None) or "a built-in module"
        raise ConfigError(f"the module name {name!r} is taken by {taken}; rename the file")
    # its directory on the path, as a script's is: a module beside it imports
    # (after the installed ones, which it does not hide)
    folder = os.path.dirname(os.path.abspath(path))
    if folder not in sys.path:
        sys.path.append(folder)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        if sys.modules.get(name) is module:
            del sys.modules[name]
        raise


def _same_file(a: str | None, b: str) -> bool:
    try:
        return a is not None and os.path.samefile(a, b)
    except OSError:
        return False


def _install(spec: AlgorithmSpec, replace: bool) -> AlgorithmSpec:
    if spec.name in _REGISTRY:
        if spec.name not in _PLUGINS:
            raise ConfigError(f"register_algorithm: {spec.name!r} is a built-in algorithm; "
                              "choose another name")
        if not replace:
            raise ConfigError(f"register_algorithm: {spec.name!r} is already registered; "
                              "pass replace=True to replace it, or choose another name")
        del _REGISTRY[spec.name]
    register(spec)
    _PLUGINS.add(spec.name)
    _ERRORS.pop(spec.name, None)
    _PENDING.pop(spec.name, None)
    return spec


def _check_name(name) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigError(f"register_algorithm: name {show(name)} is not allowed; expected a "
                          "letter, then letters, digits, '_', '-' or '.' (e.g. 'naive')")
    return name


def _params(name: str, params) -> tuple[Param, ...]:
    if isinstance(params, Mapping):
        out = []
        for key, default in params.items():
            if not isinstance(key, str) or not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", key):
                raise ConfigError(f"register_algorithm: params of {name!r}: option name "
                                  f"{show(key)} is not an identifier")
            if not isinstance(default, (bool, int, float, str)):
                raise ConfigError(f"register_algorithm: params of {name!r}: option {key} has "
                                  f"default {show(default)}; expected an int, float, str or "
                                  "bool (or pass Param objects)")
            out.append(Param(key, type(default), default))
        return tuple(out)
    if isinstance(params, (str, bytes)) or not hasattr(params, "__iter__"):
        raise ConfigError(f"register_algorithm: params of {name!r} must be Param objects or a "
                          f"mapping name -> default, got {show(params)}")
    params = tuple(params)
    bad = [x for x in params if not isinstance(x, Param)]
    if bad:
        raise ConfigError(f"register_algorithm: params of {name!r}: {show(bad[0])} is not a "
                          "flowemu.algorithms.Param")
    names = [x.name for x in params]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ConfigError(f"register_algorithm: params of {name!r}: option {dup[0]} is given "
                          "twice")
    return params


def _ep_text(ep) -> str:
    return f"{ep.name} = {ep.value} (group {ENTRY_POINT_GROUP})"
