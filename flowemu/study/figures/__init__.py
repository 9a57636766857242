"""Figures of a sweep dataset (matplotlib, imported only when a figure is drawn)."""
