"""Subjects: the one place where a subject of the log is built or taken apart.

Every subject is ``loop.<project>.<family>[.<token>...]``. An event's subject is derived
from the event (:func:`subject_of`); readers filter with the wildcards built here; and the
few places that must know which project or unit a stored subject belongs to ask
:func:`parse_subject`. Nothing else in loopbus writes ``"loop."`` by hand, so a change to
the layout is a change to this module.
"""

from dataclasses import dataclass
from typing import TYPE_CHECKING

from schemas.authority import is_claim_kind
from schemas.errors import InvalidValue
from schemas.ids import is_token

if TYPE_CHECKING:
    from schemas.events import Event

PREFIX = "loop"
ALL = f"{PREFIX}.>"
"""Every subject of every project (what the stream ``LOOP`` stores)."""

QUARANTINE = "quarantine"
"""The family of quarantine records: a broken message is never quarantined twice."""

CLAIM = "claim"
"""The family of claims: ``loop.<project>.claim.<role>.<principal>.<suffix>``."""


def subject_of(event: "Event") -> str:
    """The subject an event is stored under: ``loop.<project>.<suffix>`` for a fact,
    ``loop.<project>.claim.<role>.<principal>.<suffix>`` for a claim (see
    :mod:`schemas.authority`: the server lets a credential publish claims only
    under its own principal, so the principal on the subject is a proven one)."""
    if is_claim_kind(event):
        actor = event.actor
        principal = actor.principal
        if not is_token(principal):
            raise InvalidValue(
                "actor.principal",
                principal,
                "a principal that makes claims is one subject token (letters, digits, '_' "
                "or '-', at most 64)",
            )
        return f"{PREFIX}.{event.project}.{CLAIM}.{actor.role}.{principal}.{event.subject_suffix()}"
    return f"{PREFIX}.{event.project}.{event.subject_suffix()}"


def claim_family(project: str = "*", role: str = "*", principal: str = "*") -> str:
    """Every claim of one principal (or all) in one project (or all)."""
    return f"{PREFIX}.{project}.{CLAIM}.{role}.{principal}.>"


def project_subjects(project: str) -> str:
    """Every subject of one project."""
    return f"{PREFIX}.{project}.>"


def serving(projects: tuple[str, ...] | list[str]) -> list[str]:
    """The filter of a daemon serving ``projects`` (every project when empty)."""
    return [project_subjects(p) for p in projects] or [ALL]


def trunk_subject(project: str) -> str:
    """Where trunk's moves live: advanced, reverted, rechecked, and its own gate runs."""
    return f"{PREFIX}.{project}.trunk"


def trunk_subjects(project: str) -> list[str]:
    """Where trunk's moves and gate runs live (the ``merges`` fold's trunk view)."""
    return [trunk_subject(project), f"{PREFIX}.{project}.merge.*"]


def unit_subject(project: str, unit: str) -> str:
    """Where a unit's plan and transitions live (conditional publishes are keyed on it)."""
    return f"{PREFIX}.{project}.unit.{unit}"


def unit_subjects(project: str) -> str:
    """Every unit subject of a project."""
    return f"{PREFIX}.{project}.unit.*"


def slice_subjects(project: str) -> str:
    """Every slice fact of ``project`` (plans accepted, units dispatched, slices closed)."""
    return f"{PREFIX}.{project}.slice.*"


def finding_subjects(project: str = "*", producer: str = "*") -> str:
    """Findings of one producer (or all) in one project (or all)."""
    return f"{PREFIX}.{project}.finding.{producer}"


def gate_subjects(project: str) -> list[str]:
    """Gate-runner keys and gate results of a project (what the gate cache folds)."""
    return [f"{PREFIX}.{project}.gatekey.>", f"{PREFIX}.{project}.gate.>"]


def ratchet_subjects(project: str) -> str:
    """The gate moves of a project (the catalogue's: the profiles')."""
    return f"{PREFIX}.{project}.ratchet.>"


def charter_approved_subjects(project: str) -> str:
    """The charter approvals of a project (a run's start: what its criteria are)."""
    return f"{PREFIX}.{project}.charter.approved"


def gate_request_subjects(project: str) -> str:
    """Gate-run requests of a project."""
    return f"{PREFIX}.{project}.gatereq.>"


def gate_suite_subjects(project: str) -> str:
    """Completed gate suites of a project."""
    return f"{PREFIX}.{project}.gatesuite.>"


def lease_subjects(project: str, work: str = "*") -> str:
    """The leases of one kind of work item (or every kind) of a project."""
    return f"{PREFIX}.{project}.lease.{work}.*"


def lease_subject(project: str, work: str, item: str) -> str:
    """Where one item's lease lives (a taking or renewal is conditional on it)."""
    return f"{PREFIX}.{project}.lease.{work}.{item}"


def claim_subjects(project: str, unit: str) -> list[str]:
    """What answers a unit's claim: its transitions and the system's findings (a refusal
    is one)."""
    return [unit_subject(project, unit), finding_subjects(project, ">")]


def quarantine_subject(project: str, seq: int) -> str:
    """Where the quarantine record of the message at ``seq`` goes."""
    return f"{PREFIX}.{project}.{QUARANTINE}.{seq}"


@dataclass(frozen=True, slots=True)
class Subject:
    """A stored subject taken apart: its project, family and the tokens after it."""

    project: str
    family: str
    rest: tuple[str, ...] = ()

    @property
    def claimant(self) -> tuple[str, str] | None:
        """(role, principal) of a claim subject."""
        return (self.rest[0], self.rest[1]) if self.family == CLAIM and len(self.rest) > 2 else None

    @property
    def unit(self) -> str | None:
        """The unit of a ``unit.<unit>`` subject."""
        return self.rest[0] if self.family == "unit" and len(self.rest) == 1 else None

    @property
    def quarantined(self) -> bool:
        return self.family == QUARANTINE


def parse_subject(subject: str) -> Subject | None:
    """``loop.<project>.<family>...`` taken apart; ``None`` for anything else."""
    tokens = subject.split(".")
    if len(tokens) < 3 or tokens[0] != PREFIX or not tokens[1] or not tokens[2]:
        return None
    return Subject(project=tokens[1], family=tokens[2], rest=tuple(tokens[3:]))


def matches(pattern: str, subject: str) -> bool:
    """NATS wildcard matching: ``*`` is one token, a final ``>`` one or more."""
    want = pattern.split(".")
    have = subject.split(".")
    for index, token in enumerate(want):
        if token == ">":
            return len(have) > index
        if index >= len(have) or (token != "*" and token != have[index]):
            return False
    return len(have) == len(want)


def matches_any(patterns: list[str] | tuple[str, ...], subject: str) -> bool:
    return any(matches(p, subject) for p in patterns)
