"""The ratchet daemon on a real server: finding lifecycle, meta tiers, gate moves and the
profile review count across projects."""

from __future__ import annotations

import asyncio
import itertools

from kernelkit import running

from bus import Bus, read
from projections import findings, lifecycle, ratchet
from schemas import Actor, FindingRaised, FindingResolved, project_subjects
from schemas.decisions import DecisionRecorded
from schemas.lifecycle import FindingClaim, FindingDismissed, FindingReopened
from schemas.ratchet import GateMoveClaim, GateMoved
from schemas.slices import PlannedUnit, SlicePlan, SlicePlanAccepted
from schemas.targets import parse_target
from workers.gates.meta import MetaRule, Tier
from workers.ratchet.daemon import Ratchet
from workers.ratchet.policy import ConfiguredCheck, Policy

SYSTEM = Actor(role="system", principal="tests")
OPERATOR = Actor(role="operator", principal="alice")
BUILDER = Actor(role="builder", principal="b1")
STANDARDS = Actor(role="standards", principal="std")
CATALOGUE_OP = Actor(role="operator", principal="cat")
_n = itertools.count()


async def log(bus: Bus, project: str) -> list:
    return [r.event async for r in read(bus, subjects=[project_subjects(project)]) if r.event]


async def settled(bus: Bus, daemon: Ratchet) -> None:
    """Run the daemon until everything on the log is folded and answered."""
    async with running(bus, daemon) as kernel:
        for _ in range(10):  # answers are folded back, then decided on again
            await asyncio.wait_for(kernel.wait_acted(await bus.stream_last_seq()), 20)
        await asyncio.wait_for(kernel.wait_acted(await bus.stream_last_seq()), 20)


def gate_finding(project: str, check: str) -> FindingRaised:
    line = next(_n) + 1
    return FindingRaised(
        project=project, actor=SYSTEM, producer="gate_runner",
        target=parse_target(f"code:app.py:{line}"), severity="medium", criterion=check,
        message="lint", evidence={"check": check},
    )  # fmt: skip


def policy(project: str, **extra) -> Policy:
    rule = MetaRule(
        proxies="style errors that become bugs",
        tiers=(
            Tier(above=0.10, over=10, action="review"),
            Tier(above=0.25, over=10, action="advisory"),
        ),
    )  # fmt: skip
    return Policy(
        checks={project: {"lint": ConfiguredCheck("project", rule)}},
        catalogue_operators=frozenset({"cat"}),
        **extra,
    )


async def test_dismiss_resolve_reopen_become_facts_only_for_an_operator(
    bus: Bus, project: str
) -> None:
    """An operator's dismissal, reopening and resolution become facts naming the claim; a
    builder's dismissal is refused with a finding; the dismissed finding stays counted."""
    raised = gate_finding(project, "lint")
    await bus.publish(raised)
    await bus.publish(FindingClaim(project=project, actor=BUILDER, finding=raised.id,
                                   action="dismiss", reason="false-positive",
                                   why="in my way"))  # fmt: skip
    dismiss = FindingClaim(project=project, actor=OPERATOR, finding=raised.id, action="dismiss",
                           reason="false-positive", why="generated code")  # fmt: skip
    await bus.publish(dismiss)
    await settled(bus, Ratchet(policy(project), projects=[project]))
    events = await log(bus, project)
    (dismissed,) = [e for e in events if isinstance(e, FindingDismissed)]
    assert dismissed.claim == dismiss.id and dismissed.by == "operator:alice"
    refusals = [e for e in events if isinstance(e, FindingRaised) and e.cls == "refused-transition"]
    assert len(refusals) == 1 and "operator's; builder:b1 may not" in refusals[0].message
    state = lifecycle.FOLD.fold(events)
    assert state.findings[raised.id].status == "dismissed"
    assert lifecycle.tallies(state)["lint"].false_positive == 1
    assert findings.open_findings(findings.FOLD.fold(events)) == [] or all(
        f.id != raised.id for f in findings.open_findings(findings.FOLD.fold(events))
    )
    await bus.publish(FindingClaim(project=project, actor=OPERATOR, finding=raised.id,
                                   action="reopen", why="it was real"))  # fmt: skip
    await settled(bus, Ratchet(policy(project), projects=[project]))
    await bus.publish(FindingClaim(project=project, actor=OPERATOR, finding=raised.id,
                                   action="resolve", why="fixed in abc"))  # fmt: skip
    await settled(bus, Ratchet(policy(project), projects=[project]))
    events = await log(bus, project)
    assert any(isinstance(e, FindingReopened) for e in events)
    assert any(isinstance(e, FindingResolved) and e.finding == raised.id for e in events)
    life = lifecycle.FOLD.fold(events).findings[raised.id]
    assert [s.status for s in life.steps] == ["open", "dismissed", "open", "resolved"]
    assert lifecycle.tallies(lifecycle.FOLD.fold(events))["lint"].true_positive == 1


