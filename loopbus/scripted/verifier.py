"""The scripted verifier: ``python -m loopbus.scripted.verifier`` (see docs/verify.md).

It reads the code-cold brief on stdin and, in its working directory (trunk's checkout),
does what a person handed only the criteria would do: starts the increment with the
brief's boot command, then runs each criterion that names a pytest test (``path::name``)
and nothing else. A boot that fails and a criterion that does not pass are findings; a
criterion it cannot run is *unreached*, never passed. It grades the four axes from what it
saw: full marks when everything ran and passed, correctness 4 when something failed, and
regression_surface 6 when something could not be reached. Deterministic.
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
    for criterion in brief.get("criteria", []):
        node = criterion["id"]
        if "::" not in node:
            unreached.append(f"{node}: not a test this verifier can run")
            continue
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", node]
        passed, said = run(command)
        checks.append(
            {"id": node, "command": " ".join(command), "passed": passed, "criterion": node}
        )
        if not passed:
            findings.append(
                {"message": f"criterion {node} does not pass on trunk: {said}", "check": node}
            )
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
