"""Shared setup for the review tests: the helpers module ``reviewkit`` sits next to them.

The suite may run with ``--import-mode=importlib``, which puts no test folder on
``sys.path``, so this folder is added here, once.
"""

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)


import shutil  # noqa: E402
import tempfile  # noqa: E402
from collections.abc import Iterator  # noqa: E402

import pytest  # noqa: E402


@pytest.fixture
def agent_dir() -> Iterator[Path]:
    """A folder scripted agents can use even when the daemon drops them to ``nobody``
    (pytest's own temporary folders are private to root)."""
    path = Path(tempfile.mkdtemp(prefix="loopbus-agent-"))
    path.chmod(0o777)
    yield path
    shutil.rmtree(path, ignore_errors=True)
