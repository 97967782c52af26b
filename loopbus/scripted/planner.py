"""The scripted planner: ``python -m loopbus.scripted.planner PLANS_FILE`` (docs/planning.md).

It reads a planning brief on stdin and prints the plan ``PLANS_FILE`` holds for the
brief's slice. The file (JSON, or TOML unless it ends in ``.json``) maps slice ids to
plans; a plan is plan text (the TOML or JSON ``loopbus plan check`` takes), a table (the
plan as data, printed as the planner's envelope), or a list of those: one per try, the
brief's ``attempt`` picking (the last repeats), so a test or a demo can script a refused
first answer and a good second one. Deterministic: the same brief, the same answer.

A slice the file does not plan is a failure (exit 1, one line on stderr): it never
invents a plan.
"""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path
from typing import Any


def load(path: Path) -> dict[str, Any]:
    text = path.read_text(encoding="utf-8")
    doc = json.loads(text) if path.name.endswith(".json") else tomllib.loads(text)
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: expected a table mapping slice ids to plans")
    return doc


def pick(plans: dict[str, Any], slice_id: str, attempt: int) -> Any:
    """The answer for try ``attempt`` (from 1) of ``slice_id``; ``None`` when unplanned."""
    found = plans.get(slice_id)
    if isinstance(found, list):
        return found[min(max(attempt, 1), len(found)) - 1] if found else None
    return found


def render(answer: Any, slice_id: str) -> str:
    if isinstance(answer, str):
        return answer
    return json.dumps({"plan": answer, "summary": f"scripted plan for {slice_id}"})


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m loopbus.scripted.planner PLANS_FILE", file=sys.stderr)
        return 2
    try:
        plans = load(Path(args[0]))
    except (OSError, ValueError, tomllib.TOMLDecodeError) as exc:
        print(f"scripted planner: cannot read plans: {exc}", file=sys.stderr)
        return 2
    try:
        brief = json.loads(sys.stdin.read())
    except json.JSONDecodeError as exc:
        print(f"scripted planner: the brief is not JSON: {exc}", file=sys.stderr)
        return 2
    slice_id = str(brief.get("slice", ""))
    answer = pick(plans, slice_id, int(brief.get("attempt", 1)))
    if answer is None:
        print(f"scripted planner: {args[0]} has no plan for slice {slice_id!r}", file=sys.stderr)
        return 1
    sys.stdout.write(render(answer, slice_id) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
