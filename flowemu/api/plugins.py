"""Plug-in algorithms as the package registers them
(:func:`flowemu.register_algorithm`): the registry's checks, and those that
need the topology families, which the algorithms layer does not see (the
two are sibling layers)."""

from __future__ import annotations

from ..algorithms import registry
from ..algorithms.base import AlgorithmSpec
from ..core.errors import ConfigError, checked_keywords, suggest
from ..topology import topology_families

__all__ = ["register_algorithm"]


@checked_keywords
def register_algorithm(name, build, params=(), doc="", *, families=None, auto_param=None,
                       sized=None, replace=False) -> AlgorithmSpec:
    # (the docstring is the registry's, below)
    if families is not None and not isinstance(families, str):
        try:
            given = list(families)
        except TypeError:
            given = []   # (the registry names what is wrong with it)
        known = topology_families()
        for fam in given:
            if isinstance(fam, str) and fam not in known:
                raise ConfigError(f"register_algorithm: families of {name!r}: unknown "
                                  f"topology family {fam!r}{suggest(fam, known)}; known: "
                                  f"{', '.join(known)}")
    return registry.register_algorithm(name, build, params, doc, families=families,
                                       auto_param=auto_param, sized=sized, replace=replace)


register_algorithm.__doc__ = registry.register_algorithm.__doc__
