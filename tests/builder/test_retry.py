"""A failed unit is tried again along the ladder while its slice's budget allows, and the
record says so — the real dispatcher, units and builder daemons on a real server and a
real repository, with a builder script that gives up once."""

from __future__ import annotations

import contextlib
import io
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

from builderkit import BASE_FILES, ScriptedBuilder, build_toml, of, running, wait_log
from reviewkit import GitRepo

from bus import Bus, connect
from loopbus.review_status import print_unit
from loopbus.slice_render import render_record
from projections import FOLDS, convergence, slice_dispatch
from schemas import Actor, Event, UnitTransitioned
from schemas.reports import CommitReport, GaveUpReport
from schemas.slices import (
    PlannedUnit,
    PlanSubmission,
    RetryDecided,
    RunEntryCompleted,
    SliceBudgets,
    SliceClosed,
    SlicePlan,
)
from workers.agents.config import RepoConfig, parse
from workers.builder.daemon import Builder
from workers.dispatcher.daemon import Dispatcher
from workers.dispatcher.repo import ProjectRepo
from workers.units.daemon import Units

PLANNER = Actor(role="planner", principal="planner-1")
IMPLEMENTED = {"src/app.py": "def total(xs):\n    return sum(xs)\n"}
GIVES_UP = {"stdout": {"status": "failed", "summary": "the sum needs a grammar"}}


@contextlib.asynccontextmanager
async def loop(
    url: str, project: str, repo: Path, found: Mapping[str, RepoConfig], data: Path
) -> AsyncIterator[None]:
    """The dispatcher (on the repository), the units daemon and the builder daemon."""
    buses = [await connect(url, name=f"retry-{n}") for n in range(3)]
    dispatcher = Dispatcher(buses[0], projects=[project], repos={project: ProjectRepo(repo)})
    try:
        async with (
            running(buses[0], dispatcher),
            running(buses[1], Units(projects=[project])),
            running(buses[2], Builder(buses[2], found, data, heartbeat_s=0.1)),
        ):
            yield
    finally:
        for bus in buses:
            await bus.close()


CHECK = '\n[[check]]\nid = "tests"\ncommand = "python -m pytest -q"\nparser = "pytest"\n'


def setup(tmp_path: Path, project: str, command: str) -> tuple[Path, dict[str, RepoConfig]]:
    """A repository whose trunk (main) has the base files, a check and a ``[build]``
    table, and the project's configuration read from it."""
    repo = GitRepo(tmp_path / "repo")
    text = build_toml(project, command) + CHECK
    repo.commit({**BASE_FILES, "loopbus.toml": text}, ref="refs/heads/main")
    repo.repo.refs.set_symbolic_ref(b"HEAD", b"refs/heads/main")
    return repo.path, {project: parse(text, repo=str(repo.path))}


def submission(project: str, budgets: SliceBudgets) -> PlanSubmission:
    unit = PlannedUnit(id="U1", title="add the numbers", files=["src/app.py"])
    plan = SlicePlan(slice="S1", units=[unit], budgets=budgets)
    return PlanSubmission(project=project, actor=PLANNER, plan=plan)


def states(events: list[Event]) -> dict[str, Any]:
    return {fold.name: fold.fold(events) for fold in FOLDS}


async def test_a_unit_whose_builder_gave_up_is_tried_again_one_rung_up(
    bus: Bus, nats_url: str, project: str, tmp_path: Path
) -> None:
    """The builder gives up on rung 1; the dispatcher retries the unit on rung 2 (the slice's
    budget allows it), moves it back to work, and the builder's next brief says why. The
    record, status and the folds all say "retried on rung 2 because ..."."""
    agent = ScriptedBuilder(tmp_path / "agent")
    agent.plan([GIVES_UP, {"write": IMPLEMENTED}])
    repo, found = setup(tmp_path, project, agent.command)
    async with loop(nats_url, project, repo, found, tmp_path / "data"):
        await bus.publish(submission(project, SliceBudgets(rework_rounds=3)))
        events = await wait_log(bus, project, lambda es: of(CommitReport, es), 60)
    [gave_up] = of(GaveUpReport, events)
    [failed] = of(UnitTransitioned, events, unit="U1", state="failed")
    assert failed.outcome is not None and failed.outcome.ended_by == "gave-up"
    [decided] = of(RetryDecided, events)
    assert (decided.retry, decided.failure, decided.from_rung, decided.to_rung) == (
        True,
        failed.id,
        1,
        2,
    )
    assert "the builder gave up on rung 1 (repair): the sum needs a grammar" in decided.why
    assert "rework 0 of 3" in decided.why
    [revived] = of(UnitTransitioned, events, unit="U1", by="retried")
    assert (revived.prior, revived.state, revived.cause) == ("failed", "working", decided.id)
    first, second = (call["brief"] for call in agent.calls())
    assert (first["rung"], second["rung"]) == (1, 2)
    assert second["problem"].startswith("the unit failed and is tried again on rung 2")
    assert of(RunEntryCompleted, events) == [] and of(SliceClosed, events) == []
    folded = states(events)
    record = "\n".join(render_record(folded["slices"]))
    assert "- retried on rung 2 because the builder gave up on rung 1 (repair)" in record
    view = convergence.unit_view(folded["convergence"], "U1")
    assert view is not None and view.rung == 2
    assert view.retries[0].startswith("retried on rung 2 (diagnose) because the builder gave up")
    shown = io.StringIO()
    with contextlib.redirect_stdout(shown):
        print_unit(project, "U1", folded, as_json=False)
    assert "  retried on rung 2 (diagnose) because the builder gave up" in shown.getvalue()
    assert gave_up.why == "the sum needs a grammar"


async def test_a_spent_budget_leaves_the_unit_failed_and_the_record_says_why(
    bus: Bus, nats_url: str, project: str, tmp_path: Path
) -> None:
    """With no rework round left in the slice's budget the unit is not retried: it stays
    failed, its entry completes, the slice closes, and the record names the budget."""
    agent = ScriptedBuilder(tmp_path / "agent")
    agent.plan([GIVES_UP, {"write": IMPLEMENTED}])
    repo, found = setup(tmp_path, project, agent.command)
    async with loop(nats_url, project, repo, found, tmp_path / "data"):
        await bus.publish(submission(project, SliceBudgets(rework_rounds=0)))
        events = await wait_log(bus, project, lambda es: of(SliceClosed, es), 60)
    [decided] = of(RetryDecided, events)
    assert decided.retry is False and decided.to_rung == decided.from_rung == 1
    assert "the unit has used 0 of the slice's 0 rework rounds" in decided.why
    assert of(UnitTransitioned, events, unit="U1", by="retried") == []
    [closed] = of(SliceClosed, events)
    assert closed.failed == ["U1"]
    assert len(agent.calls()) == 1
    folded = states(events)
    record = "\n".join(render_record(folded["slices"]))
    assert "- not retried: the builder gave up on rung 1 (repair)" in record
    assert slice_dispatch.settled_summary(folded["slices"].slices["S1"])["failed"] == ["U1"]
