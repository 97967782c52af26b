"""Reading a pytest run, with pending tests narrow and strict.

A test listed in a check's ``pending`` is a criterion nobody has implemented yet. Exactly
one ending of it is green: its own assertion failing (an ``AssertionError`` raised in the
test's file during the call). Every other ending is red:

* it passes — red until the same commit removes it from ``pending`` ("clear the marker");
* it raises anything else, errors in setup or teardown, is skipped or xfailed — red (fail);
* it was collected but did not run, or its module did not import — red (error);
* the id names no collected test at all — a configuration error (error).

Tests not listed in ``pending`` are ordinary: any failure or error is red (fail). A
collection error anywhere, or a pytest exit status other than 0/1, is an error. So is a run
that establishes nothing: an ordinary test collected but never run (``--co``, ``-x``, an
interrupted session), or every ordinary test skipped or xfailed. A skip beside tests that
did run stays a skip.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from schemas.gates import GateOutcome
from schemas.targets import CheckTarget, CodeTarget
from workers.gates.config import CheckSpec, ProjectConfig
from workers.gates.verdicts import Finding, Verdict

EXIT_STATUS = {
    2: "pytest was interrupted",
    3: "pytest hit an internal error",
    4: "pytest was called wrongly (usage error)",
    5: "pytest collected no tests; nothing was measured",
}


@dataclass
class TestEnding:
    """How one test ended, reduced from its setup/call/teardown phases."""

    nodeid: str
    path: str
    line: int
    ending: str  # passed | failed | error | skipped | xfailed | xpassed | norun
    phase: dict[str, Any] = field(default_factory=dict)

    @property
    def declared_failure(self) -> bool:
        """Its own assertion failed during the call: the one green ending of a pending test."""
        return (
            self.ending == "failed"
            and bool(self.phase.get("assertion"))
            and bool(self.phase.get("in_test_file"))
        )

    def target(self) -> CodeTarget:
        path = self.phase.get("frame_path") or self.path
        line = self.phase.get("frame_line") or self.line
        return CodeTarget(path=str(path), start=max(int(line), 1), end=max(int(line), 1))


def ending_of(test: dict[str, Any]) -> TestEnding:
    phases: dict[str, dict[str, Any]] = test.get("phases", {})
    nodeid = str(test["nodeid"])
    path = str(test.get("path") or nodeid.split("::")[0])
    line = int(test.get("line") or 1)
    for when in ("setup", "call", "teardown"):
        phase = phases.get(when)
        if phase is not None and phase.get("outcome") == "failed":
            ending = "failed" if when == "call" else "error"
            return TestEnding(nodeid, path, line, ending, {**phase, "when": when})
    call = phases.get("call")
    setup = phases.get("setup", {})
    if call is None:
        if setup.get("outcome") == "skipped":
            kind = "xfailed" if setup.get("xfail") else "skipped"
            return TestEnding(nodeid, path, line, kind, setup)
        return TestEnding(nodeid, path, line, "norun", {})
    if call.get("outcome") == "skipped":
        return TestEnding(nodeid, path, line, "xfailed" if call.get("xfail") else "skipped", call)
    return TestEnding(nodeid, path, line, "xpassed" if call.get("xfail") else "passed", call)


def _is_instance_of(nodeid: str, pending_id: str) -> bool:
    """A pending id names a test and each of its parametrisations (``id[...]``)."""
    return nodeid == pending_id or nodeid.startswith(pending_id + "[")


def _first_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def judge_pytest(report: dict[str, Any], check: CheckSpec, config: ProjectConfig) -> Verdict:
    """The outcome and findings of one pytest run (a plugin report document)."""
    findings: list[Finding] = []
    errors: list[str] = []
    fails = 0
    counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0, "not run": 0, "pending": 0}

    broken_files = _collection_errors(report, errors, findings)
    _unmatched_pending(report, check, config, broken_files, errors, findings)
    pending = set(check.pending)
    unrun: list[str] = []
    ordinary = 0
    tests = {n: "deselected" for n in report.get("deselected", [])}
    for ending in _endings(report, pending):
        owner = next((p for p in pending if _is_instance_of(ending.nodeid, p)), None)
        tests[ending.nodeid] = ending.ending if owner is None else f"pending-{ending.ending}"
        if owner is None:
            ordinary += 1
            if ending.ending == "norun":
                unrun.append(ending.nodeid)
            fails += _ordinary(ending, counts, findings)
            continue
        counts["pending"] += 1
        verdict = _pending(ending, owner, config, findings)
        if verdict == "error":
            errors.append(f"pending test {ending.nodeid} did not run")
        elif verdict == "fail":
            fails += 1

    status = int(report.get("exitstatus", -1))
    if status not in (0, 1) and not errors:
        errors.append(EXIT_STATUS.get(status, f"pytest exited with status {status}"))
        findings.append(
            Finding(
                target=CheckTarget(check=check.id),
                severity="high",
                message=f"{errors[-1]} (exit status {status})",
            )
        )
    nothing = _nothing_established(check.id, unrun, ordinary, counts, bool(broken_files))
    if nothing is not None and (unrun or ordinary or not errors):
        errors.append(nothing.message)
        findings.append(nothing)
    summary = ", ".join(f"{n} {k}" for k, n in counts.items() if n) or "no tests"
    outcome: GateOutcome = "error" if errors else ("fail" if fails else "pass")
    return Verdict(
        outcome=outcome,
        summary=summary,
        error="; ".join(errors[:3]) + ("; …" if len(errors) > 3 else "") if errors else "",
        findings=findings,
        tests=tests,
    )


def _collection_errors(
    report: dict[str, Any], errors: list[str], findings: list[Finding]
) -> set[str]:
    """Record each module that failed to import; return the files (and node ids) that did."""
    broken: set[str] = set()
    for err in report.get("collect_errors", []):
        broken |= {str(err["path"]), str(err["nodeid"]).split("::")[0]}
        errors.append(f"collection error in {err['nodeid'] or err['path']}")
        findings.append(
            Finding(
                target=CodeTarget(
                    path=str(err["path"]), start=int(err["line"]), end=int(err["line"])
                ),
                severity="high",
                message=f"collection error in {err['nodeid'] or err['path']}: "
                f"{_first_line(str(err.get('longrepr', '')))}",
                evidence={"longrepr": err.get("longrepr", "")},
            )
        )
    return broken


def _unmatched_pending(
    report: dict[str, Any],
    check: CheckSpec,
    config: ProjectConfig,
    broken_files: set[str],
    errors: list[str],
    findings: list[Finding],
) -> None:
    """A pending id that names no collected test is an error: it would otherwise be a
    criterion nobody can ever clear (or a typo that hides one)."""
    collected = list(report.get("collected", [])) + list(report.get("deselected", []))
    for pid in check.pending:
        if any(_is_instance_of(n, pid) for n in collected):
            continue
        if pid.split("::")[0] in broken_files:
            continue  # its module did not import; the collection error already says so
        errors.append(f"pending id {pid} names no test")
        line = config.line_of(pid)
        findings.append(
            Finding(
                target=CodeTarget(path="loopbus.toml", start=line, end=line),
                severity="high",
                message=f"pending id {pid} names no test in this commit: fix the id or remove it "
                f"from check {check.id!r}",
                evidence={"pending": pid, "check": check.id},
            )
        )


def _endings(report: dict[str, Any], pending: set[str]) -> list[TestEnding]:
    """How every test ended, counting a collected test that never reported, and a
    deselected pending test, as not run (deselecting a criterion does not clear it)."""
    endings = [ending_of(t) for t in report.get("tests", [])]
    ran = {e.nodeid for e in endings}
    for nodeid in report.get("collected", []):
        if nodeid not in ran:
            endings.append(TestEnding(nodeid, nodeid.split("::")[0], 1, "norun"))
    for nodeid in report.get("deselected", []):
        if any(_is_instance_of(nodeid, pid) for pid in pending):
            endings.append(TestEnding(nodeid, nodeid.split("::")[0], 1, "norun"))
    return endings


def _ordinary(ending: TestEnding, counts: dict[str, int], findings: list[Finding]) -> int:
    if ending.ending in ("passed", "xpassed"):
        counts["passed"] += 1
        return 0
    if ending.ending in ("skipped", "xfailed"):
        counts["skipped"] += 1
        return 0
    if ending.ending == "norun":
        counts["not run"] += 1
        return 0
    counts["failed" if ending.ending == "failed" else "errors"] += 1
    phase = ending.phase
    what = phase.get("exception") or "failure"
    where = "" if ending.ending == "failed" else f" in {phase.get('when', 'setup')}"
    detail = _first_line(str(phase.get("message") or phase.get("longrepr") or ""))
    findings.append(
        Finding(
            target=ending.target(),
            severity="high",
            message=f"{ending.nodeid} failed{where}: {what}" + (f": {detail}" if detail else ""),
            evidence={"nodeid": ending.nodeid, "longrepr": phase.get("longrepr", "")},
        )
    )
    return 1


def _nothing_established(
    check_id: str, unrun: list[str], ordinary: int, counts: dict[str, int], collection_failed: bool
) -> Finding | None:
    """The finding for a run that measured nothing (or left ordinary tests unrun), else None.

    A collected test that never ran is not a skip: nobody asked for it to be skipped, and
    nothing is known about it. A run whose every ordinary test was skipped establishes
    nothing either, however green its pending tests are.
    """
    if unrun:
        why = " (pytest stopped at a collection error)" if collection_failed else ""
        shown = ", ".join(unrun[:3]) + (", …" if len(unrun) > 3 else "")
        if len(unrun) == ordinary:
            head = f"none of the {ordinary} collected tests ran: nothing was run"
        else:
            head = f"{len(unrun)} of the {ordinary} collected tests did not run: nothing was run"
        message = f"{head} for them{why} ({shown})"
        evidence: dict[str, Any] = {"not_run": unrun[:50], "count": len(unrun)}
    elif ordinary and counts["passed"] + counts["failed"] + counts["errors"] == 0:
        message = f"every test was skipped: nothing was established ({counts['skipped']} skipped)"
        evidence = {"skipped": counts["skipped"]}
    elif not ordinary and not counts["pending"]:
        message = "no test ran: nothing was established"
        evidence = {}
    else:
        return None
    return Finding(
        target=CheckTarget(check=check_id), severity="high", message=message, evidence=evidence
    )


def _pending(ending: TestEnding, pid: str, config: ProjectConfig, findings: list[Finding]) -> str:
    """``green``, ``fail`` or ``error`` for one pending test, adding its finding when red."""
    if ending.declared_failure:
        return "green"
    phase = ending.phase
    evidence = {"nodeid": ending.nodeid, "pending": pid, "longrepr": phase.get("longrepr", "")}
    if ending.ending in ("passed", "xpassed"):
        line = config.line_of(pid)
        findings.append(
            Finding(
                target=CodeTarget(path="loopbus.toml", start=line, end=line),
                severity="medium",
                message=f"pending test {ending.nodeid} passes: clear the marker (remove {pid!r} "
                "from pending in loopbus.toml) in this same commit",
                evidence={**evidence, "test": f"{ending.path}:{ending.line}"},
            )
        )
        return "fail"
    if ending.ending == "norun":
        findings.append(
            Finding(
                target=CodeTarget(path=ending.path, start=ending.line, end=ending.line),
                severity="high",
                message=f"pending test {ending.nodeid} did not run, so nothing was measured",
                evidence=evidence,
            )
        )
        return "error"
    if ending.ending in ("skipped", "xfailed"):
        why = f"pending test {ending.nodeid} was {ending.ending}"
    elif ending.ending == "error":
        why = (
            f"pending test {ending.nodeid} errored in {phase.get('when')}: {phase.get('exception')}"
        )
    elif phase.get("assertion"):
        where = phase.get("frame_path") or "outside the checkout"
        why = (
            f"pending test {ending.nodeid} hit an AssertionError in {where}, not its own assertion"
        )
    else:
        why = f"pending test {ending.nodeid} raised {phase.get('exception')}, not its assertion"
    findings.append(
        Finding(
            target=ending.target(),
            severity="high",
            message=f"{why}; only the test's own assertion failing is green",
            evidence=evidence,
        )
    )
    return "fail"
