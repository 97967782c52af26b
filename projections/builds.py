"""The ``builds`` projection: which units owe a builder round, and the decisions around them.

A unit owes a round when something asked for work since the builder last answered:

* its dispatch (``unit.dispatched``),
* a red gate suite for its head (the units daemon makes no transition for a red suite on
  a unit that was not ready, so this fold reads the suite itself),
* a ``returned`` transition (a review rejected it, its merge conflicted or turned trunk red;
  a conflict is kept as the unit's ``collision``, which makes the round on that head a
  merge of trunk into it),
* a decision recorded for it (the builder runs again with the decision in its brief),
* an ``unblocked`` transition (what it waited on arrived: the operator answered, the
  sibling unit is done),
* a round that changed nothing (``round.unchanged.v1``: the next round is on the next
  rung, told so in its brief's ``problem``),
* a ``retried`` transition (the dispatcher tried the failed unit again on the next rung).

That event is the unit's *trigger*. A builder's commit, blocked or gave-up claim on the
unit answers the trigger it follows; a round whose builder asked a novel decision is
answered by the decision request. So "a round is owed" is derived from the log alone,
and a restarted builder daemon runs exactly the rounds still owed.

Who may settle a decision: only the system records one (a ``decision.recorded`` claim is
the ratchet's to judge, never a unit's decision), and only an operator's choice answers
one routed to the operator (another role's is a forgery no fold sees; the role test here
says so again where the choice is used).

Every decision ``long`` mode picked alone is an *auto pick*: it goes into the input of
the unit's next review (the picks not yet seen are attached to the ``review.requested``
fact that follows), is *seen* by the reviewer whose verdict on that request the system
accepts, and may be sent to the operator by that reviewer (a ``decision.requested`` fact
with ``escalated_by``), which re-opens it as an operator decision. An operator may also
confirm an auto pick nothing waits on (a ``decision.choice`` of the option it picked).
Until a reviewer has seen it, a reviewer has escalated it, an operator's record has
replaced it or an operator has confirmed it, a pick is *unseen*, and the merger does not
merge its unit (:func:`unseen_picks`).
"""

import msgspec

from projections.base import Fold
from projections.round_rules import HALT_RUNG
from schemas import Event, UnitTransitioned
from schemas.builds import AutonomyClass, Confidence
from schemas.decisions import DecisionChoice, DecisionRecorded, DecisionRequested
from schemas.gates import GateSuiteCompleted
from schemas.merges import MergeConflicted
from schemas.reports import BlockedReport, CommitReport, GaveUpReport, StartedReport
from schemas.reviews import ReviewRequested, RoundUnchanged, VerdictAccepted
from schemas.slices import RetryDecided, UnitDispatched

AUTO = "auto"
"""The owner of a decision ``long`` mode picked alone."""
CHOOSERS = frozenset({"operator"})
"""The roles whose choice answers a decision routed to the operator."""


class AutoPick(msgspec.Struct, kw_only=True):
    """A decision ``long`` mode picked alone, and which second principal has seen it."""

    decision_id: str
    record: str
    """The ``decision.recorded`` fact (owner ``auto``)."""
    question: str
    chosen: str
    options: list[str] = []
    rationale: str = ""
    autonomy: AutonomyClass | None = None
    stated_confidence: Confidence | None = None
    reviews: list[str] = []
    """The review requests whose input carried it."""
    seen_by: list[str] = []
    """``reviewer:<principal>`` of each accepted verdict on one of those requests."""
    escalated_by: str | None = None
    """The reviewer who sent it to the operator."""
    settled_by: str | None = None
    """The owner of the decision that replaced it (``operator:<principal>``)."""
    confirmed_by: str | None = None
    """``operator:<principal>`` of the operator who confirmed it (a ``decision.choice`` of
    the option it picked: ``loopbus decide --confirm``)."""

    def unseen(self) -> bool:
        """No second principal has seen it: the unit it was picked for does not merge."""
        return (
            not self.seen_by
            and self.escalated_by is None
            and self.settled_by is None
            and self.confirmed_by is None
        )


class Collision(msgspec.Struct, kw_only=True):
    """The unit's head collided with trunk (a ``merge.conflicted`` fact): the builder's
    next round on that head starts from the merge of trunk into it."""

    fact: str
    finding: str
    """The ``merge-conflict`` finding the merger raised."""
    head: str
    trunk: str
    """The trunk commit the head collided with."""


TRIGGER_KINDS = (
    "dispatched",
    "gates-red",
    "returned",
    "decided",
    "unblocked",
    "unchanged",
    "retried",
)


