"""The review event kinds on the wire, the verdict parser, and the [review] config reader."""

from __future__ import annotations

import json

import msgspec
import pytest

from schemas import Actor, decode_event, encode_event, subject_of
from schemas.reviews import (
    FindingSubtracted,
    InvestigationCompleted,
    InvestigationRequested,
    ReviewFinding,
    ReviewRequested,
    ReviewVerdict,
    RoundClosed,
    RungPromoted,
    VerdictAccepted,
    VerdictDocument,
    VerdictRefused,
)
from schemas.targets import CodeTarget
from workers.agents.config import parse
from workers.errors import ConfigError
from workers.reviewer.verdicts import parse_verdict

SYSTEM = Actor(role="system", principal="tests")
SHA = "a" * 40
TARGET = CodeTarget(path="src/app.py", start=2, end=2)
FINDING = ReviewFinding(target=TARGET, severity="high", criterion="C1", message="wrong")

EVENTS = [
    ReviewRequested(
        project="p", actor=SYSTEM, unit="U1", round=1, head=SHA, base=SHA, reviewer="bob",
        diff_digest="d", cause="c",
    ),
    ReviewVerdict(
        project="p", actor=Actor(role="reviewer", principal="bob"), unit="U1", request="r",
        head=SHA, verdict="reject", findings=[FINDING],
    ),
    VerdictAccepted(
        project="p", actor=SYSTEM, unit="U1", verdict="v", request="r", reviewer="bob",
        decision="reject", claimed="reject", round=1, head=SHA, cause="v",
    ),
    VerdictRefused(
        project="p", actor=SYSTEM, unit="U1", reviewer="alice", reason="self-review",
        finding="f", cause="v",
    ),
    FindingSubtracted(
        project="p", actor=SYSTEM, unit="U1", producer="reviewer", target=TARGET,
        severity="low", message="m", mode="added", diff_digest="d", source="v", why="outside",
    ),
    RoundClosed(
        project="p", actor=SYSTEM, unit="U1", round=1, head=SHA, failure_signature="s",
        diff_digest="d", passed=False, convergence="first", action="continue", cause="a",
    ),
    RungPromoted(
        project="p", actor=SYSTEM, unit="U1", from_rung=1, to_rung=2, tactic="diagnose",
        why="identical diff", cause="r",
    ),
    InvestigationRequested(
        project="p", actor=SYSTEM, trigger="unit-failed:U1", trigger_kind="unit-failed",
        key="k1", failures=["a", "b"],
    ),
    InvestigationCompleted(
        project="p", actor=SYSTEM, request="q", trigger="unit-failed:U1", key="k1",
        finding="f", outcome="finding", cause="q",
    ),
]  # fmt: skip


@pytest.mark.parametrize("event", [pytest.param(e, id=e.kind) for e in EVENTS])
def test_every_review_kind_round_trips_on_its_subject(event: object) -> None:
    """Each kind encodes, decodes to an equal event, and has a subject under its project."""
    assert decode_event(encode_event(event)) == event  # type: ignore[arg-type]
    assert subject_of(event).startswith("loop.p.")  # type: ignore[arg-type]


def test_subjects_group_a_units_review_and_convergence() -> None:
    """Requests and decisions share review.<unit>; rounds and rungs share convergence.<unit>;
    a verdict is a claim, under its reviewer."""
    subjects = {e.kind: subject_of(e) for e in EVENTS}  # type: ignore[arg-type]
    assert subjects["review.requested.v1"] == subjects["verdict.accepted.v1"] == "loop.p.review.U1"
    assert subjects["review.verdict.v2"] == "loop.p.claim.reviewer.bob.report.reviewer.U1"
    assert subjects["round.closed.v1"] == subjects["rung.promoted.v1"] == "loop.p.convergence.U1"
    assert subjects["investigation.requested.v1"] == "loop.p.investigation.k1"


