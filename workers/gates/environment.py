"""The environment a check runs in: nothing inherited but what a check needs, the
project's interpreter first on PATH, and the reporting plugin loaded into its pytest."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from workers.gates.executors import Executor
from workers.gates.parsers import REPORT_NAME

PASSED_ENV = ("LANG", "LC_ALL", "TZ")
"""The only variables a check inherits from the runner's own environment (plus PATH)."""


def interpreter_dir(python: str) -> str | None:
    """The folder of the project's interpreter (``[project] python``): a path, or a command
    found on PATH; ``None`` when there is no such interpreter on this machine."""
    found = python if os.sep in python else shutil.which(python)
    if found is None or not os.access(found, os.X_OK) or os.path.isdir(found):
        return None
    return os.path.dirname(os.path.abspath(found))


def scrubbed_env(
    extra: dict[str, str], home: Path, tmp: Path, bin_dir: str | None = None
) -> dict[str, str]:
    """The whole environment a check sees: no inherited secrets or loopbus settings.

    ``python`` and tools installed next to it (ruff, pytest) resolve first on PATH, so a
    check runs with the interpreter loopbus runs with, or with the project's own
    (``bin_dir``, from ``[project] python``), unless it names another.
    """
    first = bin_dir or os.path.dirname(sys.executable)
    path = os.pathsep.join([first, os.environ.get("PATH", os.defpath)])
    env = {
        "PATH": path,
        "HOME": str(home),
        "TMPDIR": str(tmp),
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "NO_COLOR": "1",
        "TERM": "dumb",
        "CI": "true",
    }
    env.update({k: os.environ[k] for k in PASSED_ENV if k in os.environ})
    env.update(extra)
    return env


def pytest_env(
    check_env: dict[str, str], executor: Executor, dirs: tuple[Path, Path]
) -> dict[str, str]:
    """Load the reporting plugin into whatever pytest the command starts."""
    plugin = executor.view("plugin", dirs)
    report = f"{executor.view('out', dirs)}/{REPORT_NAME}"
    python_path = os.pathsep.join(p for p in (plugin, check_env.get("PYTHONPATH", "")) if p)
    addopts = " ".join(
        p
        for p in ("-p loopbus_gate_pytest -p no:cacheprovider", check_env.get("PYTEST_ADDOPTS", ""))
        if p
    )
    return {"PYTHONPATH": python_path, "PYTEST_ADDOPTS": addopts, "LOOPBUS_GATE_REPORT": report}
