"""Gate facts: a runner's key, a check's signed result, a suite's signed summary, and a request.

Only the gate runner establishes gate outcomes. Each result is content-addressed on
``(check, inputs, config_sha)`` — ``inputs`` is the commit's git tree id unless the check
declares the files it reads, in which case it is a digest of just those files — and is
signed with the runner's ed25519 key over :func:`canonical_bytes` (the event without its
``signature`` field), so anyone folding the log can tell a measured result from a forged one.

Subjects: ``gate.<check>`` (results), ``gatekey.<runner>`` (key registrations),
``gatesuite.unit.<unit>`` / ``gatesuite.<reason>`` (suite summaries) and
``gatereq.unit.<unit>`` / ``gatereq.<reason>`` (requests).
"""

import hashlib
from typing import Annotated, Any, Literal

import msgspec

from schemas.envelope import EventBase
from schemas.errors import InvalidValue
from schemas.ids import EventId, Token

GateOutcome = Literal["pass", "fail", "error"]
"""Three outcomes, always. ``error`` is anything the runner could not establish; it is red
and it is never cached."""

GATE_OUTCOMES: tuple[GateOutcome, ...] = ("pass", "fail", "error")

RunReason = Literal["unit", "trunk", "manual"]
"""Why a suite ran: a unit's submitted commit, a trunk (candidate) commit, or someone asked."""

RUN_REASONS: tuple[RunReason, ...] = ("unit", "trunk", "manual")

ExecutorKind = Literal["subprocess", "container"]

SUITE_CRITERION = "gate-suite"
"""The criterion of a gate finding about a whole suite (one that could not run)."""

GitSha = Annotated[str, msgspec.Meta(pattern=r"^[0-9a-f]{40}([0-9a-f]{24})?$(?!\n)")]
"""A git object id: 40 hex digits (SHA-1) or 64 (SHA-256 repositories)."""

Digest = Annotated[str, msgspec.Meta(pattern=r"^[0-9a-f]{64}$(?!\n)")]
"""A sha256 hex digest."""

NonNegative = Annotated[float, msgspec.Meta(ge=0)]
Count = Annotated[int, msgspec.Meta(ge=0)]

SIGNATURE_ALGORITHM: Literal["ed25519"] = "ed25519"


class GateRunnerKeyRegistered(
    EventBase, frozen=True, kw_only=True, tag="gate.runner_key_registered.v1"
):
    """A gate runner announced the public key its results are signed with.

    ``public_key`` is the raw 32-byte ed25519 key in base64. The first registration of a
    runner id wins; a later one with a different key is refused by the gates projection.
    """

    runner: Token
    public_key: str
    algorithm: Literal["ed25519"] = SIGNATURE_ALGORITHM

    def subject_suffix(self) -> str:
        return f"gatekey.{self.runner}"


