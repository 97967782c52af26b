"""A slice's contract lands on trunk through the real merger, and the real dispatcher
starts the slice's units only once it has: one system commit with the trailer, its
``loopbus.toml`` adopted, the new criterion pending on a green trunk. A contract that
would edit a check is refused and its plan discarded."""

from __future__ import annotations

import asyncio
from typing import Any

from kernelkit import running
from merger_scene import Scene, base_files, make_trunk

from bus import Bus, read
from projections import contract_landing
from projections.contract_landing import Pending
from projections.merges import Adoption
from schemas import Actor, FindingRaised, project_subjects
from schemas.adoption import ConfigAdopted, config_digest
from schemas.contract import ContractChanges, ContractLanded, NewCheck, NewCriterion
from schemas.gates import GateResultRecorded
from schemas.merges import CandidateTested
from schemas.slices import (
    PlannedUnit,
    PlanSubmission,
    SlicePlan,
    SlicePlanAccepted,
    SlicePlanDiscarded,
    UnitDispatched,
)
from workers import history
from workers.dispatcher.daemon import Dispatcher
from workers.dispatcher.repo import ProjectRepo
from workers.gates.config import parse_config
from workers.kernel import Kernel
from workers.merger.landing_commit import prepare_contract

WAIT_S = 90
PLANNER = Actor(role="planner", principal="planner-1")
DOUBLE = "tests/test_double.py::test_double"
DOUBLE_TEXT = """\
import app


def test_double():
    assert hasattr(app, "double"), "app.double is not written yet"
    assert app.double([1, 2]) == 6
"""


def contract_plan(slice_id: str, unit: str, changes: ContractChanges | None) -> SlicePlan:
    criteria = [c.test for c in changes.criteria] if changes is not None else []
    return SlicePlan(
        slice=slice_id,
        units=[PlannedUnit(id=unit, files=["app.py"], criteria=criteria)],
        contract=changes,
    )


async def log_of(bus: Bus, project: str) -> list[tuple[int, Any]]:
    return [
        (r.seq, r.event)
        async for r in read(bus, subjects=[project_subjects(project)])
        if r.event is not None
    ]


async def until_on_log(kernel: Kernel, bus: Bus, project: str, found: Any) -> list[Any]:
    """The project's log once ``found(events)`` holds on it (a bounded wait while
    ``kernel`` runs the daemon)."""
    del kernel
    for _ in range(WAIT_S * 5):
        events = [e for _s, e in await log_of(bus, project)]
        if found(events):
            return events
        await asyncio.sleep(0.2)
    raise AssertionError(f"timed out after {WAIT_S}s waiting for the log")


def dispatched(events: list[Any], unit: str) -> list[UnitDispatched]:
    return [e for e in events if isinstance(e, UnitDispatched) and e.unit == unit]


async def test_a_contract_change_lands_after_the_first_green_and_releases_its_slice(
    scene: Scene,
) -> None:
    base = make_trunk(scene)
    project, bus = scene.project, scene.bus
    changes = ContractChanges(criteria=(NewCriterion(test=DOUBLE, text=DOUBLE_TEXT),))
    dispatcher = Dispatcher(
        bus, repos={project: ProjectRepo(scene.repo.path, trunk="main")}, projects=[project]
    )
    async with running(bus, dispatcher) as kernel:
        # S1 brings a contract and is accepted first; S0 brings none. With no merger
        # running the contract cannot land: S0's unit is dispatched, S1's is not (in
        # acceptance order it would have gone first).
        await bus.publish(
            PlanSubmission(project=project, actor=PLANNER, plan=contract_plan("S1", "U1", changes))
        )
        await until_on_log(
            kernel, bus, project, lambda es: any(isinstance(e, SlicePlanAccepted) for e in es)
        )
        await bus.publish(
            PlanSubmission(project=project, actor=PLANNER, plan=contract_plan("S0", "U0", None))
        )
        events = await until_on_log(kernel, bus, project, lambda es: dispatched(es, "U0"))
        assert dispatched(events, "U1") == []
        assert [e for e in events if isinstance(e, ContractLanded)] == []
        assert scene.repo.trunk() == base

        # The merger starts: it adopts trunk's file, gates trunk green, then lands S1's
        # contract; the dispatcher then starts U1 on the contract commit.
        await scene.start()
        events = await until_on_log(kernel, bus, project, lambda es: dispatched(es, "U1"))
        # S1's criterion is pending on trunk now, owned by S1's U1: another slice planned
        # meanwhile is not refused for leaving it unclaimed.
        await bus.publish(
            PlanSubmission(project=project, actor=PLANNER, plan=contract_plan("S2", "U2", None))
        )
        later = await until_on_log(kernel, bus, project, lambda es: dispatched(es, "U2"))
        [s2] = [e for e in later if isinstance(e, SlicePlanAccepted) and e.plan.slice == "S2"]
        assert DOUBLE in s2.pending

    by_id = {e.id: s for s, e in await log_of(bus, project)}
    [landed] = [e for e in events if isinstance(e, ContractLanded)]
    [u1] = dispatched(events, "U1")
    assert by_id[landed.id] < by_id[u1.id]
    assert u1.base == landed.commit
    assert landed.slice == "S1" and landed.previous == base and landed.criteria == [DOUBLE]

    # One system commit on top of the green trunk, with the trailer.
    assert scene.repo.parents(landed.commit) == [base]
    trailers = history.trailers(scene.repo.path, landed.commit)
    assert trailers["Loopbus-Contract"] == "S1"
    files = scene.repo.files(landed.commit)
    assert files["tests/test_double.py"] == DOUBLE_TEXT
    config = parse_config(files["loopbus.toml"])
    assert config.check("tests").pending == (DOUBLE,)
    assert f'pending = [\n    "{DOUBLE}",\n]' in files["loopbus.toml"]
    assert {p: files[p] for p in ("app.py", "tests/test_total.py")} == {
        p: scene.repo.files(base)[p] for p in ("app.py", "tests/test_total.py")
    }

    # Adopted with the landing: trunk is judged by the new file, and gated green on it,
    # the new criterion pending (failing, as it must until U1 makes it pass).
    adoptions = [e for e in events if isinstance(e, ConfigAdopted)]
    assert adoptions[-1].why == "contract" and adoptions[-1].commit == landed.commit
    assert adoptions[-1].digest == config_digest(files["loopbus.toml"]) == landed.config
    await scene.until(
        lambda: (c := scene.merges.trunk.checked) is not None and c.candidate == landed.commit
    )
    # Gated once, and only under the adopted contract (never under the old file first).
    runs = [
        e
        for _s, e in await log_of(bus, project)
        if isinstance(e, CandidateTested) and e.candidate == landed.commit
    ]
    assert [(r.outcome, r.config) for r in runs] == [("pass", landed.config)]
    assert scene.repo.trunk() == landed.commit
    results = [
        e
        for _s, e in await log_of(bus, project)
        if isinstance(e, GateResultRecorded) and e.tree == landed.tree and e.check == "tests"
    ]
    assert results and all(r.tests.get(DOUBLE) == "pending-failed" for r in results)
    # Not taken for an outside push: no tampering red, no restore.
    findings = [e for _s, e in await log_of(bus, project) if isinstance(e, FindingRaised)]
    assert [f for f in findings if f.cls in ("trunk-red", "trunk-tampered")] == []
    state = scene.kernel.project_states(project)[contract_landing.FOLD.name]  # type: ignore[union-attr]
    assert not contract_landing.held(state, "S1")


