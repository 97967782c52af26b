"""The merge queue: trunk only ever moves to a tree the trunk gates passed."""

from __future__ import annotations

from merger_scene import SYSTEM, Scene, make_trunk

from projections import merges as merges_fold
from schemas import Actor, FindingRaised, UnitTransitioned
from schemas.builds import DecisionOption
from schemas.decisions import DecisionChoice, DecisionRecorded, DecisionRequested
from schemas.gates import GateResultRecorded
from schemas.merges import CandidateTested, MergeConflicted, TrunkAdvanced
from schemas.slices import UnitDispatched

CENTS = """\
def total(items):
    return sum(items) * 100
"""

CENTS_TEST = """\
from app import total


def test_total():
    assert total([1, 2]) == 300
"""

INVOICE = """\
from app import total


def invoice(items):
    return f"total={total(items)}"
"""

INVOICE_TEST = """\
from invoice import invoice


def test_invoice():
    assert invoice([1, 2]) == "total=3"
"""


async def test_clean_merge_advances_trunk_only_after_green_gates(scene: Scene) -> None:
    """Trunk moves only to a candidate gated green; trunk's run is cached; then the unit is done."""
    base = make_trunk(scene)
    head = scene.repo.commit(base, {"helper.py": "def helper():\n    return 1\n"}, "helper")
    await scene.ready_unit("U1", head)
    await scene.approve("U1", head)
    await scene.start()
    await scene.until(lambda: scene.state_of("U1") == "done")

    events = [e for e in await scene.events() if getattr(e, "unit", None) == "U1"]
    order = [
        (type(e).__name__, getattr(e, "stage", None) or getattr(e, "state", None))
        for e in events
        if isinstance(e, CandidateTested | TrunkAdvanced)
        or (isinstance(e, UnitTransitioned) and e.by == "merged")
    ]
    assert order == [
        ("CandidateTested", "candidate"),
        ("TrunkAdvanced", None),
        ("CandidateTested", "trunk"),
        ("UnitTransitioned", "done"),
    ]
    candidate, trunk_run = (e for e in events if isinstance(e, CandidateTested))
    [advanced] = (e for e in events if isinstance(e, TrunkAdvanced))
    assert candidate.outcome == "pass" and candidate.base == base
    assert (advanced.merge, advanced.tree) == (candidate.candidate, candidate.tree)
    assert (advanced.unit, advanced.commit, advanced.previous) == ("U1", head, base)
    assert scene.repo.trunk() == advanced.merge
    assert scene.repo.parents(advanced.merge) == [base, head]
    assert scene.repo.tree(advanced.merge) == advanced.tree
    assert trunk_run.candidate == advanced.merge and trunk_run.outcome == "pass"
    assert trunk_run.checks and all(check.cached for check in trunk_run.checks)
    results = await scene.events(GateResultRecorded)
    runs = [e for e in results if e.tree == advanced.tree]
    assert len(runs) == 1  # the tests ran once for the merged tree: on the candidate
    replayed = merges_fold.FOLD.fold(await scene.events())
    assert merges_fold.FOLD.encode(replayed) == merges_fold.FOLD.encode(scene.merges)
    [done] = (e for e in events if isinstance(e, UnitTransitioned) and e.by == "merged")
    assert done.outcome is not None and done.outcome.ended_by == "merge"
    assert done.cause == trunk_run.id


