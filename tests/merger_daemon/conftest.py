"""Fixtures for the merger daemon: a scene (repository + bus + merger) per test.

The suite runs with ``--import-mode=importlib``; the scene helpers are a plain module in
this folder, put on ``sys.path`` here once.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio

_HERE = os.path.dirname(__file__)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from merger_scene import Scene  # noqa: E402

from bus import Bus  # noqa: E402


@pytest_asyncio.fixture(loop_scope="session")
async def scene(bus: Bus, project: str, tmp_path: Path) -> AsyncIterator[Scene]:
    """A fresh repository and project; the test starts the merger when it is ready."""
    made = Scene(bus, project, tmp_path)
    try:
        yield made
    finally:
        await made.stop()
