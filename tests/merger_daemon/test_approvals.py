"""Approvals: what the merger acts on, and what it refuses with a finding."""

from __future__ import annotations

import pytest
from merger_scene import Scene, make_trunk

from schemas import Actor, FindingRaised, encode_event, subject_of
from schemas.merges import MergeQueued
from schemas.reviews import VerdictAccepted


def _add_helper(scene: Scene, base: str) -> str:
    return scene.repo.commit(base, {"helper.py": "def helper():\n    return 1\n"}, "helper")


async def test_author_approving_own_unit_is_refused(scene: Scene) -> None:
    """An approval from the unit's author is refused with a finding; another principal's queues."""
    base = make_trunk(scene)
    head = _add_helper(scene, base)
    await scene.ready_unit("U1", head, author="alice")
    await scene.start()

    own = await scene.approve("U1", head, principal="alice")
    await scene.until(lambda: scene.merges.refused == 1)
    assert scene.merges.queue == []

    other = await scene.approve("U1", head, principal="bob")
    await scene.until(lambda: scene.merges.queued == 1)

    refusals = [
        f for f in await scene.events(FindingRaised) if f.evidence.get("approval") == own.id
    ]
    assert len(refusals) == 1
    refusal = refusals[0]
    assert (refusal.cls, refusal.criterion, refusal.producer) == (
        "refused-transition",
        "self-approval",
        "operator",
    )
    assert refusal.evidence["authors"] == ["alice"]
    assert refusal.evidence["claimant"] == "operator:alice"
    assert "alice authored unit U1" in refusal.message
    queued = await scene.events(MergeQueued)
    assert [(q.unit, q.head, q.approver, q.cause) for q in queued] == [
        ("U1", head, "bob", other.id)
    ]


@pytest.mark.parametrize(
    ("role", "head_of", "code"),
    [
        pytest.param("operator", "other", "head-mismatch", id="approving-a-stale-head"),
        pytest.param("reviewer", "head", "approver-role", id="a-reviewer-approves-by-verdict-only"),
        pytest.param("builder", "head", "approver-role", id="a-builder-cannot-approve"),
    ],
)
async def test_invalid_approval_is_refused(
    scene: Scene, role: str, head_of: str, code: str
) -> None:
    """An approval naming another commit, or from a role that cannot approve, is refused."""
    base = make_trunk(scene)
    head = _add_helper(scene, base)
    other = scene.repo.commit(base, {"other.py": "X = 1\n"}, "other")
    await scene.ready_unit("U1", head, author="alice")
    await scene.start()

    approval = await scene.approve(
        "U1", other if head_of == "other" else head, principal="carol", role=role
    )
    await scene.until(lambda: scene.merges.refused == 1)

    [refusal] = [
        f for f in await scene.events(FindingRaised) if f.evidence.get("approval") == approval.id
    ]
    assert refusal.criterion == code
    assert scene.merges.queued == 0


async def test_accepted_review_verdict_queues_the_head(scene: Scene) -> None:
    """An accepted approve verdict (the review daemon's fact) queues the head it approved."""
    base = make_trunk(scene)
    head = _add_helper(scene, base)
    await scene.ready_unit("U1", head, author="alice")
    await scene.start()

    accepted = VerdictAccepted(
        project=scene.project,
        actor=Actor(role="system", principal="reviews"),
        unit="U1",
        verdict="01KB0000000000000000000000",
        request="01KB0000000000000000000001",
        reviewer="rev-7",
        decision="approve",
        claimed="approve",
        round=1,
        head=head,
        cause="01KB0000000000000000000002",
    )
    await scene.publish(accepted)
    await scene.until(lambda: scene.merges.queued == 1)

    [queued] = await scene.events(MergeQueued)
    assert (queued.via, queued.approver, queued.approval) == ("verdict", "rev-7", accepted.id)


async def test_a_re_stored_approval_is_answered_again_and_later_ones_still_are(
    scene: Scene,
) -> None:
    """A copy of a refused approval's bytes stored again (same id, no Msg-Id) gets its own
    refusal instead of jamming the approvals queued behind it."""
    base = make_trunk(scene)
    head = _add_helper(scene, base)
    await scene.ready_unit("U1", head, author="alice")
    await scene.start()
    own = await scene.approve("U1", head, principal="alice")
    await scene.until(lambda: scene.merges.refused == 1)

    await scene.bus.js.publish(subject_of(own), encode_event(own))  # no Msg-Id header
    await scene.approve("U1", head, principal="bob")
    await scene.until(lambda: scene.merges.queued == 1)
    refusals = [
        f for f in await scene.events(FindingRaised) if f.evidence.get("approval") == own.id
    ]
    assert [f.criterion for f in refusals] == ["self-approval", "self-approval"]
    assert len({f.id for f in refusals}) == 2
    assert scene.merges.approvals == []
