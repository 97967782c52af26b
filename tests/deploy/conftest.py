"""deploy/compose-check's package lives beside its script, not in the installed namespace;
its tests import it from there."""

import sys
from pathlib import Path

DEPLOY = str(Path(__file__).resolve().parents[2] / "deploy")
if DEPLOY not in sys.path:
    sys.path.insert(0, DEPLOY)
