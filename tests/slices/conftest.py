"""Shared setup for the slices tests.

The suite runs with ``--import-mode=importlib``, which puts no test folder on ``sys.path``;
the builders in ``slice_helpers`` are shared by every test here, so the folder is added once.
"""

import sys
from pathlib import Path

import pytest

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from workers.gates.signing import Signer, load_or_create  # noqa: E402


@pytest.fixture
def signer(tmp_path: Path) -> Signer:
    """A gate-runner key of the test's own (its registration must be on the log to count)."""
    return load_or_create(tmp_path / "keys")
