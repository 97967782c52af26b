"""Fixtures for the contract tests: the merger scene (tests/merger_daemon) on this folder's
path, a scene per test (a bare repository, the real bus and gate runner)."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio

_MERGER = os.path.join(os.path.dirname(os.path.dirname(__file__)), "merger_daemon")
if _MERGER not in sys.path:
    sys.path.insert(0, _MERGER)

from merger_scene import Scene  # noqa: E402

from bus import Bus  # noqa: E402


@pytest_asyncio.fixture(loop_scope="session")
async def scene(bus: Bus, project: str, tmp_path: Path) -> AsyncIterator[Scene]:
    made = Scene(bus, project, tmp_path)
    try:
        yield made
    finally:
        await made.stop()
