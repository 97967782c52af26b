"""The scripted verifier: ``python -m loopbus.scripted.verifier`` (see docs/verify.md).

It reads the code-cold brief on stdin and, in its working directory (trunk's checkout),
does what a person handed only the criteria would do: starts the increment with the
brief's boot command, then runs every criterion that names a pytest test (``path::name``,
all in one pytest run) and nothing else. A boot that fails and a criterion that does not
pass is a finding; a criterion it cannot run is *unreached*, never passed. It grades the
four axes from what it saw: full marks when everything ran and passed, correctness 4 when
something failed, and regression_surface 6 when something could not be reached.
Deterministic.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

TIMEOUT_S = 300


def run(command: list[str] | str) -> tuple[bool, str]:
    try:
        done = subprocess.run(
            command,
            shell=isinstance(command, str),
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, str(exc)
    tail = (done.stdout + done.stderr).strip().splitlines()[-1:] or [""]
    return done.returncode == 0, tail[0]


def endings(command: list[str]) -> dict[str, str]:
    """How each test ended in one pytest run (``-rA`` summary lines: ``PASSED node``)."""
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return {}
    out: dict[str, str] = {}
    for line in done.stdout.splitlines():
        word, _, rest = line.partition(" ")
        if word in ("PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS") and rest:
            out.setdefault(rest.split(" - ")[0].strip(), word)
    return out


def verify(brief: dict[str, Any]) -> dict[str, Any]:
    findings: list[dict[str, Any]] = []
    checks: list[dict[str, Any]] = []
    unreached: list[str] = []
    boot = (brief.get("boot") or {}).get("command", "")
    if boot:
        booted, said = run(boot)
        checks.append({"id": "boot", "command": boot, "passed": booted})
        if not booted:
            findings.append({"message": f"the increment does not start: {said}", "check": "boot"})
    else:
        unreached.append("the increment: trunk declares no boot check")
    nodes: list[str] = []
    for criterion in brief.get("criteria", []):
        node = criterion["id"]
        if "::" in node:
            nodes.append(node)
        else:
            unreached.append(f"{node}: not a test this verifier can run")
    if nodes:  # one pytest run for every criterion: each its own check
        command = [sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", *nodes]
        ended = endings(command)
        for node in nodes:
            passed = ended.get(node) == "PASSED"
            shown = " ".join([*command[: -len(nodes)], node])
            checks.append({"id": node, "command": shown, "passed": passed, "criterion": node})
            if not passed:
                how = ended.get(node, "did not run")
                message = f"criterion {node} does not pass on trunk: {how.lower()}"
                findings.append({"message": message, "check": node})
    correctness = 4 if findings else 10
    reach = 6 if unreached else 10
    scores = [
        {"axis": "correctness", "score": correctness, "why": f"{len(findings)} problems found"},
        {"axis": "testing_strategy", "score": 10, "why": "every criterion names a test"},
        {"axis": "plan_adherence", "score": 10, "why": "the wave's criteria were exercised"},
        {"axis": "regression_surface", "score": reach, "why": f"{len(unreached)} unreached"},
    ]
    return {"findings": findings, "scores": scores, "unreached": unreached, "checks": checks}


def main() -> int:
    brief = json.loads(sys.stdin.read() or "{}")
    print(json.dumps(verify(brief)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