async def test_red_merge_never_reaches_trunk_and_the_rest_is_retested_without_it(
    scene: Scene,
) -> None:
    """A merge red on top of U1 never reaches trunk; U3 is re-tested and merged without it."""
    base = make_trunk(scene)
    u1 = scene.repo.commit(base, {"app.py": CENTS, "tests/test_total.py": CENTS_TEST}, "cents")
    u2 = scene.repo.commit(
        base, {"invoice.py": INVOICE, "tests/test_invoice.py": INVOICE_TEST}, "invoice"
    )
    u3 = scene.repo.commit(base, {"util.py": "def util():\n    return 2\n"}, "util")
    for unit, head in (("U1", u1), ("U2", u2), ("U3", u3)):
        await scene.ready_unit(unit, head)
        await scene.approve(unit, head)
    await scene.start(window=3)
    await scene.until(
        lambda: (
            scene.state_of("U1") == "done"
            and scene.state_of("U3") == "done"
            and scene.units.units["U2"].by == "returned"
        )
    )

    events = await scene.events()
    advances = {e.unit: e for e in events if isinstance(e, TrunkAdvanced)}
    assert sorted(advances) == ["U1", "U3"]
    trunk_files = scene.repo.files(scene.repo.trunk())
    assert "invoice.py" not in trunk_files
    assert "util.py" in trunk_files and "* 100" in trunk_files["app.py"]

    [red] = [e for e in events if isinstance(e, CandidateTested) and e.unit == "U2"]
    assert red.outcome == "fail" and red.base == advances["U1"].merge
    assert [f.test for f in red.failing] == ["tests/test_invoice.py::test_invoice"]
    u3_decisive = [
        e
        for e in events
        if isinstance(e, CandidateTested) and e.unit == "U3" and e.stage == "candidate"
    ]
    assert [e.base for e in u3_decisive] == [advances["U1"].merge]  # on trunk, without U2

    [finding] = [e for e in events if isinstance(e, FindingRaised) and e.cls == "trunk-red"]
    assert (finding.producer, finding.unit, finding.owner) == ("trunk_gate", "U2", "builder:U2")
    assert finding.evidence["stage"] == "candidate"
    assert finding.evidence["failing_tests"] == ["tests/test_invoice.py::test_invoice"]
    assert finding.evidence["siblings"]["units"] == ["U1"]
    assert "+    return sum(items) * 100" in finding.evidence["siblings"]["diff"]
    assert finding.evidence["authors"] == ["builder-U2"]
    [returned] = [e for e in events if isinstance(e, UnitTransitioned) and e.by == "returned"]
    assert (returned.unit, returned.ready, returned.cause) == ("U2", False, red.id)


async def test_two_units_adding_functions_to_one_file_both_merge(scene: Scene) -> None:
    """Additions at the same place in one file are not a conflict: the entity merge keeps both."""
    base = make_trunk(scene)
    app = scene.repo.files(base)["app.py"]
    u1 = scene.repo.commit(
        base, {"app.py": app + "\n\ndef mean(xs):\n    return sum(xs) / len(xs)\n"}
    )
    u2 = scene.repo.commit(base, {"app.py": app + "\n\ndef peak(xs):\n    return max(xs)\n"})
    for unit, head in (("U1", u1), ("U2", u2)):
        await scene.ready_unit(unit, head)
        await scene.approve(unit, head)
    await scene.start()
    await scene.until(lambda: scene.state_of("U1") == "done" and scene.state_of("U2") == "done")

    merged = scene.repo.files(scene.repo.trunk())["app.py"]
    assert "def mean(xs)" in merged and "def peak(xs)" in merged
    assert await scene.events(MergeConflicted) == []


