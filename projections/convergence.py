"""The ``convergence`` projection: each unit's review rounds, their verdicts, and its rung.

How rounds compare and what follows each (the ladder) are the rules in
:mod:`projections.round_rules`; this fold records what the system decided by them
(``RoundClosed``, ``RungPromoted``, retry decisions) and answers a builder brief's rung,
tactic and ask.
"""

from datetime import datetime

import msgspec

from projections.base import Fold
from projections.round_rules import RoundFacts, Source, ask, tactic
from schemas import Event, UnitTransitioned
from schemas.reviews import (
    Convergence,
    Decision,
    EndedBy,
    ReviewRequested,
    RoundAction,
    RoundClosed,
    RungPromoted,
    VerdictAccepted,
    VerdictRefused,
)
from schemas.slices import RetryDecided

# -- the fold ---------------------------------------------------------------------------


class RoundView(msgspec.Struct, kw_only=True):
    """One closed round as the log has it."""

    round: int
    head: str
    source: Source
    tree: str = ""
    finding_keys: list[str]
    blocking_keys: list[str]
    failing_checks: list[str] = []
    failure_signature: str
    diff_digest: str
    passed: bool
    convergence: Convergence
    action: RoundAction
    ended_by: EndedBy | None = None
    rung: int
    why: str = ""
    event: str
    at: datetime

    def facts(self) -> RoundFacts:
        return RoundFacts(
            keys=frozenset(self.finding_keys),
            blocking=frozenset(self.blocking_keys),
            signature=self.failure_signature,
            diff_digest=self.diff_digest,
            passed=self.passed,
            tree=self.tree,
            source=self.source,
        )


class Promotion(msgspec.Struct, kw_only=True):
    from_rung: int
    to_rung: int
    why: str
    round: int
    event: str


class UnitConvergence(msgspec.Struct, kw_only=True):
    """A unit's review history: rounds, rung, latest verdict, and what ended it."""

    unit: str
    rounds: list[RoundView] = []
    rung: int = 1
    tactic: str = "repair"
    promotions: list[Promotion] = []
    reviews: int = 0
    reviewer: str | None = None
    verdict: Decision | None = None
    refused: int = 0
    ended_by: EndedBy | None = None
    outcome: str | None = None
    """The summary of the unit's terminal outcome, when it has one."""
    retries: list[str] = []
    """What the dispatcher answered each retryable failure: "retried on rung k because
    ...", or why the unit stays failed."""

    def facts(self) -> list[RoundFacts]:
        """Every closed round's facts, oldest first (what the next round is judged on)."""
        return [r.facts() for r in self.rounds]


class ConvergenceState(msgspec.Struct):
    units: dict[str, UnitConvergence] = {}


def initial() -> ConvergenceState:
    return ConvergenceState()


def _unit(state: ConvergenceState, unit: str) -> UnitConvergence:
    view = state.units.get(unit)
    if view is None:
        view = state.units[unit] = UnitConvergence(unit=unit)
    return view


def apply(state: ConvergenceState, event: Event) -> ConvergenceState:
    match event:
        case ReviewRequested():
            view = _unit(state, event.unit)
            view.reviews += 1
            view.reviewer = event.reviewer
        case VerdictAccepted():
            _unit(state, event.unit).verdict = event.decision
        case VerdictRefused():
            _unit(state, event.unit).refused += 1
        case RoundClosed():
            view = _unit(state, event.unit)
            view.rounds.append(
                RoundView(
                    round=event.round,
                    head=event.head,
                    source=event.source,
                    tree=event.tree,
                    finding_keys=list(event.finding_keys),
                    blocking_keys=list(event.blocking_keys),
                    failing_checks=list(event.failing_checks),
                    failure_signature=event.failure_signature,
                    diff_digest=event.diff_digest,
                    passed=event.passed,
                    convergence=event.convergence,
                    action=event.action,
                    ended_by=event.ended_by,
                    rung=event.rung,
                    why=event.why,
                    event=event.id,
                    at=event.at,
                )
            )
            if event.ended_by is not None:
                view.ended_by = event.ended_by
        case RungPromoted():
            view = _unit(state, event.unit)
            view.promotions.append(
                Promotion(
                    from_rung=event.from_rung,
                    to_rung=event.to_rung,
                    why=event.why,
                    round=event.round,
                    event=event.id,
                )
            )
            view.rung = event.to_rung
            view.tactic = tactic(event.to_rung)
        case RetryDecided():
            _retry(_unit(state, event.unit), event)
        case UnitTransitioned(outcome=outcome) if outcome is not None:
            ended = state.units.get(event.unit)
            if ended is not None:
                ended.outcome = outcome.summary
                match outcome.ended_by:
                    case "progress-test" | "ceiling" | "halted" as ended_by:
                        ended.ended_by = ended_by
                    case _:
                        pass
        case UnitTransitioned(by="retried") if event.unit in state.units:
            revived = state.units[event.unit]  # back at work: what ended it no longer holds
            revived.ended_by = revived.outcome = None
        case _:
            pass
    return state


def _retry(view: UnitConvergence, event: RetryDecided) -> None:
    """A granted retry moves the unit up the ladder, as a promotion does; either answer is
    kept in words for ``status``."""
    view.retries.append(retry_text(event))
    if event.retry:
        view.promotions.append(
            Promotion(
                from_rung=event.from_rung,
                to_rung=event.to_rung,
                why=f"retried: {event.why}",
                round=len(view.rounds),
                event=event.id,
            )
        )
        view.rung = event.to_rung
        view.tactic = tactic(event.to_rung)


def retry_text(event: RetryDecided) -> str:
    """One line for a retry decision, as the record and ``status`` show it."""
    if event.retry:
        return f"retried on rung {event.to_rung} ({tactic(event.to_rung)}) because {event.why}"
    return f"not retried: {event.why}"


FOLD = Fold(name="convergence", state_type=ConvergenceState, initial=initial, apply=apply)


# -- queries ----------------------------------------------------------------------------


def unit_view(state: ConvergenceState, unit: str) -> UnitConvergence | None:
    return state.units.get(unit)


def brief(state: ConvergenceState, unit: str) -> dict[str, object]:
    """What the next builder brief carries from review: the rung, its tactic and ask."""
    view = state.units.get(unit)
    rung = view.rung if view is not None else 1
    last = view.rounds[-1] if view is not None and view.rounds else None
    return {
        "rung": rung,
        "tactic": tactic(rung),
        "ask": ask(rung),
        "open_keys": list(last.finding_keys) if last is not None else [],
    }
