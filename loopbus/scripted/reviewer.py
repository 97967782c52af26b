"""The scripted reviewer: ``python -m loopbus.scripted.reviewer`` (see docs/review.md).

It reads what every reviewer gets (the diff, the gate results, the criteria) and judges
the diff (a unit's, or a wave's union: docs/verify.md) by one rule a person would apply to
the scaffolded project: a division by ``len(...)`` added without a guard for the empty case
is a defect. Anything else is approved, and graded (``scores``) from that one rule. Of
the decisions ``long`` mode picked alone (``decisions`` in its input), it lets a ``safe``
or ``risky`` one stand and sends any other to the operator (``escalate``). Deterministic:
the same input always gets the same verdict.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")
DIVISION = re.compile(r"/\s*len\(")


def review(diff: str) -> dict[str, Any]:
    findings: list[dict[str, Any]] = []
    path, line = "", 0
    guarded = "if not " in diff
    for text in diff.splitlines():
        if text.startswith("+++ "):
            path = text[4:].removeprefix("b/")
        elif match := HUNK.match(text):
            line = int(match[1])
        elif text.startswith("+"):
            if DIVISION.search(text) and not guarded:
                findings.append(
                    {
                        "target": {"type": "code", "path": path, "start": line, "end": line},
                        "severity": "high",
                        "message": "divides by the length of an empty list: guard the empty case",
                    }
                )
            line += 1
        elif not text.startswith("-"):
            line += 1
    if findings:
        return {
            "verdict": "reject",
            "summary": "an unguarded division",
            "findings": findings,
            "scores": scores(correctness=3),
        }
    return {"verdict": "approve", "summary": "reads right", "findings": [], "scores": scores()}


def scores(correctness: int = 10) -> list[dict[str, Any]]:
    """The grades it gives: only correctness varies with what it found (docs/verify.md)."""
    return [
        {"axis": "correctness", "score": correctness, "why": "the one rule it applies"},
        {"axis": "testing_strategy", "score": 10, "why": "criteria tests came with the plan"},
        {"axis": "plan_adherence", "score": 10, "why": "the diff stays in the unit's files"},
        {"axis": "regression_surface", "score": 10, "why": "trunk's gates stayed green"},
    ]


USAGE = (
    "usage: python -m loopbus.scripted.reviewer < REQUEST  "
    "(a review request, JSON, on stdin; prints one verdict. It reviews only the project "
    "`loopbus init` scaffolds)"
)


def main() -> int:
    if sys.argv[1:] or sys.stdin.isatty():
        print(USAGE, file=sys.stderr)
        return 2
    document = json.load(sys.stdin)
    verdict = review(document["diff"])
    escalate = [
        d["decision_id"]
        for d in document.get("decisions", [])
        if d.get("class") not in ("safe", "risky")
    ]
    if escalate:
        verdict["escalate"] = escalate
    print(json.dumps(verdict))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
