"""From a run's ending and output to a :class:`Verdict`: pytest, ruff, or the exit code.

Whatever the parser, a run that did not end on its own — it could not start, it timed out,
it was killed — is an error: nothing was measured. Output a parser cannot read is an error
too; a parser never guesses.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from schemas.targets import CheckTarget, CodeTarget
from workers.gates.config import CheckSpec, ProjectConfig
from workers.gates.executors import RunOutput
from workers.gates.pending import judge_pytest
from workers.gates.verdicts import Finding, Verdict

REPORT_NAME = "pytest-report.json"
"""The plugin's report file, in the run's private scratch folder."""


def _error(check: CheckSpec, reason: str, run: RunOutput | None = None) -> Verdict:
    evidence = {"output_tail": run.output_tail()} if run is not None else {}
    return Verdict(
        outcome="error",
        summary=reason,
        error=reason,
        findings=[
            Finding(
                target=CheckTarget(check=check.id),
                severity="high",
                message=f"check {check.id!r}: {reason}",
                evidence=evidence,
            )
        ],
    )


def run_ending_error(check: CheckSpec, run: RunOutput) -> Verdict | None:
    """The error verdict of a run that did not end on its own, else ``None``."""
    if run.start_error is not None:
        return _error(check, f"the command could not start ({run.start_error})", run)
    if run.timed_out:
        return _error(check, f"timed out after {check.timeout_s:g}s; the run was killed", run)
    if run.signal is not None:
        return _error(check, f"the command was killed by signal {run.signal}", run)
    if run.exit_code is None:
        return _error(check, "the command's ending is unknown", run)
    return None


def parse_exit_code(
    check: CheckSpec, run: RunOutput, config: ProjectConfig, outdir: Path, workdir: str
) -> Verdict:
    """0 is pass, anything else is fail with the output's tail as evidence."""
    if run.exit_code == 0:
        return Verdict(outcome="pass", summary="exit 0")
    tail = run.output_tail()
    last = next((ln for ln in reversed(tail.splitlines()) if ln.strip()), "")
    return Verdict(
        outcome="fail",
        summary=f"exit {run.exit_code}",
        findings=[
            Finding(
                target=CheckTarget(check=check.id),
                severity="high",
                message=f"check {check.id!r} exited with code {run.exit_code}"
                + (f": {last.strip()[:300]}" if last else ""),
                evidence={"exit_code": run.exit_code, "output_tail": tail},
            )
        ],
    )


def _relative(filename: str, workdir: str) -> str:
    if os.path.isabs(filename):
        rel = os.path.relpath(filename, workdir)
        return filename.lstrip("/") if rel.startswith("..") else rel
    return filename


def parse_ruff(
    check: CheckSpec, run: RunOutput, config: ProjectConfig, outdir: Path, workdir: str
) -> Verdict:
    """``ruff check --output-format json``: one finding per diagnostic; exit 2 is ruff's own
    error; findings and exit status must agree."""
    if run.exit_code not in (0, 1):
        return _error(check, f"ruff exited with code {run.exit_code} (its own error)", run)
    try:
        items: Any = json.loads(run.stdout or b"null")
    except ValueError:
        return _error(check, "ruff output is not JSON (add --output-format json)", run)
    if not isinstance(items, list):
        return _error(check, "ruff output is not a JSON list of diagnostics", run)
    findings = []
    try:
        for item in items:
            start = int(item["location"]["row"])
            end = int((item.get("end_location") or item["location"])["row"])
            code = item.get("code") or "syntax-error"
            findings.append(
                Finding(
                    target=CodeTarget(
                        path=_relative(str(item["filename"]), workdir),
                        start=max(start, 1),
                        end=max(end, start, 1),
                    ),
                    severity="medium",
                    message=f"{code}: {item.get('message', '')}",
                    evidence={
                        "code": code,
                        "column": item["location"].get("column"),
                        "url": item.get("url"),
                        "fixable": item.get("fix") is not None,
                    },
                )
            )
    except (KeyError, TypeError, ValueError) as exc:
        return _error(check, f"ruff output has an unexpected shape ({exc!r})", run)
    if run.exit_code == 1 and not findings:
        return _error(check, "ruff exited 1 but reported no diagnostics", run)
    if not findings:
        return Verdict(outcome="pass", summary="no lint findings")
    return Verdict(outcome="fail", summary=f"{len(findings)} lint findings", findings=findings)


def parse_pytest(
    check: CheckSpec, run: RunOutput, config: ProjectConfig, outdir: Path, workdir: str
) -> Verdict:
    """Read the plugin's report; no report means pytest never finished a session."""
    path = outdir / REPORT_NAME
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return _error(
            check,
            "no pytest report: the command did not run pytest to the end of a session",
            run,
        )
    except ValueError:
        return _error(check, "the pytest report is not valid JSON", run)
    if not isinstance(report, dict) or report.get("format") != 1:
        return _error(check, "the pytest report has an unknown format", run)
    try:
        return judge_pytest(report, check, config)
    except (KeyError, TypeError, ValueError) as exc:
        return _error(check, f"the pytest report has an unexpected shape ({exc!r})", run)


Parser = Callable[[CheckSpec, RunOutput, ProjectConfig, Path, str], Verdict]

PARSERS: dict[str, Parser] = {
    "pytest": parse_pytest,
    "ruff": parse_ruff,
    "exit-code": parse_exit_code,
}


def parse(
    check: CheckSpec, run: RunOutput, config: ProjectConfig, outdir: Path, workdir: str
) -> Verdict:
    """The verdict of one run; ``workdir`` is the checkout as the command saw it."""
    ended = run_ending_error(check, run)
    if ended is not None:
        return ended
    return PARSERS[check.parser](check, run, config, outdir, workdir)
