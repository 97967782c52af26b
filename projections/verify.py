"""The ``verify`` projection: which waves of a slice were verified code-cold, what the
verifier said, which of its findings are open, and the SHIP verdicts.

A wave is *merged* when every unit of it (all its sub-waves) is settled and at least one
is done: something reached trunk for the verifier to look at. A wave whose units all
failed brought nothing to verify. With verification configured, the dispatcher holds
the next wave's dispatches until the merged wave before it is recorded
(:func:`dispatch_held`), so trunk at the wave's end is the tree the verifier saw, and holds
the slice's close while a merged wave is unrecorded or a verifier finding is open
(:func:`close_held`).

Only the system's facts count: a ``WaveVerified`` (a fact kind, so never a forgery here),
and a finding raised by the system as producer ``trunk_gate`` with criterion ``verify``.
"""

import msgspec

from projections.base import Fold
from projections.lifecycle import Status, settled_as
from projections.slice_dispatch import is_settled
from projections.slices import SliceView
from schemas import Event, FindingRaised, FindingResolved
from schemas.lifecycle import FindingDismissed, FindingReopened
from schemas.reviews import ReviewVerdict, VerdictAccepted
from schemas.scores import AxisScore
from schemas.verify import VERIFY_CRITERION, SliceShipJudged, WaveVerified

FindingStatus = Status


class VerifierFindingState(msgspec.Struct, kw_only=True):
    id: str
    slice: str
    accepted: str
    wave: int
    message: str
    unit: str | None = None
    status: FindingStatus = "open"


class VerifyState(msgspec.Struct, kw_only=True):
    waves: dict[str, WaveVerified] = {}
    """``accepted:wave`` -> the verifier's recorded run on that wave."""
    findings: dict[str, VerifierFindingState] = {}
    judged: dict[str, SliceShipJudged] = {}
    """accepted -> the SHIP verdict of the slice it accepted."""
    reviewed: dict[str, list[AxisScore]] = {}
    """unit -> the scores of the latest verdict the system accepted on it."""
    verdict_scores: dict[str, list[AxisScore]] = {}
    """verdict claim id -> its scores, until the system accepts it (or never)."""


def initial() -> VerifyState:
    return VerifyState()


def wave_key(accepted: str, wave: int) -> str:
    return f"{accepted}:{wave}"


def is_verifier_finding(event: FindingRaised) -> bool:
    return (
        event.actor.role == "system"
        and event.producer == "trunk_gate"
        and event.criterion == VERIFY_CRITERION
        and isinstance(event.evidence.get("accepted"), str)
    )


def apply(state: VerifyState, event: Event) -> VerifyState:
    match event:
        case WaveVerified():
            state.waves.setdefault(wave_key(event.accepted, event.wave), event)
        case FindingRaised() if is_verifier_finding(event) and event.slice is not None:
            wave = event.evidence.get("wave")
            state.findings.setdefault(
                event.id,
                VerifierFindingState(
                    id=event.id,
                    slice=event.slice,
                    accepted=str(event.evidence["accepted"]),
                    wave=wave if isinstance(wave, int) else 0,
                    message=event.message,
                    unit=event.unit,
                ),
            )
        # Only the system settles a finding (the ratchet daemon answering an operator's
        # claim): the same facts from any other credential are forgeries and change nothing.
        case FindingResolved() | FindingDismissed() | FindingReopened() if (
            event.actor.role == "system" and event.finding in state.findings
        ):
            state.findings[event.finding].status = settled_as(event)
        case SliceShipJudged() if event.actor.role == "system":
            state.judged.setdefault(event.accepted, event)
        case ReviewVerdict() if event.actor.role == "reviewer":
            state.verdict_scores.setdefault(event.id, list(event.scores))
        case VerdictAccepted():
            # Only the verdict the system accepted for the unit's review counts: any other
            # reviewer principal's claim on the unit never sets its scores.
            state.reviewed[event.unit] = state.verdict_scores.pop(event.verdict, [])
        case _:
            pass
    return state


FOLD = Fold(name="verify", state_type=VerifyState, initial=initial, apply=apply)


# -- queries ----------------------------------------------------------------------------


def wave_units(view: SliceView, wave: int) -> list[str]:
    """Every unit of ``wave`` (all its sub-waves), in dispatch order."""
    return [u for group in view.waves[wave] for u in group]


def merged_waves(view: SliceView) -> list[int]:
    """Waves whose units are all settled with at least one done, in order."""
    return [
        w
        for w in range(len(view.waves))
        if all(is_settled(view, u) for u in wave_units(view, w))
        and any(view.units[u].state == "done" for u in wave_units(view, w))
    ]


def to_verify(state: VerifyState, view: SliceView) -> int | None:
    """The first merged wave of an open slice not yet recorded (``None``: nothing owed)."""
    if view.status != "open":
        return None
    for w in merged_waves(view):
        if wave_key(view.accepted, w) not in state.waves:
            return w
    return None


def dispatch_held(state: VerifyState, view: SliceView, wave: int) -> bool:
    """A unit of ``wave`` waits while an earlier merged wave is not verified yet."""
    pending = to_verify(state, view)
    return pending is not None and pending < wave


def open_findings(state: VerifyState, accepted: str) -> list[VerifierFindingState]:
    return [f for f in state.findings.values() if f.accepted == accepted and f.status == "open"]


def close_held(state: VerifyState, view: SliceView) -> str:
    """Why the slice may not close yet (``""``: it may): a merged wave awaits its
    verification, or a verifier finding is open."""
    pending = to_verify(state, view)
    if pending is not None:
        return f"wave {pending} awaits the verifier"
    found = open_findings(state, view.accepted)
    if found:
        return f"verifier finding {found[0].id} is open"
    return ""


def recorded(state: VerifyState, accepted: str) -> list[WaveVerified]:
    """The verifier's runs on the slice accepted as ``accepted``, by wave."""
    runs = [v for v in state.waves.values() if v.accepted == accepted]
    return sorted(runs, key=lambda v: v.wave)
