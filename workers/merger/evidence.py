"""The findings the merger sends, built from what it measured. Pure: no I/O.

* trunk-red (producer ``trunk_gate``, owner the unit's builder): a unit's merge turned the
  trunk gates red, as a candidate (it never reached trunk) or on trunk (it was reverted);
  it carries the failing tests and the diff of the siblings the unit collided with;
* contract-wrong (owner ``planner``): the author could not resolve a trunk-red (red again
  on the same interface, or the builder gave up), so the contract is what is wrong;
* merge-conflict (owner the unit's builder): a real collision, with the conflicting hunks;
* refused-transition: an approval the merger would not act on, and why;
* trunk-red owned by the operator: trunk itself is red and nothing the merger did caused it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from projections.merge_trunk import RedRecord
from schemas import Actor, FindingRaised, FindingResolved, Producer, Severity
from schemas.authority import ANSWERS_CLAIM, REFUSAL_CLASS
from schemas.merges import CheckVerdict, FailingTest, MergeStage
from schemas.targets import CheckTarget, CodeTarget, PlanTarget, RecordTarget, Target
from workers.history import Siblings
from workers.merger.gitops import ConflictFile

TRUNK_CRITERION = "trunk-green"
CONTRACT_CRITERION = "contract"
CONFLICT_CRITERION = "merge-clean"
MAX_FILES = 20
MAX_ENTITIES = 20


def interface_of(failing: Sequence[FailingTest]) -> list[str]:
    """What a red was about: the failing tests (or checks), sorted, without repeats."""
    return sorted({f.test for f in failing})


def _short(items: Sequence[str], limit: int = 3) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def _failing(failing: Sequence[FailingTest]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = msgspec.to_builtins(list(failing))
    return out


def trunk_red(
    *,
    id: str,
    project: str,
    actor: Actor,
    unit: str,
    slice: str | None,
    stage: MergeStage,
    head: str,
    commit: str,
    tree: str,
    failing: Sequence[FailingTest],
    checks: Sequence[CheckVerdict],
    siblings: Siblings,
    authors: Sequence[str],
    cause: str,
    reverted_by: str | None = None,
) -> FindingRaised:
    """The finding to a unit's author: its merge turned the trunk gates red."""
    tests = interface_of(failing)
    red_checks = sorted({f.check for f in failing})
    if stage == "candidate":
        what = (
            f"merging {unit} ({head[:12]}) into trunk turns the trunk gates red "
            f"({_short(tests)}); it was not merged"
        )
    else:
        what = (
            f"trunk went red after {unit} merged ({commit[:12]}): {_short(tests)}; "
            f"the merge was reverted by {(reverted_by or '')[:12]}"
        )
    if siblings.units:
        what += f". It collided with {_short(siblings.units)}, merged since {unit} branched"
    return FindingRaised(
        id=id,
        project=project,
        actor=actor,
        producer="trunk_gate",
        target=CheckTarget(check=red_checks[0] if red_checks else "trunk"),
        severity="high",
        criterion=TRUNK_CRITERION,
        cls="trunk-red",
        message=what,
        evidence={
            "stage": stage,
            "head": head,
            "merge": commit,
            "tree": tree,
            "reverted_by": reverted_by,
            "failing": _failing(failing),
            "failing_tests": tests,
            "failing_checks": red_checks,
            "checks": msgspec.to_builtins(list(checks)),
            "interface": tests,
            "siblings": siblings.as_evidence(),
            "authors": list(authors),
            "cause": cause,
        },
        unit=unit,
        slice=slice,
        owner=f"builder:{unit}",
    )


def contract_wrong(
    *,
    id: str,
    project: str,
    actor: Actor,
    unit: str,
    slice: str | None,
    why: str,
    promoted: Sequence[RedRecord],
    interface: Sequence[str],
    failing: Sequence[FailingTest] = (),
    siblings: Siblings | None = None,
    authors: Sequence[str] = (),
    cause: str,
) -> FindingRaised:
    """The promotion: the skeleton let two units assume incompatible things; planning owns it."""
    target: Target = PlanTarget(slice=slice, item=unit) if slice else RecordTarget(id=unit)
    if why == "red-again":
        reason = "trunk went red again on the same interface after the author re-submitted"
    elif why == "gave-up":
        reason = "the builder gave up with the trunk-red finding open"
    else:
        reason = f"the unit failed ({why}) with the trunk-red finding open"
    others = siblings.units if siblings is not None else []
    message = (
        f"contract-wrong: {unit} cannot be made to fit trunk on {_short(list(interface))} "
        f"({reason})"
        + (f"; it and {_short(others)} made incompatible assumptions" if others else "")
        + ". The skeleton's contract needs re-planning, not another attempt by the author"
    )
    return FindingRaised(
        id=id,
        project=project,
        actor=actor,
        producer="trunk_gate",
        target=target,
        severity="high",
        criterion=CONTRACT_CRITERION,
        cls="contract-wrong",
        message=message,
        evidence={
            "why": why,
            "promoted_from": [r.finding for r in promoted],
            "interface": list(interface),
            "failing": _failing(failing),
            "siblings": siblings.as_evidence() if siblings is not None else None,
            "authors": list(authors),
            "cause": cause,
        },
        unit=unit,
        slice=slice,
        owner="planner",
    )


