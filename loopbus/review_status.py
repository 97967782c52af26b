"""``loopbus status --project P --unit U``: one unit's review history.

Its state, the rung it is on and what that rung asks, the latest accepted verdict, each
round with its finding set, blocking set and convergence verdict, and — when it ended —
whether the ceiling, the progress test or a halt ended it.
"""

from __future__ import annotations

import sys
from typing import Any

import msgspec

from loopbus.errors import UsageError
from loopbus.terminal_text import say
from projections import convergence as conv
from projections import findings as findings_fold
from projections import to_builtins
from projections.units import UnitsState

_json = msgspec.json.Encoder()

# Key of the states `load_unit` fills when the projector had not folded the project's
# last event: (seq folded, the project's last seq).
BEHIND = "behind"


def unit_document(project: str, unit: str, states: dict[str, Any]) -> dict[str, Any]:
    """Everything ``--unit`` shows, as plain data."""
    units: UnitsState = states["units"]
    view = units.units.get(unit)
    history = conv.unit_view(states["convergence"], unit)
    if view is None and history is None:
        known = ", ".join(sorted(units.units)) or "none yet"
        behind = states.get(BEHIND)
        lag = (
            f"; the projector has folded the log to seq {behind[0]} and the project's last"
            f" event is seq {behind[1]}: a unit planned just now shows once it catches up"
            if behind
            else ""
        )
        raise UsageError(
            f"--unit {unit!r}: project {project} has no such unit (units: {known}){lag}"
        )
    open_findings = findings_fold.open_findings(states["findings"], unit)
    brief = conv.brief(states["convergence"], unit)
    return {
        "project": project,
        "unit": unit,
        "state": view.state if view is not None else None,
        "ready": view.ready if view is not None else False,
        "head": view.head if view is not None else None,
        "block": to_builtins(view.block) if view is not None and view.block else None,
        "outcome": to_builtins(view.outcome) if view is not None and view.outcome else None,
        "rung": brief["rung"],
        "tactic": brief["tactic"],
        "ask": brief["ask"],
        "verdict": history.verdict if history is not None else None,
        "reviewer": history.reviewer if history is not None else None,
        "reviews": history.reviews if history is not None else 0,
        "refused": history.refused if history is not None else 0,
        "ended_by": history.ended_by if history is not None else None,
        "rounds": [to_builtins(r) for r in history.rounds] if history is not None else [],
        "promotions": [to_builtins(p) for p in history.promotions] if history else [],
        "retries": list(history.retries) if history is not None else [],
        "open_findings": [to_builtins(f) for f in open_findings],
        "decisions": _decisions(states, unit),
    }


def _decisions(states: dict[str, Any], unit: str) -> dict[str, Any]:
    """The unit's novel decisions: those waiting on the operator, those in force, and those
    ``long`` mode picked alone with who has seen them since."""
    build = states["builds"].units.get(unit) if "builds" in states else None
    if build is None:
        return {"awaiting": [], "recorded": [], "auto_picked": []}
    return {
        "awaiting": [to_builtins(a) for a in build.awaiting.values()],
        "recorded": [to_builtins(r) for r in build.decisions.values()],
        "auto_picked": [to_builtins(p) for p in build.picks.values()],
    }


