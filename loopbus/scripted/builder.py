"""The scripted builder: ``python -m loopbus.scripted.builder`` (see docs/agents.md).

It knows how to build the units of the project ``loopbus init`` scaffolds, and it works
like an agent would: it reads the brief, edits the unit's files in the worktree it runs
in, removes the unit's own criteria from the ``pending`` list of ``loopbus.toml`` (the one
edit to that file a unit may make), and prints an envelope. It is deterministic, and some
of its first attempts are deliberately imperfect so a demo shows the loop correcting them:

* ``ops`` gets ``mul`` wrong on round 1 (the gates go red) and right on round 2;
* ``stats`` forgets the empty list on round 1 (the reviewer rejects it), and handles it
  once a finding about it is in the brief;
* ``fmt`` asks a novel decision (how to round, class ``risky``: reverting the unit undoes
  it) until its brief carries the decision.

The charter demo's second slice (planned by ``loopbus.scripted.planner``) adds two units,
built right the first time: ``sub`` (subtraction, beside ``add`` and ``mul``) and
``thousands`` (totals grouped by thousands).

A unit it does not know is answered ``failed``: it never pretends.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

Plan = Callable[[dict[str, Any]], dict[str, Any]]

OPS_ROUND_1 = '''"""Arithmetic on two numbers."""


def add(a: float, b: float) -> float:
    return a + b


def mul(a: float, b: float) -> float:
    return a + b
'''

OPS_FIXED = OPS_ROUND_1[: OPS_ROUND_1.rindex("return a + b")] + "return a * b\n"

STATS_ROUND_1 = '''"""Statistics over a list of numbers."""


def mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)
'''

STATS_FIXED = '''"""Statistics over a list of numbers."""


def mean(xs: list[float]) -> float:
    if not xs:
        return 0.0
    return sum(xs) / len(xs)
'''

FMT = '''"""Formatting totals for people."""


def format_total(value: float) -> str:
    return {body}
'''

ROUNDING = {
    "decision_id": "rounding",
    "question": "how should format_total round a total?",
    "options": [
        {
            "id": "cents",
            "summary": "two decimals, always",
            "user_impact": "totals read like money",
            "performance": "one format call",
            "speed": "same",
            "cost": "none",
        },
        {
            "id": "raw",
            "summary": "print the float as Python does",
            "user_impact": "totals such as 0.30000000000000004 show up",
            "performance": "one str call",
            "speed": "same",
            "cost": "none",
        },
    ],
    "recommended_default": "cents",
    "confidence": "high",
    "reasoning": "a total is read by a person, and the criterion shows two decimals",
    "autonomy": "risky",
}


def export(line: str) -> None:
    """Add an import line to the package's ``__init__.py`` (each unit exports its own)."""
    init = Path("calc/__init__.py")
    text = init.read_text()
    if line not in text:
        init.write_text(text.rstrip("\n") + "\n" + line + "\n")


def clear_pending(criteria: list[dict[str, Any]]) -> None:
    """Remove this unit's criteria (and only them) from ``pending`` in ``loopbus.toml``."""
    config = Path("loopbus.toml")
    own = {c["test"] for c in criteria}
    kept = [
        line
        for line in config.read_text().splitlines(keepends=True)
        if not any(re.fullmatch(rf'\s*"{re.escape(test)}",?\s*', line) for test in own)
    ]
    config.write_text("".join(kept))


def ops(brief: dict[str, Any]) -> dict[str, Any]:
    first = brief["round"] == 1
    Path("calc/ops.py").write_text(OPS_ROUND_1 if first else OPS_FIXED)
    export("from calc.ops import add, mul")
    clear_pending(brief["criteria"])
    summary = "add and mul" if first else "mul multiplies (round 1 added by mistake)"
    return {"status": "completed", "summary": summary, "tokens": 900}


def stats(brief: dict[str, Any]) -> dict[str, Any]:
    told = any("empty" in f["message"] for f in brief["findings"])
    Path("calc/stats.py").write_text(STATS_FIXED if told else STATS_ROUND_1)
    export("from calc.stats import mean")
    clear_pending(brief["criteria"])
    summary = "mean of an empty list is 0.0" if told else "mean"
    return {"status": "completed", "summary": summary, "tokens": 700}


def fmt(brief: dict[str, Any]) -> dict[str, Any]:
    chosen = {d["decision_id"]: d["chosen"] for d in brief["decisions"]}
    if "rounding" not in chosen:
        return {"status": "completed", "summary": "rounding is open", "novel_decisions": [ROUNDING]}
    body = 'f"{value:.2f}"' if chosen["rounding"] == "cents" else "str(value)"
    Path("calc/fmt.py").write_text(FMT.format(body=body))
    clear_pending(brief["criteria"])
    return {"status": "completed", "summary": f"format_total ({chosen['rounding']})", "tokens": 500}


SUB = """

def sub(a: float, b: float) -> float:
    return a - b
"""


def sub(brief: dict[str, Any]) -> dict[str, Any]:
    ops_file = Path("calc/ops.py")
    text = ops_file.read_text()
    if "def sub(" not in text:
        ops_file.write_text(text.rstrip("\n") + "\n" + SUB)
    export("from calc.ops import sub")
    clear_pending(brief["criteria"])
    return {"status": "completed", "summary": "sub subtracts", "tokens": 400}


def thousands(brief: dict[str, Any]) -> dict[str, Any]:
    Path("calc/fmt.py").write_text(FMT.format(body='f"{value:,.2f}"'))
    clear_pending(brief["criteria"])
    return {"status": "completed", "summary": "totals grouped by thousands", "tokens": 400}


PLANS: dict[str, Plan] = {
    "ops": ops,
    "stats": stats,
    "fmt": fmt,
    "sub": sub,
    "thousands": thousands,
}


USAGE = (
    "usage: python -m loopbus.scripted.builder < REQUEST  "
    "(a builder brief, JSON, on stdin; prints one envelope. It builds only the units "
    "of the project `loopbus init` scaffolds)"
)


def main() -> int:
    if sys.argv[1:] or sys.stdin.isatty():
        print(USAGE, file=sys.stderr)
        return 2
    brief = json.load(sys.stdin)
    plan = PLANS.get(brief["unit"])
    if plan is None:
        envelope: dict[str, Any] = {
            "status": "failed",
            "summary": f"the scripted builder does not know how to build unit {brief['unit']!r}",
        }
    else:
        envelope = plan(brief)
    print(json.dumps({"schema": "loopbus.envelope.v2", **envelope}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
