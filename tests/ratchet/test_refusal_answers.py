"""A pending claim is answered by the system's refusal of it, and by nothing else: a
system finding whose evidence came from an agent (an investigator's report, a reviewer's
verdict) may carry a ``claim`` key, and must not cancel an operator's pending claim."""

from __future__ import annotations

import pytest

from projections import decisions, finding_lifecycle, lifecycle, ratchet
from projections.base import Fold
from schemas import Actor, Event, FindingRaised
from schemas.decisions import DecisionRecorded
from schemas.ids import new_id
from schemas.lifecycle import FindingClaim
from schemas.ratchet import GateMoveClaim
from schemas.targets import RecordTarget

OPERATOR = Actor(role="operator", principal="olive")
SYSTEM = Actor(role="system", principal="tests")


def claims(project: str) -> list[Event]:
    return [
        GateMoveClaim(project=project, actor=OPERATOR, gate="lint", scope="local",
                      move="approve", why="reviewed"),
        FindingClaim(project=project, actor=OPERATOR, finding=new_id(), action="dismiss",
                     reason="false-positive", why="noise"),
        DecisionRecorded(project=project, actor=OPERATOR, question="which store?",
                         options=["a", "b"], chosen="a", owner="operator:olive"),
    ]  # fmt: skip


def answering(project: str, claim: str, cls: str) -> FindingRaised:
    return FindingRaised(
        project=project, actor=SYSTEM, producer="standards", target=RecordTarget(id=claim),
        severity="medium", criterion="refused-claim", cls=cls, message="about the claim",
        evidence={"claim": claim},
    )  # fmt: skip


FOLDS = [ratchet.FOLD, lifecycle.FOLD, finding_lifecycle.FOLD, decisions.FOLD]


@pytest.mark.parametrize("fold", FOLDS, ids=lambda f: f.name)
def test_only_a_refusal_answers_a_pending_claim(fold: Fold) -> None:  # type: ignore[type-arg]
    events = claims("p")
    pending = set(fold.fold(events).pending)
    assert pending  # the fold keeps at least one of these claims pending
    for claim in pending:
        # An investigation's finding whose report put the claim's id in its evidence.
        kept = fold.fold([*events, answering("p", claim, "investigation")])
        assert claim in kept.pending
        refused = fold.fold([*events, answering("p", claim, "refused-transition")])
        assert claim not in refused.pending


def test_a_decision_claim_naming_a_file_outside_the_repository_is_refused() -> None:
    """The CLI refuses such a --file; an operator publishing the claim directly gets the
    system's refusal, not a record naming the path as the repository's file. Paths inside
    the repository are recorded as repository-relative paths (`./` and blanks dropped), the
    form the planner matches against units' files."""
    from datetime import UTC, datetime

    from projections.intents import Publish
    from workers.kernel import World
    from workers.ratchet.decisions import answer

    world = World(project="p", states={}, seqs={}, now=datetime.now(UTC), actor=SYSTEM,
                  outside={})  # fmt: skip
    for files, refused, recorded in (
        (["src/a.py", "../../etc/passwd"], True, []),
        (["/etc"], True, []),
        (["bus/", "./src/a.py", " src/b.py "], False, ["bus/", "src/a.py", "src/b.py"]),
    ):
        claim = DecisionRecorded(project="p", actor=OPERATOR, question="q?", chosen="a",
                                 owner="operator", files=files)  # fmt: skip
        published = answer(world, decisions.FOLD.fold([claim]), claim)
        assert isinstance(published, Publish)
        if refused:
            assert isinstance(published.event, FindingRaised), files
            assert published.event.cls == "refused-transition"
            assert "is not a path inside the repository" in published.event.message
        else:
            assert isinstance(published.event, DecisionRecorded)
            assert published.event.files == recorded
