"""Shared setup for the slices tests.

The suite runs with ``--import-mode=importlib``, which puts no test folder on ``sys.path``;
the builders in ``slice_helpers`` are shared by every test here, so the folder is added once.
"""

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
