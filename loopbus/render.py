"""How events and projection states look to a person (and as JSON to a program)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from loopbus import ship_render, slice_render
from loopbus.charter_render import render_charter
from loopbus.contract_render import render_contracts
from loopbus.event_line import Palette as Palette
from loopbus.event_line import record_json as record_json
from loopbus.lease_render import render_leases
from loopbus.lessons_render import render_lessons
from loopbus.merges_status import render_merges
from loopbus.planner_render import render_planner
from loopbus.terminal_text import one_line
from loopbus.units_status import render_units
from loopbus.verify_render import render_verify, render_wave_review
from projections import blocking as blocking_fold
from projections import convergence as convergence_fold
from projections import decisions as decisions_fold
from projections import finding_lifecycle, to_builtins
from projections import findings as findings_fold
from projections import gates as gates_fold
from projections import integrity as integrity_fold
from projections import investigations as investigations_fold
from projections import ratchet as ratchet_fold
from projections import reviews as reviews_fold

# -- projection states ------------------------------------------------------------------

StateRenderer = Callable[..., list[str]]
"""``renderer(state, sizes=...)``: ``sizes`` maps a collection's field path to how many
entries it holds, when the state shows only some of them (``status`` pages big ones)."""

Sizes = Mapping[str, int]
_NONE: Sizes = {}


def render_findings(state: findings_fold.FindingsState, sizes: Sizes = _NONE) -> list[str]:
    open_findings = findings_fold.open_findings(state)
    total = sizes.get("open", len(open_findings))
    lines = [f"open findings: {total} (closed: {state.resolved}, resolved or dismissed)"]
    for f in open_findings:
        scope = f.unit or "project"
        seen = f" x{f.times}" if f.times > 1 else ""
        criterion = f" [{f.criterion}]" if f.criterion else ""
        lines.append(
            f"  {scope}: {f.severity} {f.producer} {f.cls} {f.target}{criterion}{seen}: "
            f"{f.message} (id {f.id})"
        )
    return lines


def render_gates(state: gates_fold.GatesState, sizes: Sizes = _NONE) -> list[str]:
    cached = sizes.get("cache", len(state.cache))
    keys = sizes.get("keys", len(state.keys))
    refused = sizes.get("refused", len(state.refused))
    lines = [
        f"gates: {state.results} results recorded ({state.errors} errors), "
        f"{cached} cached, {keys} runner keys, {refused} results refused"
    ]
    lines += [f"  refused {key}: {refusal}" for key, refusal in list(state.refused.items())[:5]]
    return lines


def render_convergence(state: convergence_fold.ConvergenceState, sizes: Sizes = _NONE) -> list[str]:
    if not state.units:
        return ["convergence: no rounds yet"]
    lines = [f"convergence: {sizes.get('units', len(state.units))} units with rounds"]
    for unit, view in state.units.items():
        last = view.rounds[-1] if view.rounds else None
        verdict = f"round {last.round} {last.convergence}" if last else "no round closed"
        ended = f", ended by {last.ended_by}" if last and last.ended_by else ""
        lines.append(f"  {unit}: {verdict}{ended}; rung {view.rung} ({view.tactic})")
    return lines


def render_reviews(state: reviews_fold.ReviewsState, sizes: Sizes = _NONE) -> list[str]:
    requests = list(state.requests.values())
    lines = [
        f"reviews: {sizes.get('requests', len(requests))} requested, "
        f"{sizes.get('open', len(state.open))} open, "
        f"{sum(state.rounds.values())} rounds closed"
    ]
    for unit, request_id in sorted(state.open.items()):
        request = state.requests.get(request_id)
        if request is None:
            continue  # not among the requests read (status shows a page of them)
        lines.append(
            f"  {unit}: round {request.round} with {request.reviewer} on {request.head[:12]}"
        )
    return lines


def render_investigations(
    state: investigations_fold.InvestigationsState, sizes: Sizes = _NONE
) -> list[str]:
    triggers = list(state.triggers.values())
    done = sum(1 for t in triggers if t.completed)
    total = sizes.get("triggers", len(triggers))
    lines = [f"investigations: {total} triggers, {done} investigated"]
    for view in triggers:
        if view.requested and not view.completed:
            where = f" ({view.unit})" if view.unit else ""
            lines.append(f"  open: {view.kind}{where} after {len(view.failures)} failures")
    return lines


def render_lifecycle(
    state: finding_lifecycle.FindingLifecycleState, sizes: Sizes = _NONE
) -> list[str]:
    lives = sorted(state.lives.values(), key=lambda life: life.finding)
    settled = sizes.get("lives", len(lives))
    lines = [f"finding lifecycle: {settled} settled by a claim, {len(state.pending)} claimed"]
    lines += [f"  {finding_lifecycle.describe(life)}" for life in lives]
    lines += [
        f"  claimed: {c.action} {c.finding} by {c.by} (awaiting the ratchet daemon)"
        for c in state.pending.values()
    ]
    return lines


def render_decisions(state: decisions_fold.DecisionsState, sizes: Sizes = _NONE) -> list[str]:
    force = decisions_fold.in_force(state)
    lines = [f"decisions: {len(state.decisions)} recorded, {len(force)} in force"]
    for found in force:
        record = found.record
        briefed = f"; briefed {', '.join(found.briefed)}" if found.briefed else ""
        lines.append(f"  {record.id}: {record.question} -> {record.chosen}{briefed}")
    return lines


def render_integrity(state: integrity_fold.IntegrityState, sizes: Sizes = _NONE) -> list[str]:
    kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(state.by_kind.items()))
    return [
        f"integrity: {state.forged} forgeries"
        + (f" ({kinds})" if kinds else "")
        + f", {state.reported} named in a finding, {len(state.unreported)} not yet"
    ]


def render_ratchet(state: ratchet_fold.RatchetState, sizes: Sizes = _NONE) -> list[str]:
    lines = [f"ratchet: {sizes.get('gates', len(state.gates))} gates moved on the log"]
    for name, view in sorted(state.gates.items()):
        notes = [
            *(["advisory"] if view.advisory else []),
            *([f"awaits the {view.owner}"] if view.owner else []),
            *([f"review every {view.review_every}"] if view.review_every else []),
            *([f"catches: {view.defect}"] if view.defect else []),
        ]
        lines.append(f"  {name}: {view.state}" + (f" ({'; '.join(notes)})" if notes else ""))
    return lines


def render_blocking(state: blocking_fold.BlockingState, sizes: Sizes = _NONE) -> list[str]:
    held = blocking_fold.open_blocks(state)
    lines = [f"blocked-by-fact: {len(held)} open of {len(state.findings)}"]
    for found in held:
        about = f"plan:{found.slice}" if found.slice else f"decision:{found.decision}"
        holding = ", ".join(found.reached) or "no unit yet"
        lines.append(f"  {found.finding} {about}: {found.message} (holding {holding})")
    return lines


def render_builds(state: Any, sizes: Sizes = _NONE) -> list[str]:
    """Units owing a builder round, and decisions waiting on the operator (counted over the
    page of units the view was read with; the total comes from ``sizes``)."""
    owing = [u for u, b in state.units.items() if b.owes_round()]
    waiting = [f"{u}:{d}" for u, b in state.units.items() for d in b.awaiting]
    recorded = sum(len(b.decisions) for b in state.units.values())
    picks = [(u, p) for u, b in state.units.items() for p in b.picks.values()]
    unseen = [(u, p.decision_id) for u, p in picks if p.unseen()]
    lines = [
        f"builds: {sizes.get('units', len(state.units))} units dispatched, "
        f"{len(owing)} owing a round" + (f" ({', '.join(owing)})" if owing else ""),
        f"  decisions: {recorded} recorded, {len(waiting)} waiting on the operator"
        + (f" ({', '.join(waiting)})" if waiting else ""),
        f"  auto-picked: {len(picks)}, {len(unseen)} not seen by a second principal yet"
        + (f" ({', '.join(f'{u}:{d}' for u, d in unseen)})" if unseen else ""),
    ]
    if unseen:
        unit, decision = unseen[0]
        lines.append(
            "    a unit with an unseen auto pick does not merge until a reviewer sees it or "
            f"the operator confirms it: loopbus decide --unit {unit} --decision {decision} "
            "--confirm"
        )
    return lines


RENDERERS: dict[str, StateRenderer] = {
    "units": render_units,
    "findings": render_findings,
    "slices": slice_render.render_slices,
    "budgets": slice_render.render_budgets,
    "merges": render_merges,
    "gates": render_gates,
    "convergence": render_convergence,
    "reviews": render_reviews,
    "investigations": render_investigations,
    "finding_lifecycle": render_lifecycle,
    "decisions": render_decisions,
    "blocking": render_blocking,
    "integrity": render_integrity,
    "ratchet": render_ratchet,
    "builds": render_builds,
    "charter": render_charter,
    "contract_landing": render_contracts,
    "planner": render_planner,
    "leases": render_leases,
    "risk": ship_render.render_risk,
    "shipping": ship_render.render_shipping,
    "lessons": render_lessons,
    "verify": render_verify,
    "wave_review": render_wave_review,
}
"""projection name -> renderer; a projection without one is shown as JSON."""


WITH_SLICES = frozenset({"verify", "wave_review"})
"""Renderers that also take the ``slices`` state: what a slice still waits for is judged
over its units."""


def render_state(
    name: str, state: Any, sizes: Sizes = _NONE, states: Mapping[str, Any] | None = None
) -> list[str]:
    """``name``'s state as lines, every one safe for a terminal (:func:`one_line`): the
    renderers interpolate what agents wrote (messages, questions, reasons, paths).
    ``states`` (every projection's, as ``status`` or ``replay`` holds them) gives the
    renderers of :data:`WITH_SLICES` the slices."""
    renderer = RENDERERS.get(name)
    if renderer is not None:
        context = {"slices": (states or {}).get("slices")} if name in WITH_SLICES else {}
        return [one_line(line) for line in renderer(state, sizes=sizes, **context)]
    import json

    body = json.dumps(to_builtins(state), indent=2, default=str)
    return [f"{name}:"] + ["  " + line for line in body.splitlines()]
