"""An import-graph tool reads the layout as it is: ``lint-imports`` checks the layer
contracts in pyproject.toml on the checkout, with nothing generated first, and is not blind
(a planted upward import breaks its contract)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("loopbus", "workers", "bus", "projections", "schemas")
LINT_IMPORTS = str(Path(sys.executable).with_name("lint-imports"))


def lint_imports(where: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [LINT_IMPORTS, "--no-cache"], cwd=where, capture_output=True, text=True, check=False
    )


def test_the_checkout_keeps_every_contract() -> None:
    done = lint_imports(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Contracts: 2 kept, 0 broken." in done.stdout


def test_a_planted_upward_import_breaks_the_layers(tmp_path: Path) -> None:
    """The same contracts over a tree of empty packages, one of them importing upward."""
    for name in PACKAGES:
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text("")
    (tmp_path / "workers" / "kernel.py").write_text("")
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    (tmp_path / "projections" / "__init__.py").write_text("import workers.kernel  # planted\n")
    done = lint_imports(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "projections is not allowed to import workers" in done.stdout
    assert "- projections -> workers.kernel" in done.stdout