def print_unit(project: str, unit: str, states: dict[str, Any], *, as_json: bool) -> int:
    document = unit_document(project, unit, states)
    if as_json:
        sys.stdout.write(_json.encode(document).decode() + "\n")
        return 0
    state = document["state"] or "planned"
    if document["ready"]:
        state += " (ready)"
    say(f"unit {unit} of {project}: {state}")
    if document["block"]:
        say(f"  blocked: {document['block']['reason']} -> {document['block']['subject']}")
    if document["outcome"]:
        outcome = document["outcome"]
        say(f"  outcome: {outcome['ended_by']}: {outcome['summary']}")
    say(f"  rung {document['rung']} ({document['tactic']}): {document['ask']}")
    reviewer = f" by {document['reviewer']}" if document["reviewer"] else ""
    say(
        f"  verdict: {document['verdict'] or 'none yet'}{reviewer}; reviews "
        f"{document['reviews']}, refused {document['refused']}"
    )
    if document["ended_by"]:
        say(f"  ended by: {document['ended_by']}")
    for retry in document["retries"]:
        say(f"  {retry}")
    for item in document["rounds"]:
        say(
            f"  round {item['round']} ({item['source']}, rung {item['rung']}, head "
            f"{item['head'][:12]}): {item['convergence']} -> {item['action']}"
            + (f" [{item['ended_by']}]" if item["ended_by"] else "")
        )
        say(f"    findings ({len(item['finding_keys'])}): {_keys(item['finding_keys'])}")
        say(f"    blocking ({len(item['blocking_keys'])}): {_keys(item['blocking_keys'])}")
        if item["failing_checks"]:
            say(f"    failing checks: {', '.join(item['failing_checks'])}")
        if item["why"]:
            say(f"    why: {item['why']}")
    if not document["rounds"]:
        say("  no rounds yet")
    _print_decisions(unit, document["decisions"])
    say(f"  open findings: {len(document['open_findings'])}")
    for finding in document["open_findings"]:
        say(
            f"    {finding['severity']:<8} {finding['target']} [{finding['criterion']}] "
            f"{finding['message']}"
        )
    return 0


TRADE_OFFS = ("user_impact", "performance", "speed", "cost")


def _print_decisions(unit: str, decisions: dict[str, Any]) -> None:
    """Each decision waiting on the operator as a trade-off table, then those in force."""
    for asked in decisions["awaiting"]:
        say(
            f"  decision {asked['decision_id']} waits on the operator: {asked['question']} "
            f"(confidence {asked['confidence']})"
        )
        if asked["reasoning"]:
            say(f"    builder's reasoning: {asked['reasoning']}")
        say("    " + " | ".join(["option", "summary", *TRADE_OFFS]))
        for option in asked["options"]:
            mark = " (recommended)" if option["id"] == asked["recommended_default"] else ""
            cells = [option["id"] + mark, option["summary"] or "-"]
            cells += [option[name] or "-" for name in TRADE_OFFS]
            say("    " + " | ".join(cells))
        say(
            f"    settle it: loopbus decide --unit {unit} --decision {asked['decision_id']} "
            "--choose OPTION"
        )
    for recorded in decisions["recorded"]:
        say(
            f"  decision {recorded['decision_id']}: {recorded['chosen']} (by {recorded['owner']}, "
            f"confidence {recorded.get('stated_confidence') or recorded['confidence']}): "
            f"{recorded['question']}"
        )
    for pick in decisions["auto_picked"]:
        say(f"  auto-picked {pick['decision_id']} = {pick['chosen']} "
              f"(class {pick['autonomy'] or 'unknown'}): {seen_text(unit, pick)}")  # fmt: skip


def seen_text(unit: str, pick: dict[str, Any]) -> str:
    """Which second principal has seen an auto pick, and what became of it; unseen, that
    it holds the unit's merge and how to release it."""
    parts = [f"seen by {', '.join(pick['seen_by'])}" if pick["seen_by"] else ""]
    if pick["escalated_by"]:
        parts.append(f"sent to the operator by {pick['escalated_by']}")
    if pick["settled_by"]:
        parts.append(f"settled by {pick['settled_by']}")
    if pick.get("confirmed_by"):
        parts.append(f"confirmed by {pick['confirmed_by']}")
    if not any(parts):
        waiting = "in review" if pick["reviews"] else "no review has carried it"
        parts.append(
            f"not seen by a second principal yet ({waiting}): it holds the unit's merge "
            f"until a reviewer sees it or the operator confirms it with loopbus decide "
            f"--unit {unit} --decision {pick['decision_id']} --confirm"
        )
    return "; ".join(p for p in parts if p)


def _keys(keys: list[str]) -> str:
    return ", ".join(keys) if keys else "-"
