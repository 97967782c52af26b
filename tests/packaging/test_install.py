"""A non-editable install puts one package, ``loopbus``, into site-packages.

The repository keeps ``schemas/``, ``projections/``, ``bus/`` and ``workers/`` at its top,
but they install as ``loopbus.schemas`` and so on (setuptools' package-dir mapping), so
loopbus never collides with another distribution's ``schemas`` or ``bus``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAPPED = {"schemas": "schemas", "projections": "projections", "bus": "bus", "workers": "workers"}


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project built as a wheel and installed (no dependencies) into an empty target."""
    work = tmp_path_factory.mktemp("install")
    # Built from a copy: an in-tree build leaves build/ behind in the checkout.
    source = work / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".git", "build", "*.egg-info"))
    wheels = work / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(source)],
        check=True,
        capture_output=True,
    )
    (wheel,) = wheels.glob("loopbus-*.whl")
    target = work / "site-packages"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "-t", str(target), str(wheel)],
        check=True,
        capture_output=True,
    )
    return target


def _sources(folder: str) -> set[str]:
    base = ROOT / folder
    return {
        str(path.relative_to(base))
        for path in base.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix in {".py", ".toml"}
    }


def test_only_loopbus_lands_in_site_packages(installed: Path) -> None:
    """The install adds the ``loopbus`` package and its metadata, no other top-level name."""
    names = {p.name for p in installed.iterdir() if p.name != "bin"}
    assert {n for n in names if not n.endswith(".dist-info")} == {"loopbus"}


@pytest.mark.parametrize("folder", [*MAPPED, "loopbus"])
def test_every_module_and_data_file_is_installed(installed: Path, folder: str) -> None:
    """Every module and TOML file of a folder is installed under ``loopbus``."""
    where = installed / "loopbus" if folder == "loopbus" else installed / "loopbus" / folder
    missing = {s for s in _sources(folder) if not (where / s).is_file()}
    assert not missing, f"not installed from {folder}/: {sorted(missing)}"


def test_installed_daemon_runs_by_its_namespaced_name(installed: Path) -> None:
    """``python -m loopbus.workers.<name>`` works from the installed copy alone."""
    done = subprocess.run(
        [sys.executable, "-m", "loopbus.workers.projector", "--help"],
        cwd=installed,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(installed), "PATH": ""},
    )
    assert done.returncode == 0, done.stderr
    assert "python -m loopbus.workers.projector" in done.stdout
    where = subprocess.run(
        [sys.executable, "-c", "import loopbus.workers as w; print(w.__file__)"],
        cwd=installed,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(installed), "PATH": ""},
    )
    assert Path(where.stdout.strip()).is_relative_to(installed)