async def dismiss_all(bus: Bus, project: str, ids: list[str]) -> None:
    for finding in ids:
        await bus.publish(FindingClaim(project=project, actor=OPERATOR, finding=finding,
                                       action="dismiss", reason="false-positive",
                                       why="noise"))  # fmt: skip


async def test_meta_findings_at_each_tier_put_the_gate_under_review_then_advisory(
    bus: Bus, project: str
) -> None:
    """Over 10 findings, 2 false positives (20%) reach the review tier: a meta-finding and
    the gate under review, still blocking; 3 more (50%) reach the advisory tier: a second
    meta-finding and the gate stops blocking. Each is raised once across restarts."""
    raised = [gate_finding(project, "lint") for _ in range(10)]
    for finding in raised:
        await bus.publish(finding)
    await dismiss_all(bus, project, [f.id for f in raised[:2]])
    await settled(bus, Ratchet(policy(project), projects=[project]))
    events = await log(bus, project)
    metas = [e for e in events if isinstance(e, FindingRaised) and e.producer == "meta_rule"]
    assert [m.criterion for m in metas] == ["meta:review-above-0.1-over-10"]
    assert metas[0].target == parse_target("check:lint") and metas[0].cls == "meta"
    view = ratchet.FOLD.fold(events).gates["local:lint"]
    assert view.state == "LocalUnderReview" and ratchet.blocks(view)
    await dismiss_all(bus, project, [f.id for f in raised[2:5]])
    await settled(bus, Ratchet(policy(project), projects=[project]))
    await settled(bus, Ratchet(policy(project), projects=[project]))
    events = await log(bus, project)
    metas = [e for e in events if isinstance(e, FindingRaised) and e.producer == "meta_rule"]
    assert [m.criterion for m in metas] == [
        "meta:review-above-0.1-over-10",
        "meta:advisory-above-0.25-over-10",
    ]
    view = ratchet.FOLD.fold(events).gates["local:lint"]
    assert view.state == "LocalUnderReview" and not ratchet.blocks(view)
    assert ratchet.advisory_checks(ratchet.FOLD.fold(events), {"lint": "project"}) == ["lint"]
    keep = GateMoveClaim(project=project, actor=OPERATOR, gate="lint", scope="local", move="keep",
                         why="the dismissals were a generated file, now excluded")  # fmt: skip
    await bus.publish(keep)
    await settled(bus, Ratchet(policy(project), projects=[project]))
    assert ratchet.FOLD.fold(await log(bus, project)).gates["local:lint"].state == "Local"


async def test_a_gate_walks_the_ratchet_with_each_move_settled_and_recorded(
    bus: Bus, project: str
) -> None:
    """A drafted gate is refused approval by its builder, approved by the operator, grows a
    check freely, goes back to Drafted on an edit, and each settlement is a decision."""
    claims = [
        (BUILDER, "draft", ""), (BUILDER, "approve", ""), (OPERATOR, "approve", ""),
        (BUILDER, "add-check", "no-print"), (BUILDER, "edit-check", "no-print"),
        (BUILDER, "retire", ""),
    ]  # fmt: skip
    for actor, move, check in claims:
        await bus.publish(GateMoveClaim(project=project, actor=actor, gate="memo", scope="local",
                                        move=move, why=f"{move} it", check=check,
                                        defect="printing secrets"))  # fmt: skip
        await settled(bus, Ratchet(policy(project), projects=[project]))
    events = await log(bus, project)
    moves = [(e.move, e.source, e.target) for e in events if isinstance(e, GateMoved)]
    assert moves == [
        ("draft", None, "Drafted"), ("approve", "Drafted", "Local"),
        ("add-check", "Local", "Local"), ("edit-check", "Local", "Drafted"),
    ]  # fmt: skip
    refusals = [
        e.message for e in events if isinstance(e, FindingRaised) and e.cls == "refused-transition"
    ]
    assert len(refusals) == 2
    assert "settled by the project operator" in refusals[0]
    assert "retire is no edge of the ratchet from Drafted" in refusals[1]
    decisions = {e.id: e for e in events if isinstance(e, DecisionRecorded)}
    assert all(m.decision in decisions for m in events if isinstance(m, GateMoved))
    state = ratchet.FOLD.fold(events)
    assert state.gates["local:memo"].defect == "printing secrets"
    # The builder's claimed edit re-opens approval; it does not switch the gate off.
    assert state.gates["local:memo"].state == "Drafted" and ratchet.blocks(
        state.gates["local:memo"]
    )


