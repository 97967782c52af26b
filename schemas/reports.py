"""Unit reports: what a builder (or an operator on its behalf) claims about its unit.

A report is a claim, never a fact. It goes on ``report.<role>.<unit>`` and changes
nothing by itself: the ``units`` daemon validates it against the units projection and
answers with the transition it warrants or with a ``refused-transition`` finding. Every
answer carries the report id (``cause`` on a transition, ``evidence.report`` on a
refusal), which is how a restarted daemon knows what it already answered.

The fields a claim carries are deliberately loose (a blocked report may name an empty
subject or an unknown reason): a malformed *claim* must reach the daemon so that it can
be refused with a finding that says why, rather than vanish into quarantine.

Heartbeats are the exception to "everything goes on the log": liveness is not history,
so :class:`HeartbeatReport` is the value of one key per unit in the heartbeat bucket
(``bus.HEARTBEAT_BUCKET``, key :func:`heartbeat_key`). Only the *lapse* reaches the log,
as the watchdog's LOST transition.
"""

import msgspec

from schemas.envelope import Actor, EventBase
from schemas.ids import Token, UtcTime, utcnow
from schemas.slices import BUDGET_NAMES


class _UnitReport(EventBase, frozen=True, kw_only=True):
    """The part every unit report shares: the unit it is about, on the claimant's subject."""

    unit: Token

    def subject_suffix(self) -> str:
        return f"report.{self.actor.role}.{self.unit}"


class StartedReport(_UnitReport, frozen=True, kw_only=True, tag="report.started.v1"):
    """ "I have started this unit" (after the dispatcher dispatched it)."""


class BlockedReport(_UnitReport, frozen=True, kw_only=True, tag="report.blocked.v1"):
    """ "I cannot proceed until ``subject`` changes", for one of the closed set of reasons.

    ``reason`` should be one of :data:`schemas.units.BLOCK_REASONS` and ``subject`` must
    name what the unit waits on; the units daemon refuses the claim when either is wrong.
    """

    reason: str
    subject: str = ""


class UnblockedReport(_UnitReport, frozen=True, kw_only=True, tag="report.unblocked.v1"):
    """ "What I waited on has arrived; I am working again"."""


class CommitReport(_UnitReport, frozen=True, kw_only=True, tag="report.commit.v1"):
    """ "Here is my work": the commit the gates should judge. It never makes a unit ready."""

    sha: str


class GaveUpReport(_UnitReport, frozen=True, kw_only=True, tag="report.gave-up.v1"):
    """ "I cannot finish this unit, and this is why": the unit fails (it does not go LOST)."""

    why: str


UnitReport = StartedReport | BlockedReport | UnblockedReport | CommitReport | GaveUpReport
"""Every claim the units daemon answers."""

UNIT_REPORT_TYPES: tuple[type[_UnitReport], ...] = (
    StartedReport,
    BlockedReport,
    UnblockedReport,
    CommitReport,
    GaveUpReport,
)

REPORT_VERBS: dict[type[_UnitReport], str] = {
    StartedReport: "started",
    BlockedReport: "blocked",
    UnblockedReport: "unblocked",
    CommitReport: "commit",
    GaveUpReport: "gave-up",
}
"""The verb each report is known by (``loopbus report <verb>``, evidence, messages)."""


CAPACITY_BUDGETS: tuple[str, ...] = (*BUDGET_NAMES, "capacity")
"""What an ``awaiting-capacity`` block may name: a slice budget (``schemas.slices``) or
``capacity``, the project's limit on concurrently dispatched units."""


class HeartbeatReport(msgspec.Struct, frozen=True, kw_only=True):
    """ "I am still working on this unit": the value of the unit's key in the heartbeat bucket.

    ``at`` is the claimant's clock and is informational; the watchdog measures the lapse
    from the time the server stored the entry, which no claimant can set. ``actor`` is a
    claim too (the server checks who may write the bucket, not whom a value names): the
    watchdog counts the beat only when it names the unit's holder.
    """

    project: Token
    unit: Token
    actor: Actor
    at: UtcTime = msgspec.field(default_factory=utcnow)


def heartbeat_key(project: str, unit: str) -> str:
    """The unit's key in the heartbeat bucket: ``<project>.<unit>``."""
    return f"{project}.{unit}"


def split_heartbeat_key(key: str) -> tuple[str, str] | None:
    """(project, unit) from a heartbeat key, or ``None`` when the key is not one."""
    project, sep, unit = key.partition(".")
    if not sep or not project or not unit or "." in unit:
        return None
    return project, unit


_heartbeat_encoder = msgspec.json.Encoder()
_heartbeat_decoder = msgspec.json.Decoder(HeartbeatReport)


def encode_heartbeat(heartbeat: HeartbeatReport) -> bytes:
    return _heartbeat_encoder.encode(heartbeat)


def decode_heartbeat(data: bytes) -> HeartbeatReport:
    """Raises ``msgspec.ValidationError``/``DecodeError`` when the bytes are not a heartbeat."""
    return _heartbeat_decoder.decode(data)
