"""Shared setup for the merge-driver tests.

The suite runs with ``--import-mode=importlib``, which puts no test folder on
``sys.path``; the scenario corpus is a plain module shared by these tests and by
tests/benchmarks/bench_merge_driver.py, so its folder is added here, once.
"""

import sys
from pathlib import Path

import pytest
from dulwich import merge_drivers

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)


@pytest.fixture
def fresh_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty process-wide dulwich merge-driver registry, restored after the test.

    dulwich keeps one registry per process; tests that register the driver get their
    own so that registering never leaks into another test.
    """
    monkeypatch.setattr(merge_drivers, "_merge_driver_registry", None)
