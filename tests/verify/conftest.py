"""Shared setup for the verify tests: the slices tests' builders (``slice_helpers``) and
``verifykit`` sit on ``sys.path`` (the suite may run with ``--import-mode=importlib``)."""

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
for folder in (_HERE, _HERE.parent / "slices"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

import shutil  # noqa: E402
import tempfile  # noqa: E402
from collections.abc import Iterator  # noqa: E402

import pytest  # noqa: E402

from workers.gates.signing import Signer, load_or_create  # noqa: E402


@pytest.fixture
def signer(tmp_path: Path) -> Signer:
    return load_or_create(tmp_path / "keys")


@pytest.fixture
def agent_dir() -> Iterator[Path]:
    """A folder a stand-in agent can write its log to even when sandboxed as another user."""
    path = Path(tempfile.mkdtemp(prefix="loopbus-verify-"))
    path.chmod(0o777)
    yield path
    shutil.rmtree(path, ignore_errors=True)