def accepted(project: str, slice_id: str, capabilities: list[str]) -> SlicePlanAccepted:
    plan = SlicePlan(
        slice=slice_id, capabilities=capabilities, units=[PlannedUnit(id=f"{slice_id}u")]
    )
    return SlicePlanAccepted(project=project, actor=SYSTEM, plan=plan, cause=slice_id)


async def test_the_nth_declaring_slice_across_two_projects_brings_the_profile_to_review(
    bus: Bus, project: str
) -> None:
    """With N=3, two slices in one project and one in another bring profile cli under
    review on the catalogue (a meta-finding to standards); the catalogue operator keeps it,
    the count restarts, and three more declaring slices bring it to review again."""
    other, catalogue = f"{project}b", f"{project}cat"
    rules = policy(project, catalogue=catalogue, review_every={"cli": 3})
    # Only this test's projects: other tests on the same server declare cli slices too,
    # and a ratchet following every project would count them.
    ours = [project, other, catalogue]
    for p, s in [(project, "S1"), (project, "S2"), (other, "S3")]:
        await bus.publish(accepted(p, s, ["cli"]))
    await bus.publish(accepted(other, "S4", ["library"]))
    await settled(bus, Ratchet(rules, projects=ours))
    events = await log(bus, catalogue)
    (review,) = [
        e for e in events if isinstance(e, FindingRaised) and e.criterion == "profile-review"
    ]
    assert review.target == parse_target("profile:cli") and review.owner == "standards"
    assert review.evidence["declared"] == 3
    assert ratchet.FOLD.fold(events).gates["profile:cli"].state == "ProfileUnderReview"
    for actor in (STANDARDS, OPERATOR, CATALOGUE_OP):  # only the catalogue operator keeps it
        await bus.publish(GateMoveClaim(project=catalogue, actor=actor, gate="cli",
                                        scope="profile", move="keep",
                                        why="still earns it"))  # fmt: skip
    await settled(bus, Ratchet(rules, projects=ours))
    events = await log(bus, catalogue)
    assert ratchet.FOLD.fold(events).gates["profile:cli"].state == "Profile"
    refused = [e for e in events if isinstance(e, FindingRaised) and e.cls == "refused-transition"]
    assert len(refused) == 2 and all("catalogue operator" in r.message for r in refused)
    for p, s in [(other, "S5"), (project, "S6")]:
        await bus.publish(accepted(p, s, ["cli"]))
    await settled(bus, Ratchet(rules, projects=ours))
    assert len([e for e in await log(bus, catalogue) if isinstance(e, FindingRaised)
                and e.criterion == "profile-review"]) == 1  # fmt: skip
    await bus.publish(accepted(other, "S7", ["cli"]))
    await settled(bus, Ratchet(rules, projects=ours))
    reviews = [e for e in await log(bus, catalogue)
               if isinstance(e, FindingRaised) and e.criterion == "profile-review"]  # fmt: skip
    assert [r.evidence["declared"] for r in reviews] == [3, 6]


def profile_policy(catalogue: str, *projects: str) -> Policy:
    """Each project runs profile cli's check ``cli-help``; two doubting projects bring the
    profile to review."""
    rule = MetaRule(
        proxies="a tool that explains itself", tiers=(Tier(above=0.10, over=10, action="review"),)
    )
    check = ConfiguredCheck("profile:cli@1", rule)
    return Policy(
        catalogue=catalogue,
        catalogue_operators=frozenset({"cat"}),
        checks={p: {"cli-help": check} for p in projects},
        review_every={"cli": 50},
        dismissed_across={"cli": 2},
    )