async def test_a_contract_that_edits_an_existing_check_is_refused_and_its_plan_discarded(
    scene: Scene,
) -> None:
    base = make_trunk(scene)
    project, bus = scene.project, scene.bus
    edit = ContractChanges(checks=(NewCheck(id="tests", command="true"),))
    dispatcher = Dispatcher(
        bus, repos={project: ProjectRepo(scene.repo.path, trunk="main")}, projects=[project]
    )
    await scene.start()
    await scene.until(lambda: scene.merges.trunk.green_commit == base)
    async with running(bus, dispatcher) as kernel:
        await bus.publish(
            PlanSubmission(project=project, actor=PLANNER, plan=contract_plan("S1", "U1", edit))
        )
        events = await until_on_log(
            kernel,
            bus,
            project,
            lambda es: [e for e in es if isinstance(e, SlicePlanDiscarded)],
        )
    [refused] = [
        f for f in events if isinstance(f, FindingRaised) and f.criterion.startswith("contract-")
    ]
    assert refused.actor.role == "system" and refused.owner == "planner"
    assert refused.cls == "refused-transition" and refused.slice == "S1"
    assert "'tests' is a check trunk has already" in refused.message
    assert "never edits one" in refused.message
    assert "the planner is asked again with these reasons" in refused.message
    # The slice is not held for the run: the dispatcher discards its plan, naming the
    # refusal, so the slice can be planned again (tests/contract/test_refused_replan.py).
    [discarded] = [e for e in events if isinstance(e, SlicePlanDiscarded)]
    assert (discarded.slice, discarded.cause) == ("S1", refused.id)
    assert scene.repo.trunk() == base
    assert [e for e in events if isinstance(e, ContractLanded)] == []
    assert dispatched(events, "U1") == []

    def released() -> bool:
        states = scene.kernel.project_states(project)  # type: ignore[union-attr]
        return not contract_landing.held(states[contract_landing.FOLD.name], "S1")

    await scene.until(released)


def test_the_merger_refuses_a_criterion_text_holding_more_than_its_test(scene: Scene) -> None:
    # Defence in depth: plan validation refuses this, but the merger writes only what it
    # checked itself, so a text that would skip the file's tests never reaches trunk.
    base = make_trunk(scene)
    config = base_files(scene)["loopbus.toml"]
    assert config is not None
    text = "import pytest\n\npytestmark = pytest.mark.skip\n\n\n" + DOUBLE_TEXT
    pending = Pending(
        slice="S1",
        accepted="a1",
        changes=ContractChanges(criteria=(NewCriterion(test=DOUBLE, text=text),)),
    )
    adopted = Adoption(id="c1", commit=base, digest="d", text=config, why="w", by="op")
    files, refused = prepare_contract(scene.repo.path, base, pending, adopted)
    assert files == {}
    assert refused == [
        "contract.criteria[0].text holds Assign at line 3 beside test_double; a criterion's "
        "text is imports plus exactly one top-level function, def test_double, and nothing else"
    ]
