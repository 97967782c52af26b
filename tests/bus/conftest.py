"""The bus tests' shared helpers.

The suite runs with ``--import-mode=importlib``, which puts no test folder on
``sys.path``; ``failover`` is a plain module shared by these tests and by
tests/benchmarks/bench_cluster.py, so its folder is added here, once.
"""

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
