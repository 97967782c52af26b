"""Shared setup for the units tests: the helpers module ``unitkit`` sits next to them.

The suite may run with ``--import-mode=importlib``, which puts no test folder on
``sys.path``, so this folder is added here, once.
"""

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
