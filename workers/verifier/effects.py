"""The verifier daemon's effects: what its decisions ask its shell to do.

* :class:`VerifyWave` runs the ``[verify] command`` on trunk with a wave's code-cold brief;
* :class:`ReviewWave` runs the ``[review] command`` on a merged wave's union diff;
* :class:`ReReviewUnit` runs it again on one unit's own diff, which a wave review re-opened.

Each key names the accepted plan and the wave (and the unit), so each runs once per wave.
"""

from __future__ import annotations

from typing import TypeAlias

from projections.intents import Effect, IntentOf
from projections.wave_review import WaveToReview
from schemas.verify import VerifyBrief
from schemas.wave_review import WaveReviewed

VERIFY = "verify-wave"
"""The key prefix of :class:`VerifyWave`."""
WAVE_REVIEW = "review-wave"
"""The key prefix of :class:`ReviewWave`."""
REREVIEW = "unit-rereview"
"""The key prefix of :class:`ReReviewUnit`."""


class VerifyWave(Effect, frozen=True, tag="verifier.verify_wave.v1"):
    """Verify wave ``brief.wave`` of the plan accepted as ``accepted``, code-cold."""

    brief: VerifyBrief
    accepted: str

    @property
    def key(self) -> str:
        return f"{VERIFY}:{self.accepted}:{self.brief.wave}"


class ReviewWave(Effect, frozen=True, tag="verifier.review_wave.v1"):
    """Review the union diff ``owed`` describes (a merged wave of ``slice``), against the
    slice's ``criteria``."""

    slice: str
    accepted: str
    owed: WaveToReview
    criteria: list[str]

    @property
    def key(self) -> str:
        return f"{WAVE_REVIEW}:{self.accepted}:{self.owed.wave}"


class ReReviewUnit(Effect, frozen=True, tag="verifier.rereview_unit.v1"):
    """Review ``unit``'s own diff (``base``..``merge`` on trunk) again, answering the wave
    review's findings ``answers`` (their ``messages``) on it."""

    accepted: str
    review: WaveReviewed
    unit: str
    merge: str
    base: str
    criteria: list[str]
    answers: list[str]
    messages: list[str]

    @property
    def key(self) -> str:
        return f"{REREVIEW}:{self.accepted}:{self.review.wave}:{self.unit}"


VerifierEffect = VerifyWave | ReviewWave | ReReviewUnit
"""Every effect the verifier daemon asks for."""

VerifierIntent: TypeAlias = IntentOf[VerifierEffect]
"""What the verifier may ask for (``decide``, ``perform``): publishing, and its own effects."""