async def doubt(bus: Bus, project: str) -> None:
    """Ten findings of cli-help in ``project``, two dismissed as false positives (20%)."""
    raised = [gate_finding(project, "cli-help") for _ in range(10)]
    for finding in raised:
        await bus.publish(finding)
    await dismiss_all(bus, project, [f.id for f in raised[:2]])


async def test_a_profile_dismissed_across_projects_raises_a_catalogue_meta_finding(
    bus: Bus, project: str
) -> None:
    """One project's meta-finding on profile cli's check raises nothing on the catalogue,
    nor does a standards role's own meta claim in a third, nor an investigation's finding
    naming the profile there (its report is an agent's words); the second project's does: a
    catalogue-level meta-finding to standards naming both projects, and the profile under
    review. Kept by the catalogue operator, the doubts are spent: no second finding."""
    other, third, catalogue = f"{project}b", f"{project}c", f"{project}cat"
    rules = profile_policy(catalogue, project, other, third)
    served = [project, other, third, catalogue]  # not the other tests' projects on this server
    await doubt(bus, project)
    await bus.publish(FindingRaised(
        project=third, actor=STANDARDS, producer="standards", target=parse_target("check:cli-help"),
        severity="medium", criterion="meta:mine", cls="meta", message="cli-help is noisy",
        evidence={"profile": "cli"},
    ))  # fmt: skip
    await bus.publish(FindingRaised(  # an investigator's report may name any target and evidence
        project=third, actor=SYSTEM, producer="meta_rule", target=parse_target("check:cli-help"),
        severity="medium", criterion="trunk-red", cls="investigation", message="cli-help flaky",
        evidence={"profile": "cli"},
    ))  # fmt: skip
    await settled(bus, Ratchet(rules, projects=served))
    (local,) = [e for e in await log(bus, project) if isinstance(e, FindingRaised)
                and e.producer == "meta_rule"]  # fmt: skip
    assert local.evidence["profile"] == "cli" and local.owner == "standards"
    catalogue_meta = [e for e in await log(bus, catalogue) if isinstance(e, FindingRaised)]
    assert catalogue_meta == []
    await doubt(bus, other)
    await settled(bus, Ratchet(rules, projects=served))
    events = await log(bus, catalogue)
    (meta,) = [e for e in events if isinstance(e, FindingRaised)]
    assert (meta.criterion, meta.cls, meta.owner) == ("profile-dismissed", "meta", "standards")
    assert meta.target == parse_target("profile:cli")
    assert meta.evidence["projects"] == [project, other]
    assert ratchet.FOLD.fold(events).gates["profile:cli"].state == "ProfileUnderReview"
    await bus.publish(GateMoveClaim(project=catalogue, actor=CATALOGUE_OP, gate="cli",
                                    scope="profile", move="keep",
                                    why="the dismissals were one bad version"))  # fmt: skip
    await settled(bus, Ratchet(rules, projects=served))
    await settled(bus, Ratchet(rules, projects=served))
    events = await log(bus, catalogue)
    assert ratchet.FOLD.fold(events).gates["profile:cli"].state == "Profile"
    assert len([e for e in events if isinstance(e, FindingRaised)]) == 1


def cadence(catalogue: str, actor: Actor, move: str, every: int) -> GateMoveClaim:
    return GateMoveClaim(project=catalogue, actor=actor, gate="cli", scope="profile", move=move,
                         why=f"{move} to {every}", every=every)  # fmt: skip