class UnitBuild(msgspec.Struct, kw_only=True):
    """What the builder side knows about one unit."""

    unit: str
    slice: str = ""
    base: str | None = None
    """The trunk commit it was (last) dispatched on."""
    design_ref: str | None = None
    head: str | None = None
    """The unit's head as the system accepted it (from its transitions)."""
    trigger: str | None = None
    trigger_kind: str = ""
    answered: str | None = None
    """The trigger the builder last answered."""
    started_for: str | None = None
    """The dispatch a builder's started report followed."""
    rounds: int = 0
    """Commits the builder submitted (the next round is ``rounds + 1``)."""
    red_suite: str | None = None
    """The last red suite for the head (its failing checks are findings in the brief)."""
    asked: dict[str, int] = {}
    """Decision id -> how many times a builder returned it."""
    awaiting: dict[str, DecisionRequested] = {}
    """Decisions routed to the operator and not recorded yet."""
    choices: list[DecisionChoice] = []
    """Operator choices not turned into a recorded decision yet."""
    decisions: dict[str, DecisionRecorded] = {}
    """Decisions in force, by id."""
    decided_findings: list[str] = []
    """The findings of operator decisions since recorded (the unit may wait on one)."""
    picks: dict[str, AutoPick] = {}
    """Decisions ``long`` mode picked alone, by decision id (the latest per id)."""
    auto_asked: dict[str, DecisionRequested] = {}
    """Auto-routed requests whose record has not arrived yet, by request id."""
    collision: Collision | None = None
    """The latest merge conflict of one of its heads (it concerns the round only while
    that head is the unit's)."""
    note: str = ""
    """What the next brief's ``problem`` tells the builder about the unit's last round:
    it changed nothing, or the unit failed and is tried again. Cleared by a commit."""
    spent: str | None = None
    """A round that changed nothing on the last rung (``round.unchanged.v1``): the ladder
    is spent and the unit halts."""
    told_from: int = 0
    told_to: int = 0
    """``BuildsState.superseded[told_from:]`` were superseded since the round before the
    one it owes (``told_to``: the length when its current trigger came)."""

    def owes_round(self) -> bool:
        return self.trigger is not None and self.trigger != self.answered


class BuildsState(msgspec.Struct):
    units: dict[str, UnitBuild] = {}
    superseded: list[str] = []
    """Every decision the system's records superseded, in log order (the brief tells a
    unit those bearing on it since its last round)."""


def initial() -> BuildsState:
    return BuildsState()


def _unit(state: BuildsState, unit: str) -> UnitBuild:
    view = state.units.get(unit)
    if view is None:
        view = state.units[unit] = UnitBuild(unit=unit)
    return view


def _trigger(state: BuildsState, view: UnitBuild, event_id: str, kind: str) -> None:
    # What was superseded since the round before this one is what its brief tells (a
    # first round has no round before it: it is told nothing).
    view.told_from = view.told_to if view.trigger is not None else len(state.superseded)
    view.told_to = len(state.superseded)
    view.trigger, view.trigger_kind = event_id, kind


