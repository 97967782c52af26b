"""The configuration that judges trunk is the adopted one, never a pushed commit's own,
whether or not trunk has ever been green: an outside push that loosens a check stays red
and is named as tampering; an operator's adoption makes a new configuration judge trunk;
a merged unit's allowed edit is adopted with its merge."""

from __future__ import annotations

from merger_scene import Scene, base_files, make_trunk

from projections import merge_trunk
from schemas import Actor, FindingRaised
from schemas.adoption import ConfigAdopt, ConfigAdopted, config_digest
from schemas.merges import CandidateTested, MergeReverted, TrunkAdvanced
from workers.merger.adoption import adopt_on_first_start

DOUBLE_TEST = """\
from app import total


def test_double():
    assert total([1, 2]) == 6
"""
PYTEST = "python -m pytest -q -p no:cacheprovider tests"
OLIVE = Actor(role="operator", principal="olive")
COMPILES = '\n[[check]]\nid = "compiles"\ncommand = "python -m compileall -q ."\n'


def never_green(scene: Scene) -> str:
    """Trunk whose suite has a failing test: it has never been green."""
    files = base_files(scene)
    files["tests/test_double.py"] = DOUBLE_TEST
    sha = scene.repo.commit(None, files, "base")
    scene.repo.set_trunk(sha)
    return sha


async def adopt_as_up(scene: Scene, trunk: str) -> ConfigAdopted:
    """What `loopbus up` does on its first start on the project."""
    fact = await adopt_on_first_start(
        scene.bus, scene.repo.path, trunk, scene.project, Actor(role="system", principal="up"),
        by="olive@host",
    )  # fmt: skip
    assert fact is not None
    return fact


def checked_at(scene: Scene, commit: str) -> merge_trunk.Tested | None:
    checked = scene.merges.trunk.checked
    return checked if checked is not None and checked.candidate == commit else None


async def test_a_push_setting_the_check_to_true_on_a_never_green_trunk_stays_red(
    scene: Scene,
) -> None:
    """Trunk never green; a push makes the check's command `true` (the real test still
    fails): it is judged with the adopted configuration, stays red, is named as tampering
    in the operator's finding, and its file is not adopted."""
    base = never_green(scene)
    first = await adopt_as_up(scene, base)
    await scene.start()
    await scene.until(lambda: scene.merges.trunk.red_notice == base)
    loose = scene.config().replace(PYTEST, "true").replace('parser = "pytest"', "")
    pushed = scene.repo.commit(base, {"loopbus.toml": loose}, "faster ci")
    scene.repo.set_trunk(pushed)
    await scene.until(lambda: checked_at(scene, pushed) is not None)
    checked = checked_at(scene, pushed)
    assert checked is not None and not checked.green  # its own `true` would have passed
    await scene.until(lambda: scene.merges.trunk.red_notice == pushed)
    assert checked.config == first.digest
    failing = {t.test for t in checked.failing}
    assert {"gate-configuration", "tests/test_double.py::test_double"} <= failing
    assert scene.merges.trunk.green_commit is None and scene.repo.trunk() == pushed
    assert await scene.events(ConfigAdopted) == [first]
    assert scene.merges.adopted is not None and scene.merges.adopted.digest == first.digest
    [notice] = [
        f
        for f in await scene.events(FindingRaised)
        if f.cls == "trunk-red" and f.evidence.get("trunk") == pushed
    ]
    assert notice.owner == "operator" and notice.evidence["tampered"] is True
    assert "tampering" in notice.message


