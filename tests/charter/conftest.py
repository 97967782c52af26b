"""Charter tests reuse the slices helpers and the merger scene: their folders are put on
``sys.path`` once (the suite runs with ``--import-mode=importlib``)."""

import sys
from pathlib import Path

_TESTS = Path(__file__).resolve().parents[1]
for folder in ("slices", "merger_daemon", "charter"):
    if str(_TESTS / folder) not in sys.path:
        sys.path.insert(0, str(_TESTS / folder))