def apply(state: BuildsState, event: Event) -> BuildsState:
    if (
        isinstance(event, DecisionRecorded)
        and event.actor.role == "system"
        and event.supersedes is not None
        and event.supersedes not in state.superseded
    ):
        state.superseded.append(event.supersedes)
    match event:
        case UnitDispatched(unit=unit):
            view = _unit(state, unit)
            view.slice, view.base, view.design_ref = event.slice, event.base, event.design_ref
            _trigger(state, view, event.id, "dispatched")
        case UnitTransitioned(unit=unit) if event.unit in state.units:
            view = state.units[unit]
            if event.commit is not None:
                view.head = event.commit
            if event.by in ("returned", "unblocked", "retried"):
                _trigger(state, view, event.id, event.by)
        case GateSuiteCompleted(unit=unit) if unit in state.units and event.reason == "unit":
            view = state.units[unit]
            if event.outcome != "pass" and event.commit is not None and event.commit == view.head:
                view.red_suite = event.id
                _trigger(state, view, event.id, "gates-red")
        case RoundUnchanged(unit=unit) if unit in state.units:
            _unchanged(state, state.units[unit], event)
        case RetryDecided(unit=unit) if unit in state.units and event.retry:
            view = state.units[unit]
            view.note = f"the unit failed and is tried again on rung {event.to_rung}: {event.why}"
        case StartedReport(unit=unit) if event.actor.role == "builder" and unit in state.units:
            view = state.units[unit]
            view.started_for = view.trigger
        case CommitReport() | BlockedReport() | GaveUpReport() if event.actor.role == "builder":
            answering = state.units.get(event.unit)
            if answering is not None:
                answering.answered = answering.trigger
                if isinstance(event, CommitReport):
                    answering.rounds += 1
                    answering.note = ""
        case DecisionRequested(unit=unit) if unit in state.units and event.escalated_by:
            # A reviewer re-opened an auto pick: not the builder asking again, and no round.
            view = state.units[unit]
            view.awaiting[event.decision_id] = event
            pick = view.picks.get(event.decision_id)
            if pick is not None:
                pick.escalated_by = event.escalated_by
        case DecisionRequested(unit=unit) if unit in state.units:
            view = state.units[unit]
            view.asked[event.decision_id] = view.asked.get(event.decision_id, 0) + 1
            view.answered = view.trigger
            if event.routed == "operator":
                view.awaiting[event.decision_id] = event
            else:
                view.auto_asked[event.id] = event
        case MergeConflicted(unit=unit) if unit in state.units:
            state.units[unit].collision = Collision(
                fact=event.id, finding=event.finding, head=event.head, trunk=event.base
            )
        case DecisionChoice(unit=unit) if unit in state.units and event.actor.role in CHOOSERS:
            _chosen(state.units[unit], event)
        case DecisionRecorded(unit=str(unit), decision_id=str(key)) if (
            unit in state.units and event.actor.role == "system"
        ):
            _recorded(state, state.units[unit], key, event)
        case ReviewRequested(unit=unit) if unit in state.units:
            for pick in state.units[unit].picks.values():
                if pick.unseen() and event.id not in pick.reviews:
                    pick.reviews.append(event.id)
        case VerdictAccepted(unit=unit) if unit in state.units:
            seer = f"reviewer:{event.reviewer}"
            for pick in state.units[unit].picks.values():
                if event.request in pick.reviews and seer not in pick.seen_by:
                    pick.seen_by.append(seer)
        case _:
            pass
    return state


def _chosen(view: UnitBuild, choice: DecisionChoice) -> None:
    """An operator's choice: the answer to a decision waiting on the operator, or, for an
    auto pick nothing waits on, its confirmation when it takes the option picked."""
    pick = view.picks.get(choice.decision_id)
    confirms = pick is not None and choice.choose == pick.chosen
    if pick is not None and confirms and choice.decision_id not in view.awaiting:
        pick.confirmed_by = pick.confirmed_by or f"operator:{choice.actor.principal}"
        return
    view.choices.append(choice)


def _unchanged(state: BuildsState, view: UnitBuild, event: RoundUnchanged) -> None:
    """A round that changed nothing answers its trigger and spends a rung: the next round
    (the fact is its trigger) is told so, unless the ladder is spent."""
    if event.trigger != view.trigger:
        return  # a newer trigger came meanwhile: the unit owes that round anyway
    view.answered = view.trigger
    summary = f" ({event.summary})" if event.summary else ""
    view.note = (
        f"your last round changed nothing: it answered {event.status}{summary} but left the "
        f"worktree as it found it, so rung {event.rung} is spent; this round is on rung "
        f"{event.to_rung}. Change the files the findings and criteria ask for, or answer "
        "blocked or failed and say why."
    )
    if event.to_rung >= HALT_RUNG:
        view.spent = event.id
    else:
        _trigger(state, view, event.id, "unchanged")


def _recorded(state: BuildsState, view: UnitBuild, key: str, event: DecisionRecorded) -> None:
    view.decisions[key] = event
    asked = view.awaiting.pop(key, None)
    if asked is not None and asked.finding:
        view.decided_findings.append(asked.finding)
    view.choices = [c for c in view.choices if c.decision_id != key]
    request = view.auto_asked.pop(event.cause, None) if event.cause else None
    if event.owner == AUTO:
        view.picks[key] = AutoPick(
            decision_id=key,
            record=event.id,
            question=event.question,
            chosen=event.chosen,
            options=list(event.options),
            rationale=event.rationale,
            autonomy=request.autonomy if request is not None else None,
            stated_confidence=event.stated_confidence,
        )
    elif key in view.picks:
        view.picks[key].settled_by = event.owner
    _trigger(state, view, event.id, "decided")


def unseen_picks(state: BuildsState, unit: str) -> list[AutoPick]:
    """The unit's auto picks no second principal has seen: while there is one, the merger
    does not merge the unit (docs/decisions.md)."""
    view = state.units.get(unit)
    return [p for p in view.picks.values() if p.unseen()] if view is not None else []


def review_input(view: UnitBuild, request: str) -> list[AutoPick]:
    """The auto picks the review ``request`` carries (what its reviewer may escalate)."""
    return [pick for pick in view.picks.values() if request in pick.reviews]


FOLD = Fold(name="builds", state_type=BuildsState, initial=initial, apply=apply)
