"""What a builder round's answer becomes on the log: claims for the unit, facts for the rest.

Pure: the shell (:mod:`.daemon`) ran the command and made the commit; these functions
turn the envelope (or the reason there is none) into intents. Every id is derived from
the round's trigger, so a round repeated after a crash publishes the same ids and the
log keeps one copy.

* ``completed`` / ``partial`` -> a usage report, then the commit report (the adapter made
  the commit); one that left the worktree as it found it is no failure: it spends a rung
  of the ladder (``round.unchanged.v1`` and the ``rung.promoted.v1`` it names) and the next
  round's brief says so in ``problem``; on the last rung the ladder is spent and the unit
  halts (:mod:`.decide`);
* ``blocked`` / ``scope_breach`` -> a finding for the operator and a BLOCKED claim
  awaiting it; ``needs_dependency`` -> BLOCKED awaiting the sibling unit it names;
* ``failed`` -> gave-up with the summary;
* novel decisions -> one request each, with its autonomy class (:mod:`.autonomy`); in
  ``long`` mode, for a class the project's ``[build] autonomy`` allows and a builder that
  is not unsure, also the decision, recorded at once (the round runs again with it; the
  next review sees it); otherwise a finding for the operator and BLOCKED awaiting it.
"""

from __future__ import annotations

from dataclasses import dataclass

from projections.intents import PublishBatch, Publishing
from projections.round_rules import HALT_RUNG, tactic
from schemas import Actor, Event, FindingRaised
from schemas.builds import BuildEnvelope, NovelDecision
from schemas.decisions import (
    STATED_WEIGHT,
    DecisionRecorded,
    DecisionRequested,
    option_ids,
)
from schemas.ids import answer_id
from schemas.reports import BlockedReport, CommitReport, GaveUpReport
from schemas.reviews import RoundUnchanged, RungPromoted
from schemas.slices import UsageReport
from schemas.targets import DecisionTarget, RecordTarget
from workers.agents.breaches import AgentRun
from workers.agents.config import BuildConfig
from workers.builder.autonomy import Classified, classify, may_pick_alone


@dataclass(frozen=True)
class Round:
    """Who answers for which round: the project, unit, trigger, and both actors."""

    project: str
    unit: str
    slice: str
    trigger: str
    system: Actor
    builder: Actor
    number: int = 1
    """The round's number (the brief's ``round``)."""
    rung: int = 1
    """The rung the round ran on (the brief's ``rung``)."""

    def id(self, salt: str) -> str:
        return answer_id(self.trigger, salt)

    def agent_run(self) -> AgentRun:
        """The round as an agent run (what its sandbox breach findings name)."""
        return AgentRun(
            project=self.project,
            system=self.system,
            role="builder",
            answers=self.trigger,
            principal=self.builder.principal,
            unit=self.unit,
            slice=self.slice,
        )


def problem_finding(round_: Round, message: str, *, salt: str) -> FindingRaised:
    """A builder run that gave no valid envelope (or could not run), as a finding."""
    return FindingRaised(
        id=round_.id(salt),
        project=round_.project,
        actor=round_.system,
        producer="builder",
        target=RecordTarget(id=round_.trigger),
        severity="medium",
        criterion="builder-envelope",
        cls="builder-failure",
        message=f"builder {round_.builder.principal} on unit {round_.unit}: {message}",
        unit=round_.unit,
        slice=round_.slice or None,
        owner=f"builder:{round_.unit}",
    )


def gave_up(round_: Round, why: str) -> GaveUpReport:
    return GaveUpReport(
        id=round_.id("gave-up"),
        project=round_.project,
        actor=round_.builder,
        unit=round_.unit,
        why=why,
    )


def failed_twice(round_: Round, first: str, second: str) -> Publishing:
    """The retry failed too: both problems on the log, then the unit gives up."""
    events: tuple[Event, ...] = (
        problem_finding(round_, first, salt="problem-1"),
        problem_finding(round_, second, salt="problem-2"),
        gave_up(round_, f"no valid answer after a retry: {second}"),
    )
    return PublishBatch(events)


def answered(
    round_: Round,
    envelope: BuildEnvelope,
    config: BuildConfig,
    *,
    sha: str | None,
    first_problem: str | None = None,
) -> list[Publishing]:
    """The intents a valid envelope warrants (``sha``: the commit the adapter made)."""
    events: list[Event] = []
    if first_problem is not None:
        events.append(problem_finding(round_, first_problem, salt="problem-1"))
    if envelope.tokens:
        events.append(
            UsageReport(
                id=round_.id("usage"),
                project=round_.project,
                actor=round_.builder,
                unit=round_.unit,
                tokens_out=envelope.tokens,
            )
        )
    if envelope.novel_decisions:
        events.extend(_decisions(round_, envelope.novel_decisions, config))
        return [PublishBatch(tuple(events))]
    status = envelope.status
    summary = envelope.summary.strip() or f"the builder answered {status}"
    if status in ("completed", "partial"):
        if sha is None:
            events.extend(unchanged(round_, status, envelope.summary.strip()))
        else:
            events.append(
                CommitReport(
                    id=round_.id("commit"),
                    project=round_.project,
                    actor=round_.builder,
                    unit=round_.unit,
                    sha=sha,
                )
            )
    elif status == "needs_dependency":
        events.append(_blocked(round_, "awaiting-dependency", envelope.subject.strip()))
    elif status in ("blocked", "scope_breach"):
        finding = _operator_finding(round_, f"{status}: {summary}", salt=status)
        events.extend([finding, _blocked(round_, "awaiting-operator", finding.id)])
    else:
        events.append(gave_up(round_, summary))
    return [PublishBatch(tuple(events))]