class Cost(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What a run consumed, where known: CPU seconds of the command's process tree and
    its peak resident memory."""

    cpu_s: NonNegative | None = None
    max_rss_kb: Count | None = None


class GateResultRecorded(EventBase, frozen=True, kw_only=True, tag="gate.result_recorded.v1"):
    """The runner ran ``check`` on ``tree`` (checked out from ``commit``) and established
    ``outcome``. Published atomically with the findings it lists (``findings`` are their
    event ids, in order; ``findings_total`` counts the ones left out past the cap too).

    ``error`` says, in one line, why the outcome is ``error`` (and is empty otherwise);
    ``summary`` is the human tally ("41 passed, 2 pending", "3 lint findings").
    """

    check: Token
    tree: GitSha
    commit: GitSha | None = None
    inputs: str
    config_sha: Digest
    outcome: GateOutcome
    error: str = ""
    summary: str = ""
    duration_s: NonNegative
    cost: Cost | None = None
    exit_code: int | None = None
    executor: ExecutorKind = "subprocess"
    runner: Token
    findings: list[EventId] = []
    findings_total: Count = 0
    tests: dict[str, str] = {}
    """How each test a pytest check collected ended (node id -> ``passed``, ``failed``,
    ``error``, ``skipped``, ``xfailed``, ``xpassed``, ``norun``, ``deselected``; a test
    judged as pending is prefixed ``pending-``). What readiness and the trunk comparison
    read; empty for other parsers."""
    signature: str = ""

    def __post_init__(self) -> None:
        if (self.outcome == "error") != bool(self.error):
            raise InvalidValue(
                "error", self.error, "an error outcome must say why, and only an error outcome"
            )
        if self.findings_total < len(self.findings):
            raise InvalidValue(
                "findings_total",
                self.findings_total,
                f"must count at least the {len(self.findings)} findings listed",
            )

    def subject_suffix(self) -> str:
        return f"gate.{self.check}"

    @property
    def cache_key(self) -> str:
        return cache_key(self.check, self.inputs, self.config_sha)


class SuiteEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One check of a suite: its outcome, whether it was served from the cache, and the
    result it stands on (a result recorded now, or the cached one)."""

    check: Token
    outcome: GateOutcome
    cached: bool
    result: EventId
    duration_s: NonNegative
    findings: Count = 0


class GateSuiteCompleted(EventBase, frozen=True, kw_only=True, tag="gate.suite_completed.v1"):
    """Every configured check (or the ones asked for) was answered for ``commit``.

    ``cause`` is the id of the report or request this answers (so a restarted runner does
    not answer it twice); ``error`` is set when the suite could not run at all (no such
    commit, an invalid ``loopbus.toml``) and then ``checks`` may be empty. ``outcome`` is
    the worst of the entries: error over fail over pass.
    """

    commit: GitSha | None = None
    tree: GitSha | None = None
    unit: Token | None = None
    reason: RunReason = "manual"
    cause: EventId | None = None
    outcome: GateOutcome
    error: str = ""
    checks: list[SuiteEntry] = []
    duration_s: NonNegative = 0.0
    runner: Token
    signature: str = ""
    advisory: list[Token] = []
    """Checks that ran and reported but do not block (Drafted, a fresh Proposed, under
    review at the advisory tier, Retired: see docs/ratchet.md); ``outcome`` is the worst
    of the others."""
    onto: GitSha | None = None
    """A unit's suite run on its merge onto trunk: the trunk commit ``commit`` was merged
    onto, and ``tree`` is the merge's tree, the one the checks ran on (``None``: the
    checks ran on ``commit``'s own tree). Absent from suites signed before it existed."""

    def __post_init__(self) -> None:
        if self.error and self.outcome != "error":
            raise InvalidValue("outcome", self.outcome, "a suite that could not run is an error")
        if not self.error and not self.checks:
            raise InvalidValue("checks", self.checks, "a suite that ran must list its checks")

    def subject_suffix(self) -> str:
        return f"gatesuite.unit.{self.unit}" if self.unit else f"gatesuite.{self.reason}"


class GateRunRequested(EventBase, frozen=True, kw_only=True, tag="gate.run_requested.v1"):
    """Someone asked for the gates of ``commit`` (all checks, or ``checks``).

    Anyone may ask: a request establishes nothing; the runner answers it with a
    :class:`GateSuiteCompleted` whose ``cause`` is this event's id. ``force`` re-runs even
    when a cached pass or fail exists (to recheck a suspected flake).
    """

    commit: str
    checks: list[Token] = []
    unit: Token | None = None
    reason: RunReason = "manual"
    force: bool = False

    def __post_init__(self) -> None:
        if not self.commit.strip():
            raise InvalidValue("commit", self.commit, "name the commit to run the gates on")

    def subject_suffix(self) -> str:
        return f"gatereq.unit.{self.unit}" if self.unit else f"gatereq.{self.reason}"


SignedGateEvent = GateResultRecorded | GateSuiteCompleted

_canonical = msgspec.json.Encoder(order="deterministic")


def canonical_bytes(event: SignedGateEvent) -> bytes:
    """The bytes a runner signs: the event as msgspec JSON, keys sorted, without ``signature``."""
    doc: dict[str, Any] = msgspec.to_builtins(event)
    doc.pop("signature", None)
    if not doc.get("tests", True):
        doc.pop("tests")  # results signed before the field existed verify unchanged
    if not doc.get("advisory"):
        doc.pop("advisory", None)  # suites signed before the field existed still verify
    if doc.get("onto", "") is None:
        doc.pop("onto")  # likewise: a suite run on the unit's own tree signs no ``onto``
    return _canonical.encode(doc)


def cache_key(check: str, inputs: str, config_sha: str) -> str:
    """The content address of one check's result: ``check|inputs|config_sha``."""
    return f"{check}|{inputs}|{config_sha}"


def cache_key_digest(key: str) -> str:
    """A fixed-length name for a cache key (usable as a KV key token)."""
    return hashlib.sha256(key.encode()).hexdigest()


def worst(outcomes: list[GateOutcome]) -> GateOutcome:
    """error over fail over pass; an empty list established nothing, so it is an error."""
    if not outcomes or "error" in outcomes:
        return "error"
    return "fail" if "fail" in outcomes else "pass"
