"""Figures of a sweep dataset (matplotlib, imported only when a figure is drawn).

:mod:`.common` holds what every figure shares (canvas, saving, size axis,
panels, titles, legends, choosing rows); each figure module imports it:
:mod:`.plots` (goodput, time, gain, gain curves, and the ``plot``/``figures``
dispatcher), :mod:`.slowdown` (what-ifs against the healthy network),
:mod:`.fit` (a GenModel fit); :mod:`.style` gives every algorithm its look.
"""
