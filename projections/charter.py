"""The ``charter`` projection: the charter in force, the one awaiting approval, and the run.

A charter awaits approval from an operator's submission until a ``charter.approved`` fact
starts its run (a newer submission replaces the one awaiting). The run is the approved
charter's: the slices accepted after its approval, the tokens builders reported since,
the criteria the last ``run.criteria_checked`` found held on trunk, and whether it checked
in, is finalizing or ended. A run fact counts only when it names the current run (the id of
the approval that started it), so a fact about a superseded run changes nothing.

Two questions the other daemons ask, as pure functions of the view:

* :func:`planning_allowed` — may a planner plan the next slice (a run in progress whose
  criteria do not all hold yet)?
* :func:`dispatch_hold` — must the dispatcher hold every unit (a charter awaits approval,
  or the run ended)? A project that never had a charter is never held: hand-written plans
  work as they always did.
"""

from datetime import datetime

import msgspec

from projections.base import Fold
from projections.planner import submission_id
from schemas import Event, FindingRaised
from schemas.authority import refused_claim
from schemas.charter import (
    Charter,
    CharterApprove,
    CharterApproved,
    CharterSubmission,
    EndReason,
    RunCheckedIn,
    RunCriteriaChecked,
    RunCriteriaPinned,
    RunEnded,
    RunFinalizing,
    RunState,
    RunStop,
)
from schemas.planning import PlanProposed, SkeletonApprove
from schemas.slices import (
    SliceClosed,
    SlicePlanAccepted,
    SlicePlanDiscarded,
    UsageReport,
)


class RunView(msgspec.Struct, kw_only=True):
    """The charter and its run, as the log says."""

    charter: Charter | None = None
    """The approved charter in force."""
    awaiting: Charter | None = None
    """A submitted charter not approved yet."""
    awaiting_submission: str = ""
    """The id of the submission that carries ``awaiting``."""
    state: RunState = "none"
    run: str = ""
    """The id of the ``charter.approved`` fact that started the run in force."""
    approved_at: datetime | None = None
    approved_by: str = ""
    superseded: tuple[str, ...] = ()
    """Ids of charters approved before the one in force, oldest first."""
    pinned_trunk: str = ""
    """Trunk's commit at approval: where criteria the approval could not pin are read."""
    pins: dict[str, str] = {}
    """criterion id -> the digest it is pinned to (a test's function, a check's definition)."""
    unpinned: dict[str, str] = {}
    """criterion id -> why nothing pins it (it never holds)."""
    pinning: bool = False
    """Some criteria wait for their ``run.criteria_pinned`` fact."""
    pin_cause: str = ""
    """The skeleton approval that asked for the pinning in wait (empty: the approval's)."""
    skeletons: frozenset[str] = frozenset()
    """Skeleton slices accepted under the charter."""
    skeleton_closed: dict[str, str] = {}
    """Skeleton slice -> the trunk commit its closing boot check ran on (what the operator
    reviews): closed by ``slice.closed``, not discarded."""
    skeleton_reviewed: frozenset[str] = frozenset()
    """Skeleton slices whose first operator approval asked for a pinning."""
    skeleton_commit: str = ""
    """The commit the pinning in wait for a reviewed skeleton reads."""
    criteria_trunk: str = ""
    criteria_cause: str = ""
    """The trunk gate run (``merge.candidate_tested`` id) the last judgement read."""
    held: frozenset[str] = frozenset()
    failing: frozenset[str] = frozenset()
    criteria_detail: dict[str, str] = {}
    met: bool = False
    slices: tuple[str, ...] = ()
    """Slices accepted under the charter, in order."""
    closed: tuple[str, ...] = ()
    """Those of them closed (or discarded) since."""
    tokens: int = 0
    units: frozenset[str] = frozenset()
    """Units of the slices accepted under the charter: only their builders' usage counts."""
    checked_in: bool = False
    finalizing: bool = False
    finalizing_detail: str = ""
    ended: EndReason | None = None
    ended_detail: str = ""
    ended_at: datetime | None = None
    """When the run ended (its wall clock stops there)."""
    proposed: frozenset[str] = frozenset()
    """Ids of the plan submissions the planner daemon proposed (``plan.proposed.v1``, a
    system fact): while a charter is in force, the only planner submissions that stand."""
    approvals: dict[str, CharterApprove] = {}
    """Operators' approve claims not answered yet (by an approval or a refusal)."""
    stops: dict[str, RunStop] = {}
    """Operators' stop claims not answered yet."""


def initial() -> RunView:
    return RunView()


def _state(view: RunView) -> RunState:
    if view.awaiting is not None:
        return "awaiting-approval"
    if view.charter is None:
        return "none"
    if view.ended is not None:
        return "ended"
    return "finalizing" if view.finalizing else "running"


def _current(view: RunView, run: str) -> bool:
    return bool(view.run) and run == view.run


