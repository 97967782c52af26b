"""Shared setup for the ship tests (risk report, PR bundle, secrets in trunk's history).

The suite runs with ``--import-mode=importlib``; the builders in ``shipkit`` are shared by
the tests here, so the folder is added to ``sys.path`` once.
"""

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
