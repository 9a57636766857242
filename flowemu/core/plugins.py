"""The plug-in modules a run imports besides the installed entry points:
``FLOWEMU_PLUGINS`` (a comma-separated list of module names and ``.py``
files), which ``flowemu --plugin`` extends. The algorithm registry imports
them (:mod:`flowemu.algorithms.registry`); this module only reads and writes
the variable, so the command line sets it without loading the algorithms,
and a sweep's worker processes inherit it."""

from __future__ import annotations

import os
from collections.abc import Iterable

from .errors import ConfigError

#: the environment variable naming the modules and .py files of plug-ins to import
PLUGINS_VARIABLE = "FLOWEMU_PLUGINS"


def plugin_items(text: str | None = None) -> list[str]:
    """The items of ``FLOWEMU_PLUGINS`` (or of ``text``): separated by commas,
    blanks around them and empty items dropped."""
    if text is None:
        text = os.environ.get(PLUGINS_VARIABLE, "")
    return [item.strip() for item in text.split(",") if item.strip()]


def is_plugin_file(item: str) -> bool:
    """An item naming a file, not a module: it ends in ``.py`` or holds a
    path separator."""
    return item.endswith(".py") or any(sep and sep in item for sep in (os.sep, os.altsep))


def add_plugins(items: Iterable[str], field: str = "--plugin") -> None:
    """Append plug-in modules to ``FLOWEMU_PLUGINS`` in this process's
    environment (``flowemu --plugin``), imported at the next lookup that
    needs the plug-ins. A ``.py`` file is stored by its absolute path, so
    that worker processes started in another directory find it; each item
    may itself be a comma-separated list.

    Raises
    ------
    ConfigError
        A ``.py`` file that does not exist, or a path that is not one
        (``field`` names what gave the item).
    """
    known = plugin_items()
    added = []
    for item in (x for text in items for x in plugin_items(text)):
        if is_plugin_file(item):
            if not item.endswith(".py"):
                raise ConfigError(f"{field}: {item!r} is neither a module name nor a path to a "
                                  ".py file")
            path = os.path.abspath(item)
            if not os.path.isfile(path):
                raise ConfigError(f"{field}: no file {item!r} ({path}); expected a module "
                                  "name or a path to a .py file")
            item = path
        if item not in known and item not in added:
            added.append(item)
    if added:
        os.environ[PLUGINS_VARIABLE] = ",".join([*known, *added])
