"""The public Python functions: check arguments, build the scenario, call the
engine or a model backend (re-exported by :mod:`flowemu`)."""
