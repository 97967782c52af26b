"""The investigator's decision and what its command's answer becomes. Pure: no I/O, no clock.

When a trigger reaches its second failure, the decision publishes one
``InvestigationRequested`` conditionally on the trigger's own subject being empty, so the
request exists at most once even with a restart or a second daemon in between. A request
with no completion on the log is an investigation to run (an effect of the shell): the
one investigation of a trigger is the one that completes, with one finding (class
``investigation``, never code) and its ``InvestigationCompleted``, atomically, with the
``GateProposed`` fact of the gate the report proposes, if it proposes one (a gate is a
memory of a mistake).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec

from projections import investigations as inv
from projections.intents import PublishBatch, PublishIf
from schemas import Actor, FindingRaised
from schemas.ids import answer_id
from schemas.ratchet import GateProposed
from schemas.reviews import (
    InvestigationCompleted,
    InvestigationReport,
    InvestigationRequested,
)
from schemas.targets import RecordTarget, Target
from workers.investigator.effects import Investigate, InvestigatorIntent
from workers.kernel import World

OWNERS = {"unit-failed": "operator", "trunk-red": "planner", "gate-error": "standards"}
"""Who an investigation's finding is routed to, by trigger kind: a unit failing twice is
the operator's to weigh, a trunk red twice on one interface is a contract question for
planning, and a gate erroring twice is the machinery's (standards)."""

_report = msgspec.json.Decoder(InvestigationReport)


def decide(world: World) -> list[InvestigatorIntent]:
    """Request every trigger due (each on its own empty subject) and run every request
    that has no completion yet."""
    state: inv.InvestigationsState = world.state("investigations")
    intents: list[InvestigatorIntent] = []
    for view in inv.due(state):
        request = InvestigationRequested(
            id=answer_id(view.failures[-1], f"investigation:{view.trigger}"),
            at=world.now,
            project=world.project,
            actor=world.actor,
            trigger=view.trigger,
            trigger_kind=view.kind,
            key=view.key,
            failures=list(view.failures),
            unit=view.unit,
            evidence={"failures": view.evidence},
        )
        # Nothing may be on the trigger's subject yet: that is what makes it one request.
        intents.append(PublishIf(request, 0))
    for view in inv.running(state):
        assert view.requested is not None
        # A copy: the fold goes on mutating its own.
        intents.append(Investigate(project=world.project, view=msgspec.structs.replace(view)))
    return intents


def parse_report(stdout: bytes) -> InvestigationReport | str:
    """The investigator's answer: a JSON report, or plain text taken as its summary."""
    text = stdout.strip()
    if not text:
        return "printed nothing; expected a JSON report or a plain-text summary"
    if text.startswith(b"{"):
        try:
            return _report.decode(text)
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            return f"wrong report schema: {exc}"
    summary = text.decode("utf-8", "replace")
    return InvestigationReport(summary=summary[:8000])


def document(view: inv.TriggerView) -> dict[str, Any]:
    """What the investigator command reads on stdin."""
    return {
        "trigger": view.trigger,
        "kind": view.kind,
        "unit": view.unit,
        "failures": view.evidence,
    }


def completion(
    project: str,
    view: inv.TriggerView,
    answer: InvestigationReport | str,
    *,
    actor: Actor,
    now: datetime,
) -> PublishBatch:
    """The finding the answer becomes (a report, or why there is none) and the completion."""
    assert view.requested is not None
    linked: Target = RecordTarget(id=view.failures[-1] if view.failures else view.requested)
    evidence: dict[str, Any] = {
        "trigger": view.trigger,
        "investigation": view.requested,
        "failures": list(view.failures),
    }
    common: dict[str, Any] = {
        "id": answer_id(view.requested, "investigation-finding"),
        "at": now,
        "project": project,
        "actor": actor,
        "producer": "meta_rule",  # the second-failure rule; the producers are closed
        "unit": view.unit,
    }
    if isinstance(answer, str):
        finding = FindingRaised(
            **common,
            target=linked,
            severity="medium",
            criterion="investigation-failed",
            cls="meta",
            message=f"the investigation of {view.trigger} produced no report: {answer}",
            evidence={**evidence, "reason": answer},
            owner="standards",
        )
    else:
        finding = FindingRaised(
            **common,
            target=answer.target or linked,
            severity=answer.severity,
            criterion=answer.criterion or view.kind,
            cls="investigation",
            message=answer.summary,
            evidence={**answer.evidence, **evidence},
            owner=OWNERS[view.kind],
        )
    proposed = (
        () if isinstance(answer, str) else proposal(project, view, answer, finding.id, actor, now)
    )
    completed = InvestigationCompleted(
        id=answer_id(view.requested, "investigation-completed"),
        at=now,
        project=project,
        actor=actor,
        request=view.requested,
        trigger=view.trigger,
        key=view.key,
        finding=finding.id,
        outcome="error" if isinstance(answer, str) else "finding",
        cause=view.requested,
    )
    return PublishBatch((finding, *proposed, completed))


def proposal(
    project: str,
    view: inv.TriggerView,
    report: InvestigationReport,
    finding: str,
    actor: Actor,
    now: datetime,
) -> tuple[GateProposed, ...]:
    """The proposal of the gate the report names (none when it names none).

    A fact the ratchet daemon settles as a draft claim against the gate's state, not a
    move: a proposal for a gate that already exists is refused there instead of sending
    it back to Drafted (where it would stop blocking)."""
    if report.gate is None:
        return ()
    assert view.requested is not None
    gate = report.gate
    return (
        GateProposed(
            id=answer_id(view.requested, "investigation-gate"),
            at=now,
            project=project,
            actor=actor,
            gate=gate.gate,
            check=gate.check,
            defect=gate.defect,
            investigation=view.requested,
            finding=finding,
            why=f"investigation {view.requested} of {view.trigger}: {report.summary}"[:2000],
        ),
    )
