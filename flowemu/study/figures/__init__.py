"""Figures of a sweep dataset (matplotlib, imported only when a figure is drawn).

:mod:`.common` holds what every figure shares (canvas, saving, size axis,
panels, titles, legends, choosing rows); each figure module imports it:
:mod:`.goodput` (goodput and time vs size), :mod:`.gain` (the gain heatmap and
gain curves), :mod:`.slowdown` (what-ifs against the healthy network),
:mod:`.fit` (a GenModel fit); :mod:`.style` gives every algorithm its look.
:mod:`.plots` is the ``plot``/``figures`` dispatcher over the kinds.
"""
