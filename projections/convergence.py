"""The ``convergence`` projection: each unit's rounds, how they compare, and its rung.

Rounds are compared on finding keys ``target|severity|criterion`` (see
``schemas.findings.finding_key``). Comparing round n with round n+1:

=========================================================  ===========
round n+1 against round n                                  verdict
=========================================================  ===========
fewer findings and no blocking key that n did not have      converging
otherwise, the same blocking set                            stalled
otherwise (same size with a different set, or the set       thrashing
grew, or a new blocking key came with fewer findings)
=========================================================  ===========

The rules are applied in that order, so each pair of rounds gets exactly one verdict.
The first round of a unit has nothing to compare with (``first``).

What the system does after a failing round (:func:`decide`), in order:

1. a halt condition (security finding, secret, frozen artifact) halts at once (rung 5);
2. the round passed (review approved, nothing blocking left) -> ``approved``;
3. the no-progress guard: the same failure signature or the same diff digest as the
   round before promotes the unit one rung (it never stops it); promotion past rung 4
   means the ladder is spent and the unit halts;
4. otherwise ``stalled`` or ``thrashing`` stops the unit (``progress-test``);
5. a round that would continue but has reached the ceiling (default 6) stops the unit
   (``ceiling``), so the outcome always says which of the two ended it.

Pure: the daemon and this fold call the same functions.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

import msgspec
from loopbus.projections.base import Fold
from loopbus.schemas import Event, UnitTransitioned
from loopbus.schemas.reviews import (
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

DEFAULT_CEILING = 6
HALT_RUNG = 5

RUNGS: dict[int, tuple[str, str]] = {
    1: ("repair", "fix the reported findings where they are"),
    2: ("diagnose", "reproduce the failure and find its root cause before editing"),
    3: ("rework", "take a different approach to the same contract"),
    4: ("narrow", "cut the change to the smallest part that meets the failing criteria"),
    5: ("halted", "the ladder is spent or a halt condition hit: a person decides"),
}
"""Rung -> (tactic, what it asks of the builder). Rungs 3 and 4 change how, never what:
the acceptance criteria are frozen on every rung."""

SEVERITY_RANK: dict[str, int] = {"info": 0, "low": 1, "medium": 2, "high": 3, "critical": 4}
DEFAULT_BLOCKING = "medium"


def tactic(rung: int) -> str:
    return RUNGS[min(max(rung, 1), HALT_RUNG)][0]


def is_blocking(severity: str, threshold: str = DEFAULT_BLOCKING) -> bool:
    """A finding blocks when its severity is at or above the project's threshold."""
    return SEVERITY_RANK.get(severity, 0) >= SEVERITY_RANK[threshold]


def classify(
    previous: frozenset[str],
    previous_blocking: frozenset[str],
    current: frozenset[str],
    current_blocking: frozenset[str],
) -> Convergence:
    """Compare round n (``previous``) with round n+1 (``current``); see the module table."""
    if len(current) < len(previous) and current_blocking <= previous_blocking:
        return "converging"
    if current_blocking == previous_blocking:
        return "stalled"
    return "thrashing"


def failure_signature(failing_checks: Iterable[str], keys: Iterable[str]) -> str:
    """sha256 over the sorted failing checks and finding keys of a round."""
    text = "checks:" + "\n".join(sorted(set(failing_checks)))
    text += "\nkeys:" + "\n".join(sorted(set(keys)))
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class RoundFacts:
    """What one round established, before the system decides what to do about it."""

    keys: frozenset[str]
    blocking: frozenset[str]
    signature: str
    diff_digest: str
    passed: bool
    halt: str | None = None


@dataclass(frozen=True, slots=True)
class RoundDecision:
    convergence: Convergence
    action: RoundAction
    ended_by: EndedBy | None
    rung: int
    """The rung the unit is on after this round."""
    why: str


def decide(
    previous: RoundFacts | None,
    current: RoundFacts,
    *,
    round_no: int,
    rung: int,
    ceiling: int = DEFAULT_CEILING,
) -> RoundDecision:
    """What the system does after round ``round_no`` of a unit on ``rung``."""
    if previous is None:
        convergence: Convergence = "first"
    else:
        convergence = classify(previous.keys, previous.blocking, current.keys, current.blocking)
    if current.halt is not None:
        return RoundDecision(convergence, "halted", "halted", HALT_RUNG, current.halt)
    if current.passed:
        return RoundDecision(convergence, "approved", None, rung, "nothing blocking is left")
    action: RoundAction = "continue"
    ended_by: EndedBy | None = None
    next_rung = rung
    why = f"{convergence}: continue on rung {rung} ({tactic(rung)})"
    repeat = _repeat(previous, current)
    if repeat is not None:
        next_rung = rung + 1
        if next_rung >= HALT_RUNG:
            return RoundDecision(
                convergence, "halted", "halted", HALT_RUNG, f"{repeat} on rung {rung}: ladder spent"
            )
        action = "promoted"
        why = f"{repeat}: rung {rung} is finished, promoted to {next_rung} ({tactic(next_rung)})"
    elif convergence in ("stalled", "thrashing"):
        return RoundDecision(convergence, "stopped", "progress-test", rung, f"{convergence}")
    if round_no >= ceiling:
        return RoundDecision(
            convergence, "stopped", "ceiling", rung, f"round {round_no} reached the ceiling"
        )
    return RoundDecision(convergence, action, ended_by, next_rung, why)


def _repeat(previous: RoundFacts | None, current: RoundFacts) -> str | None:
    if previous is None or previous.passed:
        return None
    if current.signature == previous.signature:
        return "identical failure signature"
    if current.diff_digest == previous.diff_digest:
        return "identical diff"
    return None


# -- the fold ---------------------------------------------------------------------------


class RoundView(msgspec.Struct, kw_only=True):
    """One closed round as the log has it."""

    round: int
    head: str
    source: str
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
        case UnitTransitioned(outcome=outcome) if outcome is not None:
            ended = state.units.get(event.unit)
            if ended is not None:
                ended.outcome = outcome.summary
                match outcome.ended_by:
                    case "progress-test" | "ceiling" | "halted" as ended_by:
                        ended.ended_by = ended_by
                    case _:
                        pass
        case _:
            pass
    return state


FOLD = Fold(name="convergence", state_type=ConvergenceState, initial=initial, apply=apply)


# -- queries ----------------------------------------------------------------------------


def unit_view(state: ConvergenceState, unit: str) -> UnitConvergence | None:
    return state.units.get(unit)


def brief(state: ConvergenceState, unit: str) -> dict[str, object]:
    """What the next builder brief carries from review: the rung, its tactic and ask."""
    view = state.units.get(unit)
    rung = view.rung if view is not None else 1
    name, ask = RUNGS[min(rung, HALT_RUNG)]
    last = view.rounds[-1] if view is not None and view.rounds else None
    return {
        "rung": rung,
        "tactic": name,
        "ask": ask,
        "open_keys": list(last.finding_keys) if last is not None else [],
    }
