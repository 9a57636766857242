"""Keeping a dataset's layout (:mod:`.dataset`) under the sweep's lock: the
part files at the top level hold exactly the configurations the sweep lists,
the others wait in ``_aside/``; and a dataset of the old layout (``errors/``,
``figures/``, part files mixing current and set-aside rows) moves to this one.

Every step is a rename or an atomic rewrite, in an order that never loses a
row: rows are copied to their new file before they leave the old one, so a
kill at any point leaves at worst a configuration's rows in two files, one of
them at the top level of a set-aside configuration or in ``_aside/`` (where
:func:`~.dataset.load` never looks, or filters them out by the manifest), and
the next run finishes the move. A configuration's rows only ever move between
``part-X.parquet`` and ``_aside/part-X.parquet`` (the same name), so moving
them back joins the rows they were split from.
"""

from __future__ import annotations

import os
from pathlib import Path

from .dataset import (
    ASIDE_DIR,
    OLD_DIRS,
    aside_parts,
    fsync_dir,
    read_hashes,
    read_part,
    result_parts,
    string_array,
    write_part,
)


def migrate(dataset) -> None:
    """Rename the directories of the old layout (``errors/`` -> ``_errors/``,
    ``figures/`` -> ``_figures/``). Where the new directory exists already,
    its entries stay and the old directory's others join them; a file of the
    same name in both is a figure drawn again since, so the old one goes."""
    path = Path(dataset)
    for old, new in OLD_DIRS.items():
        src, dst = path / old, path / new
        if not src.is_dir():
            continue
        if not dst.exists():
            os.rename(src, dst)
        else:
            for entry in sorted(src.iterdir()):
                target = dst / entry.name
                if not target.exists():
                    os.rename(entry, target)
                elif entry.is_file() and target.is_file():
                    entry.unlink()
            try:
                src.rmdir()
            except OSError:   # a directory inside clashed: left for the user to sort out
                pass
            fsync_dir(dst)
        fsync_dir(path)


def place_rows(dataset, wanted) -> None:
    """Move the rows of configurations not in ``wanted`` from the top level to
    ``_aside/``, and those in ``wanted`` back (call after writing the manifest
    of ``wanted``)."""
    path = Path(dataset)
    wanted = set(wanted)
    for part in result_parts(path):
        held = set(read_hashes(part))
        _move_rows(part, path / ASIDE_DIR / part.name, held - wanted, held)
    for part in aside_parts(path):
        held = set(read_hashes(part))
        _move_rows(part, path / part.name, held & wanted, held)


def _move_rows(src: Path, dst: Path, hashes: set[str], held: set[str]) -> None:
    """Move the rows of the configurations ``hashes`` from part file ``src``
    (which holds ``held``) to ``dst``, joining the rows ``dst`` holds already
    (a configuration present in both keeps its rows in ``dst``: a killed move
    copied them there)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    if not hashes:
        return
    if not dst.exists() and hashes == held:
        dst.parent.mkdir(exist_ok=True)
        os.rename(src, dst)
        fsync_dir(dst.parent)
        fsync_dir(src.parent)
        return
    table = read_part(src)
    moving = pc.is_in(table.column("config_hash"), value_set=string_array(hashes))
    moved = table.filter(moving)
    if dst.exists():
        there = read_part(dst)
        new = pc.invert(pc.is_in(moved.column("config_hash"),
                                 value_set=there.column("config_hash").unique()))
        moved = pa.concat_tables([there, moved.filter(new)], promote_options="default")
    write_part(dst.parent, moved, dst.stem)
    rest = table.filter(pc.invert(moving))
    if rest.num_rows:
        write_part(src.parent, rest, src.stem)
    else:
        src.unlink()
        fsync_dir(src.parent)
