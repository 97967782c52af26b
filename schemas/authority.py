"""Who may say what: every event is a fact, a claim, or a forgery.

* A **fact** is something the system established. Only the ``system`` role publishes
  facts, on the fact subjects (``loop.<project>.<family>...``), and on a server run with
  loopbus's credentials only the system credential may publish there.
* A **claim** is something an agent or a person says. Claims live on claim subjects,
  ``loop.<project>.claim.<role>.<principal>.<suffix>``: the role and the principal are part
  of the subject, a credential may publish only under its own principal, and the reader
  refuses an event whose body names another role or principal than its subject (it is
  misfiled). So the principal of a claim is what the server proved, not a field.
* A **forgery** is a fact kind published by anyone but the system, a finding claimed
  with a producer or a class its role may not claim, or a claim only another role makes
  (an answer to a decision routed to the operator, :data:`CLAIM_ROLES`). Every fold
  skips forgeries; the integrity fold counts them and the integrity daemon names the
  forger in a finding.

Findings are the one kind that is either: raised by the system they are facts; raised by
an agent or an operator they are claims ("I think this is wrong"), within what the role
may claim.
"""

from typing import TYPE_CHECKING, Final, Literal

from schemas.envelope import Role
from schemas.findings import PRODUCERS, FindingRaised, Producer

if TYPE_CHECKING:
    from schemas.events import Event

Standing = Literal["fact", "claim", "forged"]

CLAIM_TAGS: frozenset[str] = frozenset(
    {
        "report.started.v1",
        "report.blocked.v1",
        "report.unblocked.v1",
        "report.commit.v1",
        "report.gave-up.v1",
        "report.approve.v1",
        "usage.report.v1",
        "review.verdict.v2",
        "plan.submission.v1",
        "finding.claim.v1",
        "gate.move.v1",
        "decision.recorded.v1",
        "objective.declared.v1",
        "decision.choice.v1",
        "trunk.recheck.v1",
        "config.adopt.v1",
        "plan.approve.v1",
        "skeleton.approve.v1",
        "charter.submission.v1",
        "charter.approve.v1",
        "run.stop.v1",
        "config.proposal.v1",
        "config.approve.v1",
    }
)
"""The kinds that are claims whoever publishes them (reports, verdicts, plan submissions,
finding lifecycle and gate move claims, decisions and objectives).
Checked against the union by a test, so a new claim kind cannot be forgotten here."""

FINDING_CLAIMS: dict[Role, tuple[Producer, frozenset[str]]] = {
    # role -> (the producer its findings must name, the classes it may raise)
    "builder": ("builder", frozenset({"defect", "blocked-by-fact"})),
    "reviewer": ("reviewer", frozenset({"defect", "blocked-by-fact"})),
    "operator": (
        "operator",
        frozenset({"defect", "blocked-by-fact", "misaligned", "decision-stale"}),
    ),
    "standards": ("standards", frozenset({"defect", "meta"})),
}
"""What each role may raise as a finding. Every other class (refusals, trunk-red,
wait-budget, budget breaches, quarantine, merge conflicts, investigations…) is the
system's to raise: the same finding from an agent is a forgery."""

PRODUCER_ROLES: dict[Producer, Role] = {
    producer: role for role, (producer, _) in FINDING_CLAIMS.items()
}
"""The producers a role may report findings as, each with that role (``report finding``)."""

SYSTEM_PRODUCERS: frozenset[Producer] = frozenset(PRODUCERS) - PRODUCER_ROLES.keys()
"""The producers that are system daemons: their findings are facts only they publish."""


UNIT_CLAIMANTS: tuple[Role, ...] = ("builder", "operator")
"""Who may report on a unit: its builder, or an operator speaking for it (the unit fold
reads no report from another role; ``loopbus unit`` offers only these)."""


