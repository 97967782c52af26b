"""Findings: the one channel every producer writes to.

A finding is raised by one of the producers (:data:`Producer`), is about a typed target,
and is keyed for convergence on ``(target, severity, criterion)``.
"""

from typing import Any, Literal, get_args

import msgspec

from schemas.envelope import EventBase
from schemas.ids import Token
from schemas.targets import Target, format_target

Producer = Literal[
    "gate_runner",
    "trunk_gate",
    "reviewer",
    "builder",
    "standards",
    "operator",
    "meta_rule",
]
PRODUCERS: tuple[Producer, ...] = get_args(Producer)
"""Every producer, in the order above (the type is the one list)."""

Severity = Literal["info", "low", "medium", "high", "critical"]
SEVERITIES: tuple[Severity, ...] = ("info", "low", "medium", "high", "critical")

FindingClass = Literal[
    "defect",  # the ordinary case: the work is wrong somewhere
    "blocked-by-fact",  # a fact the plan rests on is false; routed to reconnaissance/planning
    "misaligned",  # the operator does not recognise the increment
    "contract-wrong",  # the skeleton let two units make incompatible assumptions
    "decision-stale",  # a new fact invalidates a durable decision
    "budget-breach",  # a machinery budget was exceeded; owned by standards
    "meta",  # about the machinery itself (dismissal rates, profile review)
    "refused-transition",  # a claim the system would not turn into a fact
    "wait-budget",  # a unit blocked past its wait budget; owned by the blocker's owner
    "quarantined",  # a message on the log that does not decode
    "merge-conflict",  # a real collision the entity merge could not resolve
    "trunk-red",  # a merge turned trunk red and was reverted
    "reviewer-failure",  # a reviewer command failed to produce a valid verdict
    "investigation",  # the output of an investigation
    "forgery",  # a fact published by anyone but the system, or a claim beyond its role
    "scope-breach",  # a unit changed a file the plan did not give it, or a frozen one
    "contract-unmet",  # a unit's suite passed but its own criteria did not run and pass
    "test-vanished",  # a test that ran on trunk disappeared, was deselected or skipped
    "test-rewritten",  # a change to what runs the tests changed what a test says
    "trunk-tampered",  # trunk moved outside the merger red, or changing the gate config
    "decision-needed",  # a builder's novel decision waits for the operator
    "builder-failure",  # a builder command gave no valid envelope, or asked to stop
    "sandbox-breach",  # the agent sandbox stopped a command at a limit (timeout, cpu, memory)
]
FINDING_CLASSES: tuple[FindingClass, ...] = (
    "defect",
    "blocked-by-fact",
    "misaligned",
    "contract-wrong",
    "decision-stale",
    "budget-breach",
    "meta",
    "refused-transition",
    "wait-budget",
    "quarantined",
    "merge-conflict",
    "trunk-red",
    "reviewer-failure",
    "investigation",
    "forgery",
    "scope-breach",
    "contract-unmet",
    "test-vanished",
    "test-rewritten",
    "trunk-tampered",
    "decision-needed",
    "builder-failure",
    "sandbox-breach",
)


class FindingRaised(EventBase, frozen=True, kw_only=True, tag="finding.raised.v1"):
    """A producer raised a finding. Its event ``id`` is the finding id.

    ``unit`` and ``slice`` say what work it concerns (when any); ``owner`` names the party
    that must act on it (``operator``, ``standards``, ``planner``, ``builder:<unit>`` …),
    which is not always the unit it was raised about.
    """

    producer: Producer
    target: Target
    severity: Severity
    criterion: str = ""
    cls: FindingClass = msgspec.field(default="defect", name="class")
    message: str
    evidence: dict[str, Any] = {}
    unit: Token | None = None
    slice: Token | None = None
    owner: str | None = None

    def subject_suffix(self) -> str:
        return f"finding.{self.producer}"

    @property
    def key(self) -> "FindingKey":
        """The convergence key: rounds compare findings by this, not by id."""
        return finding_key(self)


FindingKey = tuple[str, str, str]
"""(target text, severity, criterion)."""


def finding_key(finding: FindingRaised) -> FindingKey:
    """(target, severity, criterion): what makes two findings 'the same finding'."""
    return (format_target(finding.target), finding.severity, finding.criterion)


class FindingResolved(EventBase, frozen=True, kw_only=True, tag="finding.resolved.v1"):
    """A finding stopped being open: fixed, subtracted as outside the diff, or superseded.

    Never a silent drop: ``why`` is recorded, and the original finding stays on the log.
    """

    finding: str
    why: str
    unit: Token | None = None

    def subject_suffix(self) -> str:
        return "finding.resolved"
