"""Sweep results, as readers use them (``flowemu.results``): the dataset
(``load``, ``load_errors``, the column names), the goodput-gain comparison of
its rows (:func:`compare` and the tables, :mod:`flowemu.study.ranking`) and
the slowdown of what-if rows against the healthy network (:func:`slowdown`,
:func:`compare_whatif`, :mod:`flowemu.study.slowdowns`); what they share
(scenario columns, filters, ties) is :mod:`flowemu.study.rows`.

The dataset itself (parquet schema, atomic part files, the manifest, loading,
pruning) lives in :mod:`flowemu.study.sweep.dataset`.
"""

from __future__ import annotations

from .ranking import (  # noqa: F401 (the readers' names)
    compare,
    compare_models,
    compare_models_table,
    compare_syncs,
    compare_table,
    format_gain,
)
from .rows import (  # noqa: F401
    SCENARIO_COLUMNS,
    TIE_RTOL,
    WHATIF_SCENARIO,
    query,
    result_frame,
    scenario_columns,
    with_labels,
    with_whatif,
)
from .slowdowns import (  # noqa: F401
    WHATIF_RESULT_COLUMNS,
    compare_whatif,
    compare_whatif_table,
    condition_label,
    healthy_rows,
    query_with_twins,
    slowdown,
    with_twins,
    without_seed,
)
from .sweep.dataset import (  # noqa: F401
    ASIDE_DIR,
    ERRORS_DIR,
    FIGURES_DIR,
    MANIFEST,
    SWEEP_COLUMNS,
    load,
    load_errors,
)