def apply(view: RunView, event: Event) -> RunView:
    match event:
        case CharterSubmission():
            view.awaiting = event.charter
            view.awaiting_submission = event.id
        case CharterApprove():
            view.approvals[event.id] = event
        case RunStop():
            if view.charter is not None and view.ended is None:
                view.stops[event.id] = event
        case CharterApproved():
            _start(view, event)
        case RunCriteriaPinned() if (
            _current(view, event.run) and view.pinning and event.cause == view.pin_cause
        ):
            view.pins = {**view.pins, **event.pins}
            view.unpinned = dict(event.unpinned)
            view.pinning = False
        case RunCriteriaChecked() if _current(view, event.run):
            assert view.charter is not None
            view.criteria_trunk = event.trunk
            view.criteria_cause = event.cause
            view.held = frozenset(event.held)
            view.failing = frozenset(event.failing)
            view.criteria_detail = dict(event.detail)
            wanted = set(view.charter.criterion_ids)
            view.met = bool(wanted) and wanted <= view.held
        case RunCheckedIn() if _current(view, event.run):
            view.checked_in = True
        case RunFinalizing() if _current(view, event.run):
            view.finalizing = True
            view.finalizing_detail = event.detail
        case PlanProposed():
            view.proposed = view.proposed | {event.submission or submission_id(event.id)}
        case RunEnded() if _current(view, event.run):
            view.ended = event.reason
            view.ended_detail = event.detail
            view.ended_at = event.at
            # A stop asked before the end is answered by it, whatever the reason.
            view.stops.clear()
        case SlicePlanAccepted() if view.charter is not None and view.ended is None:
            if event.plan.slice not in view.slices:
                view.slices = (*view.slices, event.plan.slice)
                view.units = view.units | {u.id for u in event.plan.units}
                if event.plan.skeleton:
                    view.skeletons = view.skeletons | {event.plan.slice}
        case SkeletonApprove() if (
            event.actor.role == "operator"
            and view.ended is None
            and event.slice in view.skeleton_closed
            and event.slice not in view.skeleton_reviewed
            and view.unpinned
            and not view.pinning
        ):
            # The operator reviewed what the skeleton wrote: the criteria its tests define
            # on the trunk it closed on are pinned as they are there (the charter daemon
            # reads them). Only the first approval of a skeleton pins.
            view.pinning = True
            view.pin_cause = event.id
            view.skeleton_commit = view.skeleton_closed[event.slice]
            view.skeleton_reviewed = view.skeleton_reviewed | {event.slice}
        case SliceClosed() | SlicePlanDiscarded() if event.slice in view.slices:
            if event.slice not in view.closed:
                view.closed = (*view.closed, event.slice)
                if isinstance(event, SliceClosed) and event.slice in view.skeletons:
                    view.skeleton_closed = {
                        **view.skeleton_closed,
                        event.slice: event.boot.commit or "",
                    }
        case UsageReport() if view.charter is not None and view.ended is None:
            # Any role may report usage: only a builder's (or the system's) for a unit of
            # this run counts, and no one report may claim more than any model run could,
            # so an agent can neither end the run on its budget nor spend another's.
            if (
                event.actor.role in USAGE_ROLES
                and event.unit in view.units
                and event.tokens <= MAX_REPORTED_TOKENS
            ):
                view.tokens += event.tokens
        case FindingRaised():
            claim = refused_claim(event)
            if claim is not None:
                view.approvals.pop(claim, None)
                view.stops.pop(claim, None)
        case _:
            return view
    view.state = _state(view)
    return view


USAGE_ROLES = frozenset({"builder", "system"})
MAX_REPORTED_TOKENS = 10**9
"""A usage report above this is ignored: no single round of a model spends a billion."""


def _start(view: RunView, event: CharterApproved) -> None:
    if view.charter is not None:
        view.superseded = (*view.superseded, view.charter.id)
    view.charter = event.charter
    view.run = event.id
    view.approved_at = event.at
    view.approved_by = event.by
    if event.claim is not None:
        view.approvals.pop(event.claim, None)
    # The approval answers the submission it names (or, naming none, the one awaiting);
    # a newer submission made meanwhile still awaits its own approval.
    if event.submission is None or event.submission == view.awaiting_submission:
        view.awaiting = None
        view.awaiting_submission = ""
    view.pinned_trunk = event.trunk
    view.pins = dict(event.pins)
    view.unpinned = {}
    view.pinning = any(c.id not in event.pins for c in event.charter.criteria)
    view.pin_cause = ""
    view.skeletons = frozenset()
    view.skeleton_closed = {}
    view.skeleton_reviewed = frozenset()
    view.skeleton_commit = ""
    # A new run starts from nothing: its own criteria, slices, spend and end.
    view.criteria_trunk = ""
    view.criteria_cause = ""
    view.held = frozenset()
    view.failing = frozenset()
    view.criteria_detail = {}
    view.met = False
    view.slices = ()
    view.closed = ()
    view.tokens = 0
    view.units = frozenset()
    view.checked_in = False
    view.finalizing = False
    view.finalizing_detail = ""
    view.ended = None
    view.ended_detail = ""
    view.stops = {}


def planning_allowed(view: RunView) -> bool:
    """A planner may plan the next slice: a run is in progress and not yet met."""
    return view.state == "running" and not view.met


def dispatch_hold(view: RunView) -> str:
    """Why the dispatcher must dispatch nothing now, or ``""`` when it may proceed."""
    if view.awaiting is not None:
        return f"charter {view.awaiting.id!r} awaits an operator's approval"
    if view.charter is not None and view.ended is not None:
        return f"the run of charter {view.charter.id!r} ended ({view.ended})"
    return ""


def open_slices(view: RunView) -> tuple[str, ...]:
    """Slices accepted under the charter and not closed yet."""
    return tuple(s for s in view.slices if s not in view.closed)


def criteria_summary(view: RunView) -> str:
    """``2 of 3 criteria hold on trunk abc1234`` (or that none was judged yet)."""
    if view.charter is None:
        return "no charter in force"
    total = len(view.charter.criteria)
    if not view.criteria_trunk:
        return f"0 of {total} criteria judged yet"
    wanted = set(view.charter.criterion_ids)
    return f"{len(wanted & view.held)} of {total} criteria hold on trunk {view.criteria_trunk[:7]}"


FOLD = Fold(name="charter", state_type=RunView, initial=initial, apply=apply)
