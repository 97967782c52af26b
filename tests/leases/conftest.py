"""Leases between replicas: the gate-runner helpers (real repositories) are shared."""

from __future__ import annotations

import os
import sys

_HERE = os.path.dirname(__file__)
for folder in (
    _HERE,
    *(os.path.join(os.path.dirname(_HERE), f) for f in ("gate_runner", "builder")),
):
    if folder not in sys.path:
        sys.path.insert(0, folder)
