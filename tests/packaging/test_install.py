"""What a non-editable install puts into site-packages, and that it runs from there.

The design's folders (``schemas/``, ``projections/``, ``bus/``, ``workers/``) are packages
under their own names beside ``loopbus``: a plain layout that mypy and import-graph tools read
from the checkout. The price of plain top-level names is that a folder of the same name in the
directory a daemon starts from could shadow ours, so every daemon starts with ``python -P``;
a test below plants such decoys.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("loopbus", "schemas", "projections", "bus", "workers")


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
    suffixes = {".py", ".toml", ".json", ".html", ".css", ".js"}
    return {
        str(path.relative_to(base))
        for path in base.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix in suffixes
    }


def test_only_the_five_packages_land_in_site_packages(installed: Path) -> None:
    """No tests/, deploy/ or docs/ package sneaks into the wheel beside the five."""
    names = {p.name for p in installed.iterdir() if p.name != "bin"}
    assert {n for n in names if not n.endswith(".dist-info")} == set(PACKAGES)


@pytest.mark.parametrize("folder", PACKAGES)
def test_every_module_and_data_file_is_installed(installed: Path, folder: str) -> None:
    """Every module and data file of a folder is installed (discovery, not a list, finds them)."""
    missing = {s for s in _sources(folder) if not (installed / folder / s).is_file()}
    assert not missing, f"not installed from {folder}/: {sorted(missing)}"


def test_a_daemon_started_beside_decoy_packages_runs_ours(installed: Path, tmp_path: Path) -> None:
    """``loopbus worker`` from a project holding its own workers/ and schemas/ runs loopbus's.

    The decoys raise on import: without ``-P`` Python puts the current folder first on the
    path and the daemon would import them.
    """
    for name in ("workers", "schemas", "bus"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(f"raise SystemExit('decoy {name} imported')\n")
    command = ["worker", "projector", "--help"]
    done = subprocess.run(
        [sys.executable, "-P", "-c", "from loopbus.cli import main; main()", *command],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(installed), "PATH": ""},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "usage: loopbus worker projector" in done.stdout  # named as the user ran it
    assert "decoy" not in done.stdout + done.stderr
