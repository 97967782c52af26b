"""Fixtures: a server run with loopbus's credentials (see securekit)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from securekit import Secured, start_secured  # noqa: E402


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    """One authorising server for the tests of a module that leave the log intact."""
    running = start_secured(tmp_path_factory.mktemp("secured"))
    yield running
    running.server.stop()


@pytest.fixture
def own_secured(tmp_path: Path) -> Iterator[Secured]:
    """An authorising server of the test's own (for tests that damage the log)."""
    running = start_secured(tmp_path / "data")
    yield running
    running.server.stop()