CLAIM_ROLES: dict[str, frozenset[str]] = {
    "decision.choice.v1": frozenset({"operator"}),
    "plan.approve.v1": frozenset({"operator"}),
    "skeleton.approve.v1": frozenset({"operator"}),
    # A charter says what autonomous work is for and what it may spend: only a person
    # writes, approves or stops one.
    "charter.submission.v1": frozenset({"operator"}),
    "charter.approve.v1": frozenset({"operator"}),
    "run.stop.v1": frozenset({"operator"}),
    # A configuration change lands as a system commit once approved: only a person
    # proposes or approves one, so an agent's is a forgery, never a claim a fold reads.
    "config.proposal.v1": frozenset({"operator"}),
    "config.approve.v1": frozenset({"operator"}),
}
"""Claim kinds only some roles may make. An operator's answer to a decision routed to the
operator is the operator's: the server lets an agent publish any kind on its own claim
subject, so the same answer from another role is a forgery every fold skips (and the
integrity daemon names), not merely a claim the CLI would not send."""


EITHER_TAGS: frozenset[str] = frozenset({"decision.recorded.v1"})
"""Claim kinds the system may also publish as facts (a decision the ratchet daemon records
when it settles a move): from the system they live on fact subjects."""


def is_claim_kind(event: "Event") -> bool:
    """True for the kinds that live on claim subjects (findings and decisions: when not
    the system's)."""
    if isinstance(event, FindingRaised) or event.kind in EITHER_TAGS:
        return event.actor.role != "system"
    return event.kind in CLAIM_TAGS


def standing(event: "Event") -> Standing:
    """Whether ``event`` is a fact, a claim, or a forgery (see the module docstring)."""
    if isinstance(event, FindingRaised) and event.actor.role != "system":
        allowed = FINDING_CLAIMS.get(event.actor.role)
        if allowed is None or event.producer != allowed[0] or event.cls not in allowed[1]:
            return "forged"
        return "claim"
    if event.kind in EITHER_TAGS and event.actor.role == "system":
        return "fact"
    if event.kind in CLAIM_TAGS:
        roles = CLAIM_ROLES.get(event.kind)
        return "claim" if roles is None or event.actor.role in roles else "forged"
    return "fact" if event.actor.role == "system" else "forged"


def forgery_reason(event: "Event") -> str:
    """Why ``event`` is a forgery, in one line (for the finding that names the forger)."""
    who = f"{event.actor.role} {event.actor.principal!r}"
    if isinstance(event, FindingRaised):
        allowed = FINDING_CLAIMS.get(event.actor.role)
        if allowed is None:
            return f"{who} may raise no findings"
        if event.producer != allowed[0]:
            return (
                f"{who} raised a finding as producer {event.producer!r} (its own is {allowed[0]!r})"
            )
        return f"{who} raised a {event.cls!r} finding, which only the system raises"
    roles = CLAIM_ROLES.get(event.kind)
    if roles is not None:
        return f"{who} published {event.kind}, a claim only {' or '.join(sorted(roles))} makes"
    return f"{who} published {event.kind}, a fact only the system publishes"


FORGERY_CLASS: Final = "forgery"
"""The class of the finding that names a forger: the integrity daemon's (a forged event,
``evidence["forged"]``) and the watchdog's (a heartbeat from anyone but the unit's holder)."""

REFUSAL_CLASS: Final = "refused-transition"
"""The class of the system's findings that refuse a claim (or a transition)."""

ANSWERS_CLAIM = "claim"
"""The evidence key under which a refusal finding names the claim it answers."""


def refused_claim(event: FindingRaised) -> str | None:
    """The id of the claim ``event`` refuses (its :data:`ANSWERS_CLAIM` evidence), or ``None``.

    Only the system's refusal findings answer a claim. Other system findings carry
    evidence that is partly an agent's own words (a reviewer's or an investigator's), so a
    ``claim`` key there must never cancel anyone's pending claim."""
    if event.actor.role != "system" or event.cls != REFUSAL_CLASS:
        return None
    claim = event.evidence.get(ANSWERS_CLAIM)
    return claim if isinstance(claim, str) else None
