"""flowemu's tests, one folder per package of flowemu (core, kernels,
topology, algorithms, engine, models, whatif, api, study, cli) plus
benchmarks/. Shared helpers live in tests.helpers, fixtures in conftest.py,
input files in data/.

Every folder is a package, so pytest imports a test module as
``tests.<folder>.<module>`` with the repository root on sys.path, and the
helpers import the same way everywhere: ``from tests.helpers.cli import run``.
"""
