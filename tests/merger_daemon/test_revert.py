"""The revert rule: trunk red after an advance is reverted at once, and the author is told;
an author who cannot resolve it hands the finding to planning as contract-wrong."""

from __future__ import annotations

import pytest
from merger_scene import CENTS_EXTENSION, SYSTEM, Scene, make_collision, make_trunk

from projections import merge_trunk
from projections.transitions import audit
from schemas import Actor, FindingRaised, FindingResolved, Outcome, UnitTransitioned
from schemas.merges import CandidateTested, MergeReverted, TrunkAdvanced
from schemas.reports import GaveUpReport

FLOW = "integration/test_flow.py::test_flow"


async def _collide(scene: Scene) -> tuple[str, str]:
    """U0 and U1, each green alone, red together on trunk's integration test; both queued.
    Waits until U1's merge was reverted and U1 returned. Returns the two heads."""
    _base, u0, u1 = make_collision(scene)
    for unit, head in (("U0", u0), ("U1", u1)):
        await scene.ready_unit(unit, head)
        await scene.approve(unit, head)
    await scene.start()
    await scene.until(
        lambda: scene.merges.reverted == 1 and scene.units.units["U1"].by == "returned"
    )
    return u0, u1


async def test_trunk_red_after_advance_is_reverted_with_the_failing_test_and_sibling_diff(
    scene: Scene,
) -> None:
    """Trunk red after U1 merged: reverted at once; U1's author gets the failing test, U0's diff."""
    await _collide(scene)
    events = await scene.events()
    advances = {e.unit: e for e in events if isinstance(e, TrunkAdvanced)}
    [reverted] = [e for e in events if isinstance(e, MergeReverted)]
    assert (reverted.unit, reverted.merge) == ("U1", advances["U1"].merge)
    assert [f.test for f in reverted.failing] == [FLOW]

    trunk = scene.repo.trunk()
    assert trunk == reverted.revert
    assert scene.repo.parents(trunk) == [advances["U1"].merge]
    assert scene.repo.tree(trunk) == advances["U0"].tree == reverted.tree
    assert "ext_cents.py" not in scene.repo.files(trunk)
    trunk_runs = [e for e in events if isinstance(e, CandidateTested) and e.candidate == trunk]
    assert [r.outcome for r in trunk_runs] == ["pass"]  # green again, from the cache
    assert all(c.cached for c in trunk_runs[0].checks)

    [finding] = [e for e in events if isinstance(e, FindingRaised) and e.cls == "trunk-red"]
    assert finding.id == reverted.finding
    assert (finding.producer, finding.unit, finding.owner) == ("trunk_gate", "U1", "builder:U1")
    assert finding.evidence["stage"] == "trunk"
    assert finding.evidence["failing_tests"] == [FLOW]
    assert finding.evidence["failing"][0]["check"] == "integration"
    assert finding.evidence["reverted_by"] == reverted.revert
    siblings = finding.evidence["siblings"]
    assert siblings["units"] == ["U0"]
    assert "+RATE = 1" in siblings["diff"]
    assert "ext_cents" not in siblings["diff"]  # the sibling's diff, not the unit's own
    assert scene.state_of("U0") == "done" and scene.state_of("U1") == "working"
    assert not scene.units.units["U1"].ready
    assert audit(events) == []  # every transition the merger made is one the table allows


