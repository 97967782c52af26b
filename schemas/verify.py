"""Code-cold verification of a wave, and the SHIP verdict a slice closes with.

After every unit of a wave has merged, the verifier daemon (``workers/verifier``) runs the
``[verify] command`` through the agent runner with a :class:`VerifyBrief` on stdin: the
slice's criteria, the charter's objectives, trunk's commit at the wave's end and how to
start the increment. The brief has no field for a diff, a builder's summary or a review:
the verifier judges the running result against what was asked, never the builders' account
of it. It prints a :class:`VerifierEnvelope`; the system records what it said as a
:class:`WaveVerified` fact, each of its findings as a blocking ``FindingRaised``.

When the slice closes, the dispatcher judges SHIP (:class:`SliceShipJudged`): shipped, or
not shipped with every reason.
"""

from typing import Literal

import msgspec

from schemas.envelope import EventBase
from schemas.ids import Token
from schemas.scores import AxisScore

VERIFY_CRITERION = "verify"
"""The criterion of every finding the verifier raises (its own check id goes in evidence)."""


# -- the brief and the envelope (stdin and stdout of the verify command) -------------------


class BriefCriterion(msgspec.Struct, frozen=True, kw_only=True):
    """A criterion the slice's units claim, with the charter's words for it (when any)."""

    id: str
    text: str = ""
    units: list[str] = []


class BriefObjective(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    text: str


class BriefBoot(msgspec.Struct, frozen=True, kw_only=True):
    """How to start the increment: trunk's ``boot`` check (empty when it declares none)."""

    check: str = "boot"
    command: str = ""


class VerifyBrief(msgspec.Struct, frozen=True, kw_only=True):
    """What the verify command reads on stdin (JSON). Deliberately code-cold: the plan's
    words (unit titles, criteria), the charter's objectives, trunk and how to boot it —
    never a diff, a builder's summary or a review."""

    project: str
    slice: str
    wave: int
    units: list[str]
    """The wave's units (ids only: their titles are the planner's, kept in ``titles``)."""
    titles: dict[str, str] = {}
    criteria: list[BriefCriterion] = []
    objectives: list[BriefObjective] = []
    trunk: str = ""
    """Trunk's commit at the wave's end: the tree the command's working directory holds."""
    boot: BriefBoot = BriefBoot()


class VerifierFinding(msgspec.Struct, frozen=True, kw_only=True):
    """Something the increment does that the criteria say it must not (or fails to do)."""

    message: str
    severity: Literal["medium", "high", "critical"] = "high"
    check: str = ""
    """The acceptance check that showed it (the verifier's own id)."""
    unit: str | None = None
    """The unit it points to, when the verifier can tell (it never saw the diffs)."""


class AcceptanceCheck(msgspec.Struct, frozen=True, kw_only=True):
    """A check the verifier wrote and ran on trunk, and whether it passed."""

    id: str
    command: str
    passed: bool
    criterion: str = ""


class VerifierEnvelope(msgspec.Struct, frozen=True, kw_only=True):
    """What the verify command prints (JSON)."""

    findings: list[VerifierFinding] = []
    scores: list[AxisScore] = []
    unreached: list[str] = []
    """What it could not reach (a criterion it found no way to exercise, a service down)."""
    checks: list[AcceptanceCheck] = []
    summary: str = ""


# -- facts ---------------------------------------------------------------------------------


class WaveVerified(EventBase, frozen=True, kw_only=True, tag="verify.wave_verified.v1"):
    """The verifier's run on one wave of a slice, as the system recorded it.

    ``error`` says why nothing could be verified (the command failed, printed no envelope):
    then the wave counts as unverified. ``findings`` are the ids of the blocking findings
    raised with it, in the same batch."""

    slice: Token
    accepted: str
    """The plan acceptance it belongs to (a re-planned slice is verified again)."""
    wave: int
    trunk: str = ""
    scores: list[AxisScore] = []
    unreached: list[str] = []
    checks: list[AcceptanceCheck] = []
    findings: list[str] = []
    summary: str = ""
    error: str = ""

    def subject_suffix(self) -> str:
        return f"verify.{self.slice}"


class SliceShipJudged(EventBase, frozen=True, kw_only=True, tag="verify.ship_judged.v1"):
    """The SHIP predicate, judged by the dispatcher once a slice closed: ``shipped`` only
    when no reason stands against it; ``reasons`` says each one in words."""

    slice: Token
    accepted: str
    shipped: bool
    reasons: list[str] = []
    closed: str = ""
    """The ``SliceClosed`` it judges."""

    def subject_suffix(self) -> str:
        return f"verify.{self.slice}"