async def test_real_conflict_is_a_finding_with_the_hunks(scene: Scene) -> None:
    """Both units change one line of total: the second does not merge; its author gets the hunks."""
    base = make_trunk(scene)
    u1 = scene.repo.commit(base, {"app.py": "def total(items):\n    return sum(items) + 0\n"})
    u2 = scene.repo.commit(base, {"app.py": "def total(items):\n    return sum(list(items))\n"})
    for unit, head in (("U1", u1), ("U2", u2)):
        await scene.ready_unit(unit, head)
        await scene.approve(unit, head)
    await scene.start()
    await scene.until(
        lambda: scene.state_of("U1") == "done" and scene.units.units["U2"].by == "returned"
    )

    [conflicted] = await scene.events(MergeConflicted)
    assert (conflicted.unit, conflicted.head, conflicted.paths) == ("U2", u2, ["app.py"])
    [finding] = [e for e in await scene.events(FindingRaised) if e.cls == "merge-conflict"]
    assert finding.id == conflicted.finding
    assert (finding.unit, finding.owner) == ("U2", "builder:U2")
    assert "function total" in finding.message
    [file] = finding.evidence["files"]
    [entity] = file["entities"]
    assert (entity["kind"], entity["name"], entity["reason"]) == (
        "function",
        "total",
        "both-modified",
    )
    [hunk] = entity["hunks"]
    assert "sum(items) + 0" in hunk["ours"] and "sum(list(items))" in hunk["theirs"]
    assert scene.repo.files(scene.repo.trunk())["app.py"] == scene.repo.files(u1)["app.py"]
    trunk = scene.repo.trunk()
    assert (finding.evidence["head"], finding.evidence["trunk"]) == (u2, trunk)
    assert finding.evidence["merge_base"] == base


async def auto_pick(scene: Scene, unit: str) -> None:
    """``long`` mode's pick of a decision for ``unit``, as the builder daemon records it."""
    dispatched = UnitDispatched(
        project=scene.project, actor=SYSTEM, slice="S1", unit=unit, title="t", wave=0,
        sub_wave=0, position=0, attempt=1, files=[], criteria=[],
    )  # fmt: skip
    asked = DecisionRequested(
        project=scene.project, actor=SYSTEM, unit=unit, decision_id="rounding",
        question="round totals to cents?",
        options=[DecisionOption(id="cents"), DecisionOption(id="raw")],
        recommended_default="cents", confidence="high", routed="auto", autonomy="risky",
    )  # fmt: skip
    picked = DecisionRecorded(
        project=scene.project, actor=SYSTEM, unit=unit, decision_id="rounding",
        question=asked.question, options=["cents", "raw"], chosen="cents", owner="auto",
        confidence=0.9, cause=asked.id,
    )  # fmt: skip
    for event in (dispatched, asked, picked):
        await scene.publish(event)


async def test_an_unseen_auto_pick_holds_its_unit_until_an_operator_confirms_it(
    scene: Scene,
) -> None:
    """With no reviewer to see it, a unit whose decision ``long`` mode picked alone waits
    in the queue after its approval while the unit behind it merges; a builder's forged
    confirmation frees nothing, and the operator's confirmation lets it merge."""
    base = make_trunk(scene)
    u1 = scene.repo.commit(base, {"helper.py": "def helper():\n    return 1\n"}, "helper")
    u2 = scene.repo.commit(base, {"util.py": "def util():\n    return 2\n"}, "util")
    await auto_pick(scene, "U1")
    for unit, head in (("U1", u1), ("U2", u2)):
        await scene.ready_unit(unit, head)
        await scene.approve(unit, head)
    await scene.start()
    await scene.until(lambda: scene.state_of("U2") == "done")
    assert scene.state_of("U1") == "working"
    assert [e.unit for e in scene.merges.queue] == ["U1"]
    tested = [e for e in await scene.events(CandidateTested) if e.unit == "U1"]
    assert tested == []

    choice = {"project": scene.project, "unit": "U1", "decision_id": "rounding"}
    forged = DecisionChoice(actor=Actor(role="builder", principal="b1"), choose="cents", **choice)
    confirmed = DecisionChoice(
        actor=Actor(role="operator", principal="olive"), choose="cents", **choice
    )
    await scene.publish(forged)
    await scene.publish(confirmed)
    await scene.until(lambda: scene.state_of("U1") == "done")
    events = await scene.events()
    order = [e.id for e in events]
    first_test = min(
        order.index(e.id) for e in events if isinstance(e, CandidateTested) and e.unit == "U1"
    )
    assert order.index(confirmed.id) < first_test  # nothing of U1 was tested before it
