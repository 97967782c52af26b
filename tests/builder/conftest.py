"""Shared setup for the builder tests: the helpers module ``builderkit`` sits next to them.

The suite runs with ``--import-mode=importlib``, which puts no test folder on
``sys.path``, so this folder is added here, once.
"""

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
