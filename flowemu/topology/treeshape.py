"""The structure of a ``tree:`` topology: nested groups of hosts and switches,
the grammar of its spec text, and the plain facts about a structure (sizes,
canonical text, vertex arrays) that :class:`~flowemu.topology.tree.Tree`, its
presets and its spec parser share.

A switch is a tuple of groups; a group is ``(count, child)`` with ``child``
None (``count`` hosts) or a switch (``count`` copies of it). Plain tuples so
the structure pickles and compares by value. The spec writes a switch as its
groups joined by ``+``, a group as ``COUNT`` (hosts) or ``COUNTxCHILD``
(``COUNT`` child switches), a child as ``HOSTS``, ``COUNTxCHILD`` or
``(switch)``, and a multi-site tree as ``dc(switch)+dc(switch)...`` (the
grammar in full: :mod:`flowemu.topology.tree`).
"""

from __future__ import annotations

import re

import numpy as np

from ..core.errors import ConfigError, show
from .common import is_int

#: deepest tree (levels of links) and most sites a spec may describe
MAX_LEVELS = 32
MAX_SITES = 64

#: the forms of a ``tree:`` spec, for messages
STRUCTURE_EXAMPLE = ("e.g. tree:24, tree:16x24, tree:8x32+8x16, tree:dc(8x32)+dc(8x16) or "
                     "tree:SYM384")


# --------------------------------------------------------------------- grammar

class _Parser:
    """Recursive descent over the structure text (grammar in
    :mod:`flowemu.topology.tree`); depth is bounded so a pathological spec is a ConfigError, not
    a RecursionError."""

    def __init__(self, text: str):
        self.text = text
        self.tokens = re.findall(r"\d+|(?i:dc)|\S", text)
        self.i = 0

    def peek(self):
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self):
        tok = self.peek()
        self.i += 1
        return tok

    def fail(self, problem: str):
        raise ConfigError(f"structure {self.text!r}: {problem}; expected groups COUNT or "
                          f"COUNTxCHILD joined by '+' ({STRUCTURE_EXAMPLE})")

    def expect(self, tok: str):
        got = self.peek()
        if got != tok:
            self.fail(f"expected {tok!r} but found {'the end' if got is None else repr(got)}")
        self.take()

    def count(self) -> int:
        tok = self.peek()
        if tok is None:
            self.fail("a count is missing at the end")
        if not (tok.isascii() and tok.isdigit()):
            self.fail(f"expected a count but found {tok!r}")
        self.take()
        if len(tok) > 18:
            self.fail(f"count {tok[:20]}... is too large")
        value = int(tok)
        if value < 1:
            self.fail(f"fan-out {value} is not allowed (every count must be >= 1)")
        return value

    def top(self):
        if self.peek() is not None and self.peek().lower() == "dc":
            sites = [self.site()]
            while self.peek() == "+":
                self.take()
                if self.peek() is None or self.peek().lower() != "dc":
                    self.fail("a multi-site tree joins sites dc(...)+dc(...) only")
                sites.append(self.site())
                if len(sites) > MAX_SITES:
                    self.fail(f"more than {MAX_SITES} sites")
            if len(sites) < 2:
                self.fail("dc(...) needs at least two sites, e.g. dc(8x32)+dc(8x16)")
            out = tuple(sites)
        else:
            out = (self.switch(0),)
        if self.peek() is not None:
            self.fail(f"unexpected {self.peek()!r}")
        return out

    def site(self):
        self.take()
        self.expect("(")
        sw = self.switch(0)
        self.expect(")")
        return sw

    def switch(self, depth: int):
        if depth > MAX_LEVELS:
            self.fail(f"the tree is deeper than {MAX_LEVELS} levels")
        groups = [self.group(depth)]
        while self.peek() == "+":
            self.take()
            groups.append(self.group(depth))
        return tuple(groups)

    def group(self, depth: int):
        count = self.count()
        if self.peek() == "x":
            self.take()
            return (count, self.child(depth + 1))
        return (count, None)

    def child(self, depth: int):
        if depth > MAX_LEVELS:
            self.fail(f"the tree is deeper than {MAX_LEVELS} levels")
        if self.peek() == "(":
            self.take()
            sw = self.switch(depth)
            self.expect(")")
            return sw
        count = self.count()
        if self.peek() == "x":
            self.take()
            return ((count, self.child(depth + 1)),)
        return ((count, None),)