def promoted_away(
    *, id: str, project: str, actor: Actor, record: RedRecord, promotion: str
) -> FindingResolved:
    """The author's trunk-red finding, closed because planning now owns it."""
    return FindingResolved(
        id=id,
        project=project,
        actor=actor,
        finding=record.finding,
        why=f"promoted to contract-wrong finding {promotion}, owned by planning",
        unit=record.unit,
    )


def merge_conflict(
    *,
    id: str,
    project: str,
    actor: Actor,
    unit: str,
    slice: str | None,
    head: str,
    base: str,
    files: Sequence[ConflictFile],
    authors: Sequence[str],
    cause: str,
    merge_base: str | None = None,
) -> FindingRaised:
    """A real collision: the unit's head and trunk changed the same entity (or one deleted
    what the other changed). The hunks are the evidence; ``head``, ``trunk`` and
    ``merge_base`` say what collided, as data (the builder's conflict round keys off the
    matching ``merge.conflicted`` fact, never off this text)."""
    first = files[0]
    labels = [
        f"{e['kind']} {e['name']} ({e['reason']})" for f in files for e in f.entities[:MAX_ENTITIES]
    ] or [f"{f.path} ({f.reason})" for f in files]
    shown_files = [
        {**f.as_evidence(), "entities": f.entities[:MAX_ENTITIES]} for f in files[:MAX_FILES]
    ]
    return FindingRaised(
        id=id,
        project=project,
        actor=actor,
        producer="trunk_gate",
        target=CodeTarget(path=first.path, start=first.start, end=max(first.end, first.start)),
        severity="high",
        criterion=CONFLICT_CRITERION,
        cls="merge-conflict",
        message=(
            f"{unit} ({head[:12]}) collides with trunk {base[:12]} in "
            f"{_short([f.path for f in files])}: {_short(labels)}; it did not merge. "
            "Its next round starts from trunk merged into it: resolve the conflicts there"
        ),
        evidence={
            "head": head,
            "trunk": base,
            "merge_base": merge_base,
            "paths": [f.path for f in files],
            "files": shown_files,
            "authors": list(authors),
            "cause": cause,
        },
        unit=unit,
        slice=slice,
        owner=f"builder:{unit}",
    )


def refused_approval(
    *,
    id: str,
    project: str,
    actor: Actor,
    approval: str,
    unit: str,
    slice: str | None,
    role: str,
    approver: str,
    code: str,
    message: str,
    details: dict[str, Any],
) -> FindingRaised:
    """An approval the merger would not act on."""
    producer: Producer = "operator" if role == "operator" else "reviewer"
    severity: Severity = "high" if code == "self-approval" else "medium"
    return FindingRaised(
        id=id,
        project=project,
        actor=actor,
        producer=producer,
        target=RecordTarget(id=approval),
        severity=severity,
        criterion=code,
        cls=REFUSAL_CLASS,
        message=f"approval refused: {message}",
        evidence={
            "report": approval,
            "approval": approval,
            ANSWERS_CLAIM: approval,  # the claim it answers: the approval report
            "claimant": f"{role}:{approver}",
            "code": code,
            **details,
        },
        unit=unit,
        slice=slice,
        owner="operator",
    )


CONFIG_CHECK = "gate-configuration"
"""The failing entry a change to the gate configuration adds to a trunk run's verdict."""


def trunk_red_unowned(
    *,
    id: str,
    project: str,
    actor: Actor,
    trunk: str,
    commit: str,
    failing: Sequence[FailingTest],
    reverted_by: str | None,
    diff: str,
    author: str | None = None,
) -> FindingRaised:
    """Trunk is red and no merge of the merger's caused it (an outside push, or trunk as the
    merger first found it): the operator owns it."""
    tests = interface_of(failing)
    tampered = any(test.check == CONFIG_CHECK for test in failing)
    if reverted_by:
        message = (
            f"{trunk} moved outside the merger to {commit[:12]} (author {author or 'unknown'}) "
            f"and is red under the adopted configuration's gates ({_short(tests)}); reverted "
            f"to the last green trunk by {reverted_by[:12]}"
        )
    else:
        message = (
            f"{trunk} at {commit[:12]} is red ({_short(tests)}) and no green trunk is known "
            "to go back to; the merge queue waits until trunk is green"
        )
        if tampered:
            message += (
                "; it changes the gate configuration, which is tampering: it was judged with "
                "the adopted configuration and its own edit is not adopted (an operator "
                "adopts one with loopbus config adopt)"
            )
    return FindingRaised(
        id=id,
        project=project,
        actor=actor,
        producer="trunk_gate",
        target=RecordTarget(id=f"commit-{commit}"),
        severity="critical",
        criterion=TRUNK_CRITERION,
        cls="trunk-tampered" if reverted_by else "trunk-red",
        message=message,
        evidence={
            "trunk": commit,
            "author": author,
            "failing": _failing(failing),
            "failing_tests": tests,
            "reverted_by": reverted_by,
            "trunk_red_without_green": reverted_by is None,
            "tampered": tampered,
            "diff": diff,
        },
        owner="operator",
    )
