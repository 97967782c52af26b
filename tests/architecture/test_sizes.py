"""The size rules hold: a daemon module stays a thin shell over its decision (about 400
lines at most), no module in workers/ or projections/ grows past about 450 lines, and no
function in workers/ grows past 80 lines."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DAEMON_MODULE_LINES = 400
FUNCTION_LINES = 80


def test_every_daemon_module_stays_under_the_limit() -> None:
    daemons = sorted((ROOT / "workers").glob("*/daemon.py"))
    assert len(daemons) >= 10  # the scan found the daemons (a moved folder would pass it)
    too_big = {
        str(p.relative_to(ROOT)): n
        for p in daemons
        if (n := len(p.read_text().splitlines())) > DAEMON_MODULE_LINES
    }
    assert not too_big, f"split these into a decision module and a shell: {too_big}"


def test_no_function_in_workers_is_longer_than_the_limit() -> None:
    long_ones = {}
    for path in sorted((ROOT / "workers").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > FUNCTION_LINES:
                    long_ones[f"{path.relative_to(ROOT)}::{node.name}"] = length
    assert not long_ones, f"split these into named steps: {long_ones}"


MODULE_LINES = 450
"""A module in workers/ or projections/ is read in one sitting: about 450 lines at most."""
SIZED = ("workers", "projections")


def module_sizes() -> dict[str, int]:
    return {
        str(p.relative_to(ROOT)): len(p.read_text().splitlines())
        for folder in SIZED
        for p in sorted((ROOT / folder).rglob("*.py"))
    }


def test_no_module_in_workers_or_projections_is_over_the_limit() -> None:
    sizes = module_sizes()
    assert len(sizes) >= 100  # the scan found the modules (a moved folder would pass it)
    too_big = {m: n for m, n in sizes.items() if n > MODULE_LINES}
    assert not too_big, f"split these along the seams they have: {too_big}"
