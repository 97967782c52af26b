"""pytest plugin the gate runner loads into a check's pytest run (``-p loopbus_gate_pytest``).

It writes one JSON document to ``$LOOPBUS_GATE_REPORT`` at the end of the session: every
collected test's node id and location, how each phase ended (and, for a failure, the
exception type, whether it was an ``AssertionError`` raised in the test's own file, and the
innermost frame inside the checkout), collection errors, deselected tests, and pytest's
exit status. The runner reads that document instead of pytest's text output; a run that
ends without writing it measured nothing, and is an error.

Standard library and pytest only: it runs inside the project's interpreter.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

_ROOT = Path.cwd().resolve()
_TEXT_CAP = 4000
_state: dict[str, Any] = {"tests": {}, "collect_errors": [], "deselected": [], "collected": []}


def _rel(path: Any) -> str | None:
    try:
        resolved = Path(str(path)).resolve()
        return resolved.relative_to(_ROOT).as_posix()
    except (ValueError, OSError):
        return None


def _frame_in_checkout(excinfo: Any) -> tuple[str | None, int | None]:
    """The innermost traceback frame that lies inside the checkout (path, 1-based line)."""
    try:
        entries = list(excinfo.traceback)
    except Exception:
        return None, None
    for entry in reversed(entries):
        rel = _rel(entry.path)
        if rel is not None:
            return rel, entry.lineno + 1
    return None, None


def _longrepr(report: Any) -> str:
    text = str(report.longrepr) if report.longrepr is not None else ""
    return text[-_TEXT_CAP:]


def _test(nodeid: str) -> dict[str, Any]:
    test: dict[str, Any] = _state["tests"].setdefault(nodeid, {"nodeid": nodeid, "phases": {}})
    return test


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: Any, call: Any) -> Any:
    outcome = yield
    report = outcome.get_result()
    entry = _test(item.nodeid)
    if "path" not in entry:
        rel_path, line, _ = item.location
        entry["path"] = _rel(getattr(item, "path", rel_path)) or rel_path
        entry["line"] = (line or 0) + 1
    phase: dict[str, Any] = {"outcome": report.outcome}
    if hasattr(report, "wasxfail"):
        phase["xfail"] = True
    if call.excinfo is not None and report.outcome == "failed":
        excinfo = call.excinfo
        frame_path, frame_line = _frame_in_checkout(excinfo)
        item_path = _rel(getattr(item, "path", "")) if hasattr(item, "path") else None
        phase["exception"] = excinfo.typename
        phase["assertion"] = bool(excinfo.errisinstance(AssertionError))
        phase["in_test_file"] = frame_path is not None and frame_path == item_path
        phase["frame_path"] = frame_path
        phase["frame_line"] = frame_line
        phase["message"] = str(excinfo.value)[:_TEXT_CAP]
        phase["longrepr"] = _longrepr(report)
    elif report.outcome == "failed":
        phase["longrepr"] = _longrepr(report)
    entry["phases"][report.when] = phase


def pytest_collectreport(report: Any) -> None:
    if not report.failed:
        return
    path = getattr(report, "fspath", None) or report.nodeid.split("::")[0]
    crash = getattr(report.longrepr, "reprcrash", None)
    line = getattr(crash, "lineno", None) if crash is not None else None
    crash_path = _rel(getattr(crash, "path", "")) if crash is not None else None
    _state["collect_errors"].append(
        {
            "nodeid": report.nodeid,
            "path": crash_path or _rel(_ROOT / str(path)) or str(path),
            "line": line or 1,
            "longrepr": _longrepr(report),
        }
    )


def pytest_deselected(items: Any) -> None:
    _state["deselected"].extend(item.nodeid for item in items)


def pytest_collection_finish(session: Any) -> None:
    _state["collected"] = [item.nodeid for item in session.items]


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: Any, exitstatus: Any) -> None:
    target = os.environ.get("LOOPBUS_GATE_REPORT")
    if not target:
        return
    document = {
        "format": 1,
        "exitstatus": int(exitstatus),
        "collected": _state["collected"],
        "deselected": _state["deselected"],
        "collect_errors": _state["collect_errors"],
        "tests": list(_state["tests"].values()),
    }
    tmp = f"{target}.tmp"
    with open(tmp, "w", encoding="utf-8") as out:
        json.dump(document, out)
    os.replace(tmp, target)
