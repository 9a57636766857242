"""The flowemu version every result row and dataset records (also ``flowemu.__version__``)."""

__version__ = "0.1.0"
