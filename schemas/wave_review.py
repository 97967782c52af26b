"""The wave-aggregate review: one review of a wave's union diff, after all its units merged.

Two units can each be right and make a wrong whole; a unit's own review never sees the
other. So, once a wave has merged, the ``[review] command`` is run once more on the diff
from trunk before the wave's first merge to trunk after its last, with each file's hunks
attributed to the unit whose merge commit changed that file, and asked to judge it along
the floor axes plus the axes the trigger table adds from what the diff shows.

A finding on a file one unit changed re-opens that unit: its own diff is reviewed again
(:class:`UnitReReviewed`), not the wave.
"""

from typing import Literal

import msgspec

from schemas.envelope import EventBase
from schemas.ids import Token

WAVE_REVIEW_CRITERION = "wave-review"
"""The criterion of every finding the wave review raises."""

FLOOR_AXES: tuple[str, ...] = ("correctness", "simplification", "security", "performance")
"""What every wave review is asked to judge; no trigger removes one."""


class Trigger(msgspec.Struct, frozen=True, kw_only=True):
    """A row of the trigger table that fired: the axis it adds and what in the diff
    established it."""

    row: str
    axis: str
    why: str


class WaveReviewed(EventBase, frozen=True, kw_only=True, tag="review.wave_reviewed.v1"):
    """The review of ``wave``'s union diff (``base``..``head``) as the system recorded it.

    ``attribution`` maps each changed file to the unit whose merge changed it (``""``: no
    unit of the wave, or more than one); ``findings`` are the ids raised with it;
    ``reopened`` the units a finding pointed to. ``error`` says why no review was had."""

    slice: Token
    accepted: str
    wave: int
    base: str = ""
    head: str = ""
    axes: list[str] = []
    triggers: list[Trigger] = []
    attribution: dict[str, str] = {}
    verdict: Literal["approve", "reject", ""] = ""
    findings: list[str] = []
    reopened: list[str] = []
    error: str = ""

    def subject_suffix(self) -> str:
        return f"verify.{self.slice}"


class UnitReReviewed(EventBase, frozen=True, kw_only=True, tag="review.unit_rereviewed.v1"):
    """A unit re-opened by the wave review had its own diff (``base``..``merge``) reviewed
    again. ``answers`` are the wave-review findings this re-review settles: resolved when it
    approves, left open (the slice then does not close) when it rejects."""

    slice: Token
    accepted: str
    wave: int
    unit: Token
    base: str = ""
    merge: str = ""
    verdict: Literal["approve", "reject", ""] = ""
    answers: list[str] = []
    summary: str = ""
    error: str = ""

    def subject_suffix(self) -> str:
        return f"verify.{self.slice}"