def unchanged(round_: Round, status: str, summary: str) -> list[Event]:
    """A round that changed nothing spends its rung: the fact, and the promotion it names."""
    to_rung = min(round_.rung + 1, HALT_RUNG)
    fact = RoundUnchanged(
        id=round_.id("unchanged"),
        project=round_.project,
        actor=round_.system,
        unit=round_.unit,
        round=round_.number,
        rung=round_.rung,
        to_rung=to_rung,
        status=status,
        summary=summary,
        trigger=round_.trigger,
    )
    spent = "; the ladder is spent" if to_rung >= HALT_RUNG else ""
    promoted = RungPromoted(
        id=round_.id("unchanged-rung"),
        project=round_.project,
        actor=round_.system,
        unit=round_.unit,
        from_rung=round_.rung,
        to_rung=to_rung,
        tactic=tactic(to_rung),
        why=f"round {round_.number} answered {status} and changed nothing{spent}",
        cause=fact.id,
    )
    return [fact, promoted]


def _blocked(round_: Round, reason: str, subject: str) -> BlockedReport:
    return BlockedReport(
        id=round_.id("blocked"),
        project=round_.project,
        actor=round_.builder,
        unit=round_.unit,
        reason=reason,
        subject=subject,
    )


def _operator_finding(
    round_: Round, message: str, *, salt: str, decision: str | None = None
) -> FindingRaised:
    return FindingRaised(
        id=round_.id(salt),
        project=round_.project,
        actor=round_.system,
        producer="builder",
        target=DecisionTarget(decision=decision) if decision else RecordTarget(id=round_.trigger),
        severity="high",
        criterion=f"decision:{decision}" if decision else "builder-blocked",
        cls="decision-needed" if decision else "builder-failure",
        message=f"unit {round_.unit}: {message}",
        unit=round_.unit,
        slice=round_.slice or None,
        owner="operator",
    )


def routed_to_operator(
    decision: NovelDecision, classified: Classified, config: BuildConfig
) -> bool:
    """Only ``long`` mode decides by itself, and only what the project's autonomy allows:
    a class outside it, or a builder unsure of its answer, waits on the operator."""
    if config.mode != "long":
        return True
    return not may_pick_alone(classified, decision.confidence, config.autonomy)


def _decisions(round_: Round, decisions: list[NovelDecision], config: BuildConfig) -> list[Event]:
    events: list[Event] = []
    block: str | None = None
    for decision in decisions:
        salt = f"decision:{decision.decision_id}"
        classified = classify(decision)
        request = dict(
            id=round_.id(salt),
            project=round_.project,
            actor=round_.system,
            unit=round_.unit,
            decision_id=decision.decision_id,
            question=decision.question,
            options=decision.options,
            recommended_default=decision.recommended_default,
            confidence=decision.confidence,
            reasoning=decision.reasoning,
            autonomy=classified.autonomy,
            stated_autonomy=classified.stated,
            classified=classified.why,
        )
        if routed_to_operator(decision, classified, config):
            finding = _operator_finding(
                round_,
                f"decision {decision.decision_id} needs the operator: {decision.question} "
                f"(class {classified.autonomy}, recommended: {decision.recommended_default}, "
                f"confidence {decision.confidence}); loopbus decide --unit {round_.unit} "
                f"--decision {decision.decision_id} --choose OPTION",
                salt=f"{salt}:finding",
                decision=decision.decision_id,
            )
            events.append(finding)
            events.append(DecisionRequested(**request, routed="operator", finding=finding.id))  # type: ignore[arg-type]
            block = block or finding.id
        else:
            asked = DecisionRequested(**request, routed="auto")  # type: ignore[arg-type]
            events.append(asked)
            events.append(
                DecisionRecorded(
                    id=round_.id(f"{salt}:recorded"),
                    project=round_.project,
                    actor=round_.system,
                    unit=round_.unit,
                    decision_id=decision.decision_id,
                    question=decision.question,
                    options=option_ids(decision.options),
                    trade_offs=decision.options,
                    chosen=decision.recommended_default,
                    owner="auto",
                    confidence=STATED_WEIGHT[decision.confidence],
                    stated_confidence=decision.confidence,
                    rationale=decision.reasoning or "long mode takes the recommended default",
                    cause=asked.id,
                )
            )
    if block is not None:
        events.append(_blocked(round_, "awaiting-operator", block))
    return events
