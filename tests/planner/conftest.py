"""Shared setup for the planner tests: ``plannerkit`` sits next to them and reuses the
review tests' repositories and agent folders (``reviewkit``).

The suite may run with ``--import-mode=importlib``, which puts no test folder on
``sys.path``, so both folders are added here, once.
"""

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
for folder in (_HERE, _HERE.parent / "reviews"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

import shutil  # noqa: E402
import tempfile  # noqa: E402
from collections.abc import Iterator  # noqa: E402

import pytest  # noqa: E402


@pytest.fixture
def agent_dir() -> Iterator[Path]:
    """A folder stand-in agents can use even when the sandbox runs them as another user."""
    path = Path(tempfile.mkdtemp(prefix="loopbus-agent-"))
    path.chmod(0o777)
    yield path
    shutil.rmtree(path, ignore_errors=True)