async def test_an_operators_adoption_makes_a_new_configuration_judge_trunk(scene: Scene) -> None:
    """A pushed configuration is red until it is adopted; an agent's adoption claim is
    refused; the operator's makes it the one that judges trunk, which turns green."""
    base = never_green(scene)
    first = await adopt_as_up(scene, base)
    await scene.start()
    await scene.until(lambda: scene.merges.trunk.red_notice == base)
    only_total = scene.config().replace(PYTEST, f"{PYTEST}/test_total.py")
    pushed = scene.repo.commit(base, {"loopbus.toml": only_total}, "gate on totals only")
    scene.repo.set_trunk(pushed)
    await scene.until(lambda: checked_at(scene, pushed) is not None)
    checked = checked_at(scene, pushed)
    assert checked is not None and not checked.green  # a push alone adopts nothing
    assert "gate-configuration" in {t.test for t in checked.failing}

    agent = ConfigAdopt(
        project=scene.project, actor=Actor(role="builder", principal="evil"), commit=pushed
    )
    await scene.publish(agent)
    short = ConfigAdopt(project=scene.project, actor=OLIVE, commit=pushed[:12], why="totals")
    await scene.publish(short)
    claim = ConfigAdopt(project=scene.project, actor=OLIVE, commit=pushed, why="totals")
    await scene.publish(claim)
    digest = config_digest(only_total)
    await scene.until(
        lambda: (
            (checked := checked_at(scene, pushed)) is not None
            and checked.green
            and checked.config == digest
        )
    )

    adoptions = await scene.events(ConfigAdopted)
    assert [a.why for a in adoptions] == ["first-start", "operator"]
    assert adoptions[0] == first
    fact = adoptions[1]
    assert (fact.commit, fact.text, fact.by, fact.cause) == (pushed, only_total, "olive", claim.id)
    refusals = {
        f.evidence["claim"]: f.criterion
        for f in await scene.events(FindingRaised)
        if f.cls == "refused-transition"
    }
    assert refusals == {agent.id: "adopter-role", short.id: "commit-not-a-sha"}
    assert scene.merges.trunk.green_commit == pushed and scene.merges.adopt_claims == []


async def test_a_merged_units_added_check_is_adopted_with_its_merge(scene: Scene) -> None:
    """A unit adding a check (an allowed edit, judged under the adopted configuration) is
    merged, and the system adopts the merged file in the same batch as the advance; trunk
    is then judged with it."""
    base = make_trunk(scene)
    first = await adopt_as_up(scene, base)
    await scene.start()
    await scene.until(lambda: scene.merges.trunk.green_commit == base)
    added = scene.config() + COMPILES
    head = scene.repo.commit(base, {"loopbus.toml": added}, "a compile check")
    await scene.ready_unit("U1", head)
    await scene.approve("U1", head)
    await scene.until(lambda: scene.state_of("U1") == "done")

    [advance] = await scene.events(TrunkAdvanced)
    adoptions = await scene.events(ConfigAdopted)
    assert [a.why for a in adoptions] == ["first-start", "merge"] and adoptions[0] == first
    merged = adoptions[1]
    assert (merged.unit, merged.commit, merged.cause) == ("U1", advance.merge, advance.id)
    assert merged.text == added and merged.digest == config_digest(added)
    [trunk_run] = [
        t
        for t in await scene.events(CandidateTested)
        if t.stage == "trunk" and t.candidate == advance.merge
    ]
    assert trunk_run.config == merged.digest and trunk_run.green
    assert {c.check for c in trunk_run.checks} == {"tests", "compiles"}


async def test_a_reverted_merge_takes_its_adopted_edit_with_it(scene: Scene) -> None:
    """A unit adds a check and breaks a trunk-only test: it merges (its edit adopted), trunk
    is red, the merge is reverted, and the configuration before it is adopted again in the
    same batch as the revert."""
    base = make_trunk(scene, trunk_only=True)
    first = await adopt_as_up(scene, base)
    await scene.start()
    await scene.until(lambda: scene.merges.trunk.green_commit == base)
    added = scene.config(trunk_only=True) + COMPILES
    head = scene.repo.commit(
        base,
        {"loopbus.toml": added, "integration/test_flow.py": "def test_flow():\n    assert 0\n"},
        "a compile check, and a broken flow",
    )
    await scene.ready_unit("U1", head)
    await scene.approve("U1", head)
    await scene.until(
        lambda: scene.merges.reverted == 1 and scene.units.units["U1"].by == "returned"
    )
    [reverted] = await scene.events(MergeReverted)
    adoptions = await scene.events(ConfigAdopted)
    assert [a.why for a in adoptions] == ["first-start", "merge", "revert"]
    undone = adoptions[2]
    assert (undone.text, undone.digest, undone.unit) == (first.text, first.digest, "U1")
    assert undone.cause == adoptions[1].cause  # the advance its revert undid
    assert scene.merges.adopted is not None and scene.merges.adopted.digest == first.digest
    await scene.until(lambda: (c := checked_at(scene, reverted.revert)) is not None and c.green)
