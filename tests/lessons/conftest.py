"""Fixtures for the lessons tests: this folder's helpers and the merger scene
(tests/merger_daemon) on the path, a scene per test (a repository, the real bus, the real
merger and gate runner)."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio

_HERE = os.path.dirname(__file__)
for _path in (_HERE, os.path.join(os.path.dirname(_HERE), "merger_daemon")):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from merger_scene import Scene  # noqa: E402

from bus import Bus  # noqa: E402


@pytest_asyncio.fixture(loop_scope="session")
async def scene(bus: Bus, project: str, tmp_path: Path) -> AsyncIterator[Scene]:
    made = Scene(bus, project, tmp_path)
    try:
        yield made
    finally:
        await made.stop()
