"""Shared setup for the agent CLI wrapper tests: the helpers module ``standins`` sits next to
them (the suite runs with ``--import-mode=importlib``, which puts no test folder on
``sys.path``)."""

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
# builderkit (which adds reviewkit's folder) drives the builder daemon in the daemon tests.
for _folder in (str(_HERE), str(_HERE.parent / "builder")):
    if _folder not in sys.path:
        sys.path.insert(0, _folder)


from collections.abc import Iterator  # noqa: E402

import pytest  # noqa: E402
from standins import Standins, standins_fixture  # noqa: E402


@pytest.fixture
def standins() -> Iterator[Standins]:
    """A 0777 folder of stand-in CLIs (claude, codex, gemini), removed afterwards."""
    yield from standins_fixture()