@pytest.mark.parametrize(
    ("stdout", "problem"),
    [
        pytest.param(b"", "printed nothing", id="empty"),
        pytest.param(b"{not json", "malformed JSON", id="malformed"),
        pytest.param(b'{"verdict": "approve"} {"verdict": "reject"}', "malformed JSON", id="two"),
        pytest.param(b'["approve"]', "wrong verdict schema", id="array"),
        pytest.param(b'{"findings": []}', "wrong verdict schema", id="no-verdict"),
        pytest.param(b'{"verdict": "lgtm"}', "wrong verdict schema", id="bad-verdict"),
        pytest.param(b'{"verdict": "approve", "notes": 1}', "wrong verdict schema", id="extra-key"),
        pytest.param(
            b'{"verdict": "reject", "findings": [{"target": {"type": "code", "path": "a.py", '
            b'"start": 1, "end": 1}, "severity": "urgent", "message": "m"}]}',
            "wrong verdict schema",
            id="bad-severity",
        ),
        pytest.param(
            b'{"verdict": "reject", "findings": [{"target": {"type": "file", "path": "a.py"}, '
            b'"severity": "high", "message": "m"}]}',
            "wrong verdict schema",
            id="untyped-target",
        ),
        pytest.param(
            b'{"verdict": "reject", "findings": [{"target": {"type": "plan", "slice": "S1"}, '
            b'"severity": "high", "message": "  "}]}',
            "wrong verdict schema",
            id="blank-message",
        ),
    ],
)
def test_what_is_not_a_verdict(stdout: bytes, problem: str) -> None:
    """Anything but one JSON object of the schema is refused with a one-line reason."""
    result = parse_verdict(stdout, "medium")
    assert isinstance(result, str) and problem in result and "\n" not in result


@pytest.mark.parametrize(
    ("document", "blocking", "ok"),
    [
        pytest.param({"verdict": "approve"}, "medium", True, id="bare-approve"),
        pytest.param(
            {"verdict": "approve", "findings": [{"target": {"type": "check", "check": "lint"},
             "severity": "low", "message": "nit"}]}, "medium", True, id="approve-with-nit",
        ),
        pytest.param(
            {"verdict": "approve", "findings": [{"target": {"type": "check", "check": "lint"},
             "severity": "medium", "message": "m"}]}, "high", True, id="medium-below-high",
        ),
        pytest.param(
            {"verdict": "reject", "findings": [{"target": {"type": "check", "check": "lint"},
             "severity": "low", "message": "nit"}]}, "medium", False, id="reject-only-nits",
        ),
    ],
)  # fmt: skip
def test_the_blocking_threshold_decides_consistency(
    document: dict[str, object], blocking: str, ok: bool
) -> None:
    """approve carries nothing blocking; reject carries something blocking."""
    result = parse_verdict(json.dumps(document).encode(), blocking)
    assert isinstance(result, VerdictDocument) is ok, result


BASE = '[project]\nid = "demo"\n'


@pytest.mark.parametrize(
    ("table", "field"),
    [
        pytest.param('[review]\ncommand = "r"\n', "review.roster", id="command-without-roster"),
        pytest.param('[review]\nroster = ["a", "a"]\n', "review.roster", id="twice"),
        pytest.param('[review]\nsubtraction = "lines"\n', "review.subtraction", id="mode"),
        pytest.param('[review]\noversight = "yolo"\n', "review.oversight", id="oversight"),
        pytest.param("[review]\nceiling = 0\n", "review.ceiling", id="ceiling"),
        pytest.param('[review]\nblocking = "urgent"\n', "review.blocking", id="blocking"),
        pytest.param('[review]\ntimeout = "soon"\n', "review.timeout", id="timeout"),
        pytest.param('[review]\ncolour = "red"\n', "review.colour", id="unknown-key"),
        pytest.param('[investigator]\ncommand = ""\n', "investigator.command", id="empty"),
    ],
)
def test_config_mistakes_name_the_field(table: str, field: str) -> None:
    """Each mistake is one line naming the field and the fix."""
    with pytest.raises(ConfigError, match=rf"^loopbus.toml: {field} ") as raised:
        parse(BASE + table)
    assert "\n" not in str(raised.value)


def test_defaults_when_nothing_is_configured() -> None:
    """No tables: no reviews, no investigations, and the documented defaults."""
    config = parse(BASE)
    assert (config.project, config.review.command, config.investigator.command) == (
        "demo",
        None,
        None,
    )
    review = config.review
    assert (review.subtraction, review.oversight, review.ceiling, review.blocking) == (
        "added",
        "supervised",
        6,
        "medium",
    )


def test_a_re_stored_verdict_claim_is_not_queued_again() -> None:
    """A copy of an answered verdict claim (same id, stored again) stays answered, so the
    reviewer does not answer it again under an id the log already de-duplicated."""
    from projections import reviews

    claim = EVENTS[1]
    answer = msgspec.structs.replace(EVENTS[2], verdict=claim.id, cause=claim.id)
    state = reviews.FOLD.fold([claim, answer, claim])
    assert reviews.unanswered_claims(state) == []
    assert state.answered == {claim.id: answer.id}
