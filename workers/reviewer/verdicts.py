"""What a reviewer's command printed, read against the verdict schema, and the claim (or
the failure) it becomes. Pure: no I/O.

A verdict is one JSON document on stdout; nothing else the command does counts. Output
that does not decode, an approve that carries a blocking finding, a reject that names
none, a timeout or a non-zero exit is a reviewer failure: a finding for the operator,
never a verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import msgspec

from projections.findings import key_text
from projections.intents import Publish, PublishBatch, Publishing
from projections.reviews import RequestView
from projections.round_rules import is_blocking
from schemas import Actor, FindingRaised
from schemas.ids import answer_id
from schemas.reviews import ReviewFinding, ReviewVerdict, VerdictDocument, VerdictRefused
from schemas.targets import CodeTarget, RecordTarget, format_target
from workers.agents.command import CommandResult
from workers.reviewer.diff import normalise_path

OUTPUT_LIMIT = 1 << 20  # a verdict larger than 1 MiB is not a verdict

_verdict_decoder = msgspec.json.Decoder(VerdictDocument)


def parse_verdict(stdout: bytes, blocking: str) -> VerdictDocument | str:
    """The verdict a reviewer printed, or the reason it is not one (one line)."""
    text = stdout.strip()
    if not text:
        return "printed nothing; expected one JSON verdict on stdout"
    if len(text) > OUTPUT_LIMIT:
        return f"printed {len(text)} bytes; a verdict must be under {OUTPUT_LIMIT}"
    try:
        document = _verdict_decoder.decode(text)
    except msgspec.ValidationError as exc:
        return f"wrong verdict schema: {exc}"
    except msgspec.DecodeError as exc:
        return f"malformed JSON: {exc}"
    return consistency_problem(document.verdict, document.findings, blocking) or document


def consistency_problem(verdict: str, findings: list[ReviewFinding], blocking: str) -> str | None:
    """An approve may carry no blocking finding; a reject must carry at least one."""
    blockers = [f for f in findings if is_blocking(f.severity, blocking)]
    if verdict == "approve" and blockers:
        first = blockers[0]
        return (
            f"verdict approve carries a blocking finding ({format_target(first.target)}, "
            f"{first.severity}); reject, or lower it below {blocking}"
        )
    if verdict == "reject" and not blockers:
        return f"verdict reject names no finding of severity {blocking} or above"
    return None


def review_finding_key(finding: ReviewFinding) -> str:
    """The convergence key text of a verdict's finding: ``target|severity|criterion``."""
    return key_text(format_target(finding.target), finding.severity, finding.criterion)


def strip_copy_path(item: ReviewFinding, roots: Sequence[str]) -> ReviewFinding:
    """A reviewer that reports absolute paths inside its read-only copy (one of ``roots``)
    gets them made repository-relative, so they can be compared with the diff."""
    target = item.target
    if not isinstance(target, CodeTarget):
        return item
    path = target.path
    for root in roots:
        if path.startswith(root + "/"):
            path = path[len(root) + 1 :]
    path = normalise_path(path)
    if path == target.path:
        return item
    return msgspec.structs.replace(
        item, target=CodeTarget(path=path, start=target.start, end=target.end)
    )


def answer(
    project: str,
    request: RequestView,
    result: CommandResult,
    *,
    timeout_s: float,
    blocking: str,
    roots: Sequence[str],
    actor: Actor,
    now: datetime,
) -> Publishing:
    """What the reviewer's run warrants: its verdict as the assigned reviewer's claim, or a
    reviewer failure."""
    failure = result.failure(timeout_s)
    parsed = failure if failure is not None else parse_verdict(result.stdout, blocking)
    if isinstance(parsed, str):
        return reviewer_failed(project, request, parsed, result.stdout, actor=actor, now=now)
    claim = ReviewVerdict(
        id=answer_id(request.id, "verdict"),
        at=now,
        project=project,
        actor=Actor(role="reviewer", principal=request.reviewer),
        unit=request.unit,
        request=request.id,
        head=request.head,
        verdict=parsed.verdict,
        findings=[strip_copy_path(f, roots) for f in parsed.findings],
        summary=parsed.summary,
        escalate=list(parsed.escalate),
        scores=list(parsed.scores),
    )
    return Publish(claim)


def reviewer_failed(
    project: str,
    request: RequestView,
    reason: str,
    stdout: bytes,
    *,
    actor: Actor,
    now: datetime,
) -> PublishBatch:
    """Malformed output, a timeout or a non-zero exit: a finding that closes the request."""
    finding = FindingRaised(
        id=answer_id(request.id, "reviewer-failure"),
        at=now,
        project=project,
        actor=actor,
        producer="reviewer",
        target=RecordTarget(id=request.id),
        severity="high",
        criterion="reviewer-output",
        cls="reviewer-failure",
        message=f"reviewer {request.reviewer} gave no valid verdict on {request.unit}: {reason}",
        evidence={
            "request": request.id,
            "reviewer": request.reviewer,
            "reason": reason,
            "stdout": stdout[:2000].decode("utf-8", "replace"),
        },
        unit=request.unit,
        owner="operator",
    )
    refused = VerdictRefused(
        id=answer_id(request.id, "reviewer-failure-refused"),
        at=now,
        project=project,
        actor=actor,
        unit=request.unit,
        request=request.id,
        verdict=None,
        reviewer=request.reviewer,
        reason=reason,
        finding=finding.id,
        cause=request.id,
    )
    return PublishBatch((finding, refused))