@pytest.mark.parametrize("how", ["red-again", "gave-up"])
async def test_unresolved_trunk_red_is_promoted_to_contract_wrong(scene: Scene, how: str) -> None:
    """Red again on one interface, or giving up, promotes trunk-red to contract-wrong (planner)."""
    _u0, u1 = await _collide(scene)
    [first] = [e for e in await scene.events(FindingRaised) if e.cls == "trunk-red"]
    if how == "red-again":
        retry = scene.repo.commit(u1, {"ext_cents.py": CENTS_EXTENSION + "# retry\n"}, "retry")
        await scene.submit("U1", retry)
        await scene.approve("U1", retry)
        await scene.until(lambda: scene.merges.reverted == 2 and scene.merges.promoted == 1)
    else:
        builder = Actor(role="builder", principal="builder-U1")
        report = GaveUpReport(project=scene.project, actor=builder, unit="U1", why="stuck")
        await scene.publish(report)
        await scene.publish(
            UnitTransitioned(
                project=scene.project,
                actor=SYSTEM,
                unit="U1",
                state="failed",
                prior="working",
                by="gave-up",
                cause=report.id,
                outcome=Outcome(summary="stuck", ended_by="gave-up"),
            )
        )
        await scene.until(lambda: scene.merges.promoted == 1)

    # the red trunk runs' own gate findings resolve once trunk, reverted, passes their checks
    await scene.until(
        lambda: not scene.merges.gate_findings.red and not scene.merges.gate_findings.waiting
    )
    findings = await scene.events(FindingRaised)
    assert [f.id for f in findings if f.cls == "trunk-red"] == [first.id]  # none to the author
    [promoted] = [f for f in findings if f.cls == "contract-wrong"]
    assert (promoted.producer, promoted.owner, promoted.unit) == ("trunk_gate", "planner", "U1")
    assert promoted.evidence["why"] == how
    assert promoted.evidence["promoted_from"] == [first.id]
    assert promoted.evidence["interface"] == [FLOW]
    assert promoted.target.slice == "S1"  # type: ignore[union-attr]
    resolutions = await scene.events(FindingResolved)
    [closed] = [r for r in resolutions if r.finding == first.id]
    assert promoted.id in closed.why
    trunk_run = {f.id for f in findings if f.producer == "gate_runner" and f.unit is None}
    assert trunk_run and trunk_run <= {r.finding for r in resolutions}
    if how == "red-again":
        second = [e for e in await scene.events(MergeReverted)][-1]
        assert second.finding == promoted.id
        assert promoted.evidence["siblings"]["units"] == ["U0"]
    assert scene.merges.reds == {}


async def test_outside_push_that_turns_trunk_red_is_reverted(scene: Scene) -> None:
    """A red outside push is undone to the last green tree; the operator gets the finding."""
    base = make_trunk(scene)
    await scene.start()
    await scene.until(lambda: scene.merges.trunk.green_commit == base)
    broken = scene.repo.commit(base, {"app.py": "def total(items):\n    return 0\n"}, "oops")
    scene.repo.set_trunk(broken)
    await scene.until(
        lambda: scene.merges.reverted == 1 and merge_trunk.trunk_settled(scene.merges)
    )

    [reverted] = await scene.events(MergeReverted)
    assert (reverted.unit, reverted.merge) == (None, broken)
    assert scene.repo.trunk() == reverted.revert
    assert scene.repo.tree(reverted.revert) == scene.repo.tree(base)
    [finding] = [f for f in await scene.events(FindingRaised) if f.cls == "trunk-tampered"]
    assert (finding.owner, finding.id) == ("operator", reverted.finding)
    assert finding.evidence["failing_tests"] == ["tests/test_total.py::test_total"]
    assert finding.evidence["author"] == "Builder <builder@example.com>"
    assert broken[:12] in finding.message and "Builder <builder@example.com>" in finding.message
    assert "return 0" in finding.evidence["diff"]


async def test_a_push_that_sets_the_check_to_true_is_judged_with_trunks_config(
    scene: Scene,
) -> None:
    """A red push that also makes the check's command 'true', followed by a forged trunk
    pass, is gated with the last green trunk's configuration, and reverted as tampered."""
    base = make_trunk(scene)
    await scene.start()
    await scene.until(lambda: scene.merges.trunk.green_commit == base)
    loose = scene.config().replace("python -m pytest -q -p no:cacheprovider tests", "true")
    loose = loose.replace('parser = "pytest"', 'parser = "exit-code"')
    changes: dict[str, str | None] = {
        "app.py": "def total(items):\n    return 0\n",
        "loopbus.toml": loose,
    }
    pushed = scene.repo.commit(base, changes, "faster ci")
    forged = CandidateTested(
        project=scene.project,
        actor=Actor(role="builder", principal="evil"),
        stage="trunk",
        candidate=pushed,
        tree=scene.repo.tree(pushed),
        outcome="pass",
    )
    await scene.bus.publish(forged)
    scene.repo.set_trunk(pushed)
    await scene.until(
        lambda: scene.merges.reverted == 1 and merge_trunk.trunk_settled(scene.merges)
    )
    [reverted] = await scene.events(MergeReverted)
    assert reverted.merge == pushed and scene.repo.tree(reverted.revert) == scene.repo.tree(base)
    [finding] = [f for f in await scene.events(FindingRaised) if f.cls == "trunk-tampered"]
    assert finding.evidence["author"] == "Builder <builder@example.com>"
    failing = {t["test"] for t in finding.evidence["failing"]}
    assert {"gate-configuration", "tests/test_total.py::test_total"} <= failing