async def test_lowering_n_is_the_standards_role_and_raising_it_the_catalogue_operator(
    bus: Bus, project: str
) -> None:
    """Profile cli's N (3 shipped) is lowered to 2 only by standards and raised to 10 only
    by the catalogue operator; a claim whose N goes the other way than its move says is
    refused (a "lower" to a larger N would be a loosening by standards). The new N is what
    the review count uses: the second declaring slice brings the profile to review, and
    the log replayed up to any move gives the N in force then."""
    catalogue = f"{project}cat"
    rules = policy(project, catalogue=catalogue, review_every={"cli": 3})
    served = [project, f"{project}b", catalogue]  # not the other tests' slices on this server
    claims = [
        cadence(catalogue, BUILDER, "lower-cadence", 2),
        cadence(catalogue, STANDARDS, "raise-cadence", 5),
        cadence(catalogue, STANDARDS, "lower-cadence", 4),
        cadence(catalogue, OPERATOR, "lower-cadence", 2),
        cadence(catalogue, STANDARDS, "lower-cadence", 2),
    ]
    for claim in claims:
        await bus.publish(claim)
    await settled(bus, Ratchet(rules, projects=served))
    events = await log(bus, catalogue)
    refused = [e.message for e in events
               if isinstance(e, FindingRaised) and e.cls == "refused-transition"]  # fmt: skip
    assert len(refused) == 4
    assert "settled by the standards role, not builder" in refused[0]
    assert "the catalogue operator" in refused[1] and "measurement" in refused[1]
    assert "to 4 does not lower its N (3)" in refused[2]
    assert "settled by the standards role, not operator" in refused[3]
    (lowered,) = [e for e in events if isinstance(e, GateMoved)]
    assert (lowered.claim, lowered.evidence["every"], lowered.evidence["was"]) == (
        claims[4].id, 2, 3,
    )  # fmt: skip
    assert ratchet.cadence(ratchet.FOLD.fold(events), "cli", 3) == 2
    for p, s in [(project, "S1"), (f"{project}b", "S2")]:
        await bus.publish(accepted(p, s, ["cli"]))
    await settled(bus, Ratchet(rules, projects=served))
    events = await log(bus, catalogue)
    (review,) = [
        e for e in events if isinstance(e, FindingRaised) and e.criterion == "profile-review"
    ]
    assert review.evidence == {"declared": 2, "every": 2}
    await bus.publish(GateMoveClaim(project=catalogue, actor=CATALOGUE_OP, gate="cli",
                                    scope="profile", move="keep", why="fine"))  # fmt: skip
    await settled(bus, Ratchet(rules, projects=served))
    raised = cadence(catalogue, CATALOGUE_OP, "raise-cadence", 10)
    await bus.publish(raised)
    await settled(bus, Ratchet(rules, projects=served))
    events = await log(bus, catalogue)
    assert ratchet.cadence(ratchet.FOLD.fold(events), "cli", 3) == 10
    upto = next(i for i, e in enumerate(events) if e.id == lowered.id) + 1
    assert ratchet.cadence(ratchet.FOLD.fold(events[:upto]), "cli", 3) == 2
    assert ratchet.cadence(ratchet.FOLD.fold(events[: upto - 1]), "cli", 3) == 3


async def test_two_catalogues_on_one_server_each_review_the_profile(bus: Bus, project: str) -> None:
    """Two ratchet daemons with their own catalogues count the same declaring slices: each
    raises its own review (the ids are the catalogue's, so neither is a duplicate of the
    other's)."""
    first, second = f"{project}cat1", f"{project}cat2"
    served = [project, first, second]
    for s in ("S1", "S2"):
        await bus.publish(accepted(project, s, ["cli"]))
    for catalogue in (first, second):
        rules = policy(project, catalogue=catalogue, review_every={"cli": 2})
        await settled(bus, Ratchet(rules, projects=served))
    for catalogue in (first, second):
        events = await log(bus, catalogue)
        assert [e.criterion for e in events if isinstance(e, FindingRaised)] == ["profile-review"]
        assert ratchet.FOLD.fold(events).gates["profile:cli"].state == "ProfileUnderReview"


async def test_two_lowerings_are_judged_one_after_the_other(bus: Bus, project: str) -> None:
    """Two standards claims lower N from 50 to 10, then "to 49": judged against the same
    state both would pass and the second would raise N (a loosening by standards). Judged
    in turn, the second meets N = 10 and is refused."""
    catalogue = f"{project}cat"
    rules = policy(project, catalogue=catalogue, review_every={"cli": 50})
    first = cadence(catalogue, STANDARDS, "lower-cadence", 10)
    second = cadence(catalogue, STANDARDS, "lower-cadence", 49)
    await bus.publish(first)
    await bus.publish(second)
    await settled(bus, Ratchet(rules, projects=[catalogue]))
    events = await log(bus, catalogue)
    assert [e.claim for e in events if isinstance(e, GateMoved)] == [first.id]
    (refusal,) = [
        e for e in events if isinstance(e, FindingRaised) and e.cls == "refused-transition"
    ]
    assert "to 49 does not lower its N (10)" in refusal.message
    assert ratchet.cadence(ratchet.FOLD.fold(events), "cli", 50) == 10