def parse_structure(text: str) -> tuple:
    """The sites of a structure text (``"16x24"``, ``"dc(8x32)+dc(8x16)"``):
    a tuple of one root switch per site; ConfigError naming the text."""
    return _Parser(text).top()


# ------------------------------------------------------------------ structure

def check_switch(sw, where: str, depth: int = 0) -> None:
    """ConfigError (prefixed ``where``) unless ``sw`` is a switch: a non-empty
    tuple of ``(count, child)`` groups, counts integers >= 1, at most
    :data:`MAX_LEVELS` deep."""
    if depth > MAX_LEVELS:
        raise ConfigError(f"{where}: the tree is deeper than {MAX_LEVELS} levels")
    if not isinstance(sw, tuple) or not sw:
        raise ConfigError(f"{where}: a switch must be a non-empty tuple of (count, child) "
                          f"groups, got {show(sw)}")
    for g in sw:
        if not (isinstance(g, tuple) and len(g) == 2):
            raise ConfigError(f"{where}: a group must be a (count, child) pair, got {show(g)}")
        count, child = g
        if not is_int(count) or count < 1:
            raise ConfigError(f"{where}: fan-out {show(count)} is not allowed; expected an "
                              "integer >= 1")
        if child is not None:
            check_switch(child, where, depth + 1)


def normal_structure(sw):
    """The structure with plain int counts (numpy ints compare equal but print
    differently)."""
    return tuple((int(c), None if ch is None else normal_structure(ch)) for c, ch in sw)


def structure_sizes(sw) -> tuple[int, int, int]:
    """(hosts, switches, depth of the deepest switch below, 0 = only this one)
    of a switch, in Python ints (no overflow on absurd specs)."""
    hosts, switches, depth = 0, 1, 0
    for count, child in sw:
        if child is None:
            hosts += count
        else:
            h, s, d = structure_sizes(child)
            hosts += count * h
            switches += count * s
            depth = max(depth, d + 1)
    return hosts, switches, depth


def _render_child(sw) -> str:
    if len(sw) == 1:
        count, child = sw[0]
        return str(count) if child is None else f"{count}x{_render_child(child)}"
    return f"({_render_switch(sw)})"


def _render_switch(sw) -> str:
    return "+".join(str(c) if ch is None else f"{c}x{_render_child(ch)}" for c, ch in sw)


def render_structure(sites) -> str:
    """Canonical text of a tree (one site) or a multi-site tree."""
    if len(sites) == 1:
        return _render_switch(sites[0])
    return "+".join(f"dc({_render_switch(sw)})" for sw in sites)


def expand_switch(sw):
    """Vertex arrays of one switch's subtree, switch 0 its root:
    ``(host_parent, switch_parent, switch_depth)`` in local switch ids (the
    root's parent -1), hosts in depth-first order. Repeated children are
    expanded once and tiled, so the work is numpy, not a loop over nodes."""
    host_parent = [np.zeros(0, dtype=np.int64)]
    sw_parent = [np.array([-1], dtype=np.int64)]
    sw_depth = [np.zeros(1, dtype=np.int64)]
    n_sw = 1
    for count, child in sw:
        if child is None:
            host_parent.append(np.zeros(count, dtype=np.int64))
            continue
        hp, sp, sd = expand_switch(child)
        k = len(sp)
        offset = n_sw + k * np.arange(count, dtype=np.int64)
        host_parent.append(np.tile(hp, count) + np.repeat(offset, len(hp)))
        parent = np.tile(sp, count) + np.repeat(offset, k)
        parent[np.tile(sp < 0, count)] = 0          # a copy's root hangs below this switch
        sw_parent.append(parent)
        sw_depth.append(np.tile(sd, count) + 1)
        n_sw += count * k
    return np.concatenate(host_parent), np.concatenate(sw_parent), np.concatenate(sw_depth)


def weighted_links(sw, uplinks, level0: int) -> int:
    """Up-links (one direction) below a switch: each child vertex has
    ``uplinks[level]`` of them, level = the switch's depth + ``level0``."""
    total = 0
    for count, child in sw:
        total += count * uplinks[level0]
        if child is not None:
            total += count * weighted_links(child, uplinks, level0 + 1)
    return total


def level_words(sites_count: int, depth: int) -> list[str]:
    """What each level joins, top first, for messages and describe()."""
    words = ["cross-site"] if sites_count > 1 else []
    return words + [f"depth {d}->{d + 1}" for d in range(depth + 1)]
