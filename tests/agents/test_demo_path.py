"""``loopbus demo`` run as a pipx-style install runs it: by its absolute path, with no
loopbus on ``PATH``. The agents it ships (``python -m loopbus.scripted…``) must still find
loopbus's interpreter, inside their sandbox."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SCRIPT = Path(sys.executable).parent / "loopbus"


@pytest.mark.skipif(not SCRIPT.exists(), reason=f"no loopbus script beside {sys.executable}")
def test_demo_by_absolute_path_closes_its_slice(tmp_path: Path) -> None:
    """The reviewer and builder loopbus ships run, and the slice closes."""
    done = subprocess.run(
        [str(SCRIPT), "demo", "--timeout", "240"],
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8"},
        stdin=subprocess.DEVNULL,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "No module named" not in done.stdout + done.stderr
    assert "slice S1 closed: boot pass" in done.stdout, done.stdout[-3000:]
    assert "stats: review by r1: approve" in done.stdout
