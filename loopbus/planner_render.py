"""Where planning stands, for ``status`` (lines) and the operator page (a document): the
slice being planned, the latest proposal and what became of it, this round's refused tries
with their first reason, reconnaissance (when, how many facts, its error) and the run's
allowance. Pure: read from the ``planner`` projection only.
"""

from __future__ import annotations

from typing import Any

from projections import planner as planner_fold
from projections.planner import PlannerState, Proposal

REASON_CHARS = 200
"""A refused try is shown by its first reason, cut: the log holds every reason in full."""


def proposal_status(state: PlannerState, proposal: Proposal) -> str:
    """``awaiting approval``, ``approved``, ``submitted`` or ``accepted``."""
    if proposal.submitted:
        return "accepted" if state.slices.get(proposal.slice) in ("open", "closed") else "submitted"
    if proposal.autonomy != "full" and proposal.approved is None:
        return "awaiting approval"
    return "approved"


def _latest(state: PlannerState) -> Proposal | None:
    """The proposal of the highest slice (the planner asks for S1, S2 … in turn)."""

    def order(p: Proposal) -> tuple[int, int]:
        number = p.slice[1:]
        return (int(number) if number.isdigit() else 0, p.attempt)

    return max(state.proposals.values(), key=order, default=None)


def _cut(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= REASON_CHARS else line[: REASON_CHARS - 1] + "…"


def _stopped(state: PlannerState) -> str:
    if planner_fold.capped(state):
        return "capped"
    return "gave up" if planner_fold.gave_up(state) else ""


def planner_doc(state: PlannerState) -> dict[str, Any]:
    """The page's document (and ``status``'s source): empty ``run`` when no charter ran."""
    proposal = _latest(state)
    recon = state.recon
    return {
        "run": state.charter_approved,
        "planning": planner_fold.planning(state),
        "running": sorted(s for s, status in state.slices.items() if status == "open"),
        "proposal": None
        if proposal is None
        else {
            "id": proposal.id,
            "slice": proposal.slice,
            "attempt": proposal.attempt,
            "units": len(proposal.plan.units),
            "status": proposal_status(state, proposal),
        },
        "refused": [
            {
                "slice": a.slice,
                "attempt": a.attempt,
                "reason": _cut(a.problems[0]) if a.problems else "",
                "reasons": len(a.problems),
            }
            for a in state.attempts
        ],
        "recon": None
        if recon is None
        else {
            "at": recon.at.isoformat(),
            "facts": len(recon.facts),
            "error": _cut(recon.error) if recon.error else "",
            "invalidated": len(planner_fold.stale_recon(state)),
        },
        "allowance": {"answers": state.run_tries, "recon_runs": state.recon_runs},
        "stopped": _stopped(state),
    }


def planner_lines(doc: dict[str, Any]) -> list[str]:
    """The document as ``status`` lines (the page shows the same lines)."""
    if not doc["run"]:
        return []
    lines = ["planner:"]
    if doc["stopped"]:
        lines.append(f"  stopped: {doc['stopped']} (an open finding to the operator says why)")
    if doc["planning"]:
        lines.append(f"  planning: {doc['planning']}")
    elif doc["running"]:
        lines.append(f"  planning: nothing while {', '.join(doc['running'])} runs")
    proposal = doc["proposal"]
    if proposal is not None:
        line = (
            f"  proposal: {proposal['slice']} try {proposal['attempt']}, "
            f"{proposal['units']} units — {proposal['status']}"
        )
        if proposal["status"] == "awaiting approval":
            line += f" (loopbus approve --plan {proposal['slice']} --why …)"
        lines.append(line)
    for refused in doc["refused"]:
        more = refused["reasons"] - 1
        lines.append(
            f"  refused: {refused['slice']} try {refused['attempt']}: {refused['reason']}"
            + (f" (+{more} more reasons)" if more > 0 else "")
        )
    recon = doc["recon"]
    if recon is None:
        lines.append("  reconnaissance: not run")
    else:
        line = f"  reconnaissance: ran {recon['at']}, {recon['facts']} facts"
        if recon["error"]:
            line += f", error: {recon['error']}"
        if recon["invalidated"]:
            line += f", {recon['invalidated']} said false (re-runs before the next plan)"
        lines.append(line)
    allowance = doc["allowance"]
    lines.append(
        f"  this run: {allowance['answers']} planner answers, "
        f"{allowance['recon_runs']} reconnaissance runs"
    )
    return lines


def render_planner(state: PlannerState, sizes: Any = None) -> list[str]:
    """``status``'s block (one line for a project no charter ever ran)."""
    del sizes
    return planner_lines(planner_doc(state)) or ["planner: idle (no charter has run)"]
