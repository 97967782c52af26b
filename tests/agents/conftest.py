"""Whether bubblewrap works on this machine, decided apart from the code under test.

The executor's own probe (:meth:`Bubblewrap.problem`, built on :meth:`Bubblewrap.base`) is
what the bubblewrap tests check: deciding from it whether to expect wrapping would turn a
regression there into skips. ``bwrap --ro-bind / / true`` asks the machine alone, and where
it succeeds a test that expects wrapping fails if the executor does not wrap.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest


def bubblewrap_problem() -> str | None:
    """``None`` when ``bwrap`` is installed and makes the simplest sandbox here; else why not."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bubblewrap (bwrap) is not installed"
    try:
        done = subprocess.run(
            [bwrap, "--ro-bind", "/", "/", "true"], capture_output=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{bwrap} did not run: {exc}"
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip() or f"exit code {done.returncode}"
        return f"{bwrap} cannot make a sandbox here: {said}"
    return None


@pytest.fixture(scope="session")
def bubblewrap() -> str | None:
    """This machine's :func:`bubblewrap_problem`, asked once per session."""
    return bubblewrap_problem()


@pytest.fixture
def bubblewrap_works(bubblewrap: str | None) -> None:
    """Skip a test that needs bubblewrap where it does not work here."""
    if bubblewrap is not None:
        pytest.skip(bubblewrap)
