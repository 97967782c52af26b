"""The planner daemon against a real server, a real repository and the real dispatcher, with
stand-in planner and reconnaissance commands run through the agent runner: a refused plan
re-asked with its reasons; a planner that gives up; a blocked-by-fact finding re-running
reconnaissance and re-planning; supervised autonomy waiting for ``approve --plan``; the
next slice planned after one closes."""

from __future__ import annotations

import asyncio
from pathlib import Path

from kernelkit import running
from logkit import log_events, of, wait_log
from plannerkit import (
    SYSTEM,
    check_criteria,
    loopbus,
    plan_toml,
    planned_repo,
    planner,
    recon,
    start_charter,
)
from reviewkit import CRITERION, GitRepo, config_of, sandbox_for, setup_repo

from bus import Bus
from schemas import Actor, FindingRaised
from schemas.planning import (
    CAPPED,
    GAVE_UP,
    PlanAttemptRefused,
    PlanProposed,
    ReconRecorded,
)
from schemas.slices import (
    BootResult,
    PlanSubmission,
    SliceClosed,
    SlicePlanAccepted,
    SlicePlanDiscarded,
)
from schemas.targets import PlanTarget
from workers.dispatcher.daemon import Dispatcher
from workers.dispatcher.repo import ProjectRepo
from workers.planner.daemon import Planner

CYCLE = plan_toml("S1", "U1", "U2", blocked={"U1": "U2", "U2": "U1"})
GOOD = plan_toml("S1", "U1", "U2", blocked={"U2": "U1"})


def count(kind: type, n: int = 1, **fields: object):  # type: ignore[no-untyped-def]
    return lambda events: len(of(kind, events, **fields)) >= n


def dispatcher(bus: Bus, project: str, repo: Path) -> Dispatcher:
    return Dispatcher(bus, projects=[project], repos={project: ProjectRepo(repo, trunk="main")})


async def test_a_refused_plan_is_asked_again_with_its_reasons_and_the_second_accepted(
    bus: Bus, project: str, tmp_path: Path, agent_dir: Path
) -> None:
    """A cycle first, a good plan second: the first is refused with the cycle named, the
    second brief carries that reason, and the second plan is proposed, submitted and
    accepted by the dispatcher."""
    stand_in = planner(agent_dir, {"S1": [CYCLE, GOOD]})
    repo = planned_repo(tmp_path, project, stand_in.command)
    async with (
        running(bus, dispatcher(bus, project, repo.path)),
        running(bus, Planner(config_of(repo), poll_s=0.1)),
    ):
        await start_charter(bus, project, repo.base)  # type: ignore[attr-defined]
        events = await wait_log(bus, project, count(SlicePlanAccepted), timeout=60)
    (refused,) = of(PlanAttemptRefused, events)
    assert refused.slice == "S1" and refused.attempt == 1
    assert any("dependency cycle: U1 -> U2 -> U1" in p for p in refused.problems)
    (proposed,) = of(PlanProposed, events)
    assert (proposed.attempt, proposed.autonomy) == (2, "full")
    (submission,) = of(PlanSubmission, events)
    assert submission.id == proposed.submission
    assert submission.actor == Actor(role="planner", principal="planner")
    (accepted,) = of(SlicePlanAccepted, events)
    assert accepted.cause == submission.id and [u.id for u in accepted.plan.units] == ["U1", "U2"]
    first, second = stand_in.calls()
    assert (first["slice"], first["attempt"], first["refusals"]) == ("S1", 1, [])
    assert second["attempt"] == 2
    assert any("dependency cycle: U1 -> U2 -> U1" in r for r in second["refusals"])
    assert second["pending"] == [CRITERION]
    assert "src/app.py" in [entry["path"] for entry in second["tree"]]
    assert second["charter"]["id"] == "C1" and second["lessons"] == []


async def test_after_max_tries_bad_answers_the_planner_gives_up_with_a_finding(
    bus: Bus, project: str, tmp_path: Path, agent_dir: Path
) -> None:
    stand_in = planner(agent_dir, {"S1": [CYCLE]})
    repo = planned_repo(tmp_path, project, stand_in.command, max_tries=2)
    async with running(bus, Planner(config_of(repo), poll_s=0.1)) as kernel:
        await start_charter(bus, project, repo.base)  # type: ignore[attr-defined]
        events = await wait_log(bus, project, count(FindingRaised, criterion=GAVE_UP), timeout=60)
        states = kernel.project_states(project)
        await kernel.until(lambda: bool(states["planner"].gave_up), 30)
        await kernel.wait_settled(kernel.folded)
    assert [r.attempt for r in of(PlanAttemptRefused, events)] == [1, 2]
    (finding,) = of(FindingRaised, events, criterion=GAVE_UP)
    assert (finding.owner, finding.cls, finding.actor.role) == ("operator", "meta", "system")
    assert "dependency cycle" in finding.message
    assert of(PlanProposed, events) == []
    assert len(stand_in.calls()) == 2  # not asked a third time


async def test_a_blocked_by_fact_finding_reruns_reconnaissance_and_replans(
    bus: Bus, project: str, tmp_path: Path, agent_dir: Path
) -> None:
    """Reconnaissance runs before the first plan; a blocked-by-fact finding naming one of its
    facts has the dispatcher discard the slice's plan, reconnaissance run again (told which
    fact was said false), and the planner asked again with the new facts."""
    scout = recon(
        agent_dir,
        [
            {"facts": [{"id": "F1", "text": "the totals live in src/app.py"}]},
            {"facts": [{"id": "F1", "text": "the totals live in src/totals.py"}]},
        ],
    )
    again = plan_toml("S1", "U3")
    stand_in = planner(agent_dir, {"S1": [GOOD, again]})
    repo = planned_repo(tmp_path, project, stand_in.command, scout.command)
    async with (
        running(bus, dispatcher(bus, project, repo.path)),
        running(bus, Planner(config_of(repo), poll_s=0.1)),
    ):
        await start_charter(bus, project, repo.base)  # type: ignore[attr-defined]
        await wait_log(bus, project, count(SlicePlanAccepted), timeout=60)
        blocked = FindingRaised(
            project=project,
            actor=Actor(role="operator", principal="ana"),
            producer="operator",
            target=PlanTarget(slice="S1"),
            severity="high",
            criterion="totals-location",
            cls="blocked-by-fact",
            message="there is no totals code in src/app.py",
            evidence={"fact": "F1"},
        )
        await bus.publish(blocked)
        events = await wait_log(bus, project, count(SlicePlanAccepted, 2), timeout=60)
    first, second = of(ReconRecorded, events)
    assert first.answers == [] and second.answers == [blocked.id]
    assert second.facts[0].text == "the totals live in src/totals.py"
    (discarded,) = of(SlicePlanDiscarded, events)
    assert discarded.cause == blocked.id
    rerun = scout.calls()[1]
    assert [(f["id"], f["fact"]) for f in rerun["invalidated"]] == [(blocked.id, "F1")]
    assert rerun["previous"][0]["text"] == "the totals live in src/app.py"
    # Re-planned after the re-run: U1 and U2 are taken by the discarded plan, so the first
    # answer of the new round is refused and the second accepted.
    accepted = of(SlicePlanAccepted, events)
    assert [u.id for u in accepted[1].plan.units] == ["U3"]
    assert events.index(second) < events.index(accepted[1])
    last = stand_in.calls()[-1]
    assert [f["text"] for f in last["recon"]] == ["the totals live in src/totals.py"]
    assert blocked.id in [f["id"] for f in last["findings"]]
    assert any("U1 is used by an earlier slice" in r for r in last["refusals"])


def blocked_by(project: str, n: int) -> FindingRaised:
    return FindingRaised(
        project=project,
        actor=Actor(role="operator", principal="ana"),
        producer="operator",
        target=PlanTarget(slice="S1"),
        severity="high",
        criterion="totals-location",
        cls="blocked-by-fact",
        message=f"there is no totals code where F1 says ({n})",
        evidence={"fact": "F1"},
    )


async def test_blocked_by_fact_findings_past_the_runs_cap_stop_recon_and_planning(
    bus: Bus, project: str, tmp_path: Path, agent_dir: Path
) -> None:
    """Each blocked-by-fact finding naming a reconnaissance fact re-runs reconnaissance and
    restarts the planner's round; with ``[recon] max_runs = 2`` the third re-run is not
    made: one finding to the operator says the run's cap stopped planning, and a further
    finding runs nothing and raises nothing more."""
    scout = recon(agent_dir, [{"facts": [{"id": "F1", "text": "the totals live in src/app.py"}]}])
    plans = [GOOD, plan_toml("S1", "U3"), plan_toml("S1", "U4")]
    stand_in = planner(agent_dir, {"S1": plans})
    repo = setup_capped(tmp_path, project, stand_in.command, scout.command)
    async with (
        running(bus, dispatcher(bus, project, repo.path)),
        running(bus, Planner(config_of(repo), poll_s=0.1)) as kernel,
    ):
        await start_charter(bus, project, repo.base)  # type: ignore[attr-defined]
        await wait_log(bus, project, count(SlicePlanAccepted), timeout=60)
        await bus.publish(blocked_by(project, 1))
        await wait_log(bus, project, count(SlicePlanAccepted, 2), timeout=60)
        await bus.publish(blocked_by(project, 2))
        events = await wait_log(bus, project, count(FindingRaised, criterion=CAPPED), timeout=60)
        asked = len(stand_in.calls())
        third = blocked_by(project, 3)
        await bus.publish(third)
        states = kernel.project_states(project)
        await kernel.until(lambda: third.id in states["planner"].invalidations, 30)
        await kernel.wait_settled(kernel.folded)
        after = await log_events(bus, project)
    (capped,) = of(FindingRaised, after, criterion=CAPPED)
    assert (capped.owner, capped.cls, capped.actor.role) == ("operator", "meta", "system")
    assert "reconnaissance ran 2 times ([recon] max_runs = 2)" in capped.message
    assert len(of(ReconRecorded, after)) == 2 == len(scout.calls())
    assert len(of(SlicePlanAccepted, after)) == 2
    assert len(stand_in.calls()) == asked  # planning stopped with reconnaissance
    assert of(FindingRaised, events, criterion=CAPPED) == [capped]


def setup_capped(tmp_path: Path, project: str, command: str, recon_command: str) -> GitRepo:
    """A repository whose ``[recon]`` allows two runs a run."""
    return setup_repo(
        tmp_path,
        project,
        None,
        plan={"command": command},
        recon={"command": recon_command, "max_runs": 2},
        agents=sandbox_for(command, recon_command),
    )


async def test_supervised_autonomy_waits_for_approve_plan(
    bus: Bus, project: str, tmp_path: Path, agent_dir: Path, nats_url: str
) -> None:
    stand_in = planner(agent_dir, {"S1": GOOD})
    repo = planned_repo(tmp_path, project, stand_in.command)
    async with (
        running(bus, dispatcher(bus, project, repo.path)),
        running(bus, Planner(config_of(repo), poll_s=0.1)) as kernel,
    ):
        await start_charter(bus, project, repo.base, autonomy="supervised")  # type: ignore[attr-defined]
        await wait_log(bus, project, count(PlanProposed), timeout=60)
        states = kernel.project_states(project)
        await kernel.until(lambda: bool(states["planner"].proposals), 30)
        await kernel.wait_settled(kernel.folded)
        early = await asyncio.to_thread(
            loopbus, "approve", "--project", project, "--plan", "S2", "--why", "x", url=nats_url
        )
        assert early.returncode == 2 and "proposed no plan" in early.stderr, early.stderr
        assert of(PlanSubmission, await log_events(bus, project)) == []
        approved = await asyncio.to_thread(
            loopbus,
            "approve", "--project", project, "--plan", "S1", "--why", "units are small",
            "--principal", "ana", url=nats_url,
        )  # fmt: skip
        assert approved.returncode == 0, approved.stderr
        events = await wait_log(bus, project, count(SlicePlanAccepted), timeout=60)
    (proposed,) = of(PlanProposed, events)
    assert proposed.autonomy == "supervised" and proposed.submission == ""
    (submission,) = of(PlanSubmission, events)
    (accepted,) = of(SlicePlanAccepted, events)
    assert accepted.cause == submission.id


async def test_after_a_slice_closes_the_next_slice_is_planned(
    bus: Bus, project: str, tmp_path: Path, agent_dir: Path
) -> None:
    """The slice's close (published here as the dispatcher would) and the criteria checked
    again on trunk's head: the planner asks for S2, told about S1."""
    s2 = plan_toml("S2", "U9")
    stand_in = planner(agent_dir, {"S1": GOOD, "S2": s2})
    repo = planned_repo(tmp_path, project, stand_in.command)
    async with running(bus, Planner(config_of(repo), poll_s=0.1)):
        run = await start_charter(bus, project, repo.base)  # type: ignore[attr-defined]
        events = await wait_log(bus, project, count(PlanSubmission), timeout=60)
        (submission,) = of(PlanSubmission, events)
        await bus.publish(
            SlicePlanAccepted(
                project=project, actor=SYSTEM, plan=submission.plan, cause=submission.id
            )
        )
        await bus.publish(
            SliceClosed(
                project=project, actor=SYSTEM, slice="S1", boot=BootResult(outcome="pass"),
                done=["U1", "U2"],
            )
        )  # fmt: skip
        await check_criteria(bus, project, run, repo.base)  # type: ignore[attr-defined]
        events = await wait_log(bus, project, count(PlanSubmission, 2), timeout=60)
    assert [s.plan.slice for s in of(PlanSubmission, events)] == ["S1", "S2"]
    s2_brief = stand_in.calls()[-1]
    assert s2_brief["slice"] == "S2" and s2_brief["used_units"] == ["U1", "U2"]
    assert [c["slice"] for c in s2_brief["closed"]] == ["S1"]
    assert s2_brief["skeleton_allowed"] is False


async def test_a_closed_skeleton_waits_for_approve_skeleton_before_the_next_slice(
    bus: Bus, project: str, tmp_path: Path, agent_dir: Path, nats_url: str
) -> None:
    """The first slice is a skeleton: once it closes, a skeleton-review finding asks the
    operator and nothing is planned until ``loopbus approve --skeleton``."""
    skeleton = plan_toml("S1", "U1").replace('id = "S1"', 'id = "S1"\nskeleton = true', 1)
    stand_in = planner(agent_dir, {"S1": skeleton, "S2": plan_toml("S2", "U9")})
    repo = planned_repo(tmp_path, project, stand_in.command)
    async with running(bus, Planner(config_of(repo), poll_s=0.1)) as kernel:
        run = await start_charter(bus, project, repo.base)  # type: ignore[attr-defined]
        events = await wait_log(bus, project, count(PlanSubmission), timeout=60)
        (submission,) = of(PlanSubmission, events)
        assert submission.plan.skeleton is True
        plan = submission.plan
        await bus.publish(
            SlicePlanAccepted(project=project, actor=SYSTEM, plan=plan, cause=submission.id)
        )
        await bus.publish(
            SliceClosed(project=project, actor=SYSTEM, slice="S1", boot=BootResult(outcome="pass"))
        )
        await check_criteria(bus, project, run, repo.base)  # type: ignore[attr-defined]
        events = await wait_log(
            bus, project, count(FindingRaised, criterion="skeleton-review"), timeout=60
        )
        states = kernel.project_states(project)
        await kernel.until(lambda: bool(states["planner"].skeleton_reviews), 30)
        await kernel.wait_settled(kernel.folded)
        assert len(stand_in.calls()) == 1  # S2 not asked for
        approved = await asyncio.to_thread(
            loopbus,
            "approve", "--project", project, "--skeleton", "--why", "signatures match",
            "--principal", "ana", url=nats_url,
        )  # fmt: skip
        assert approved.returncode == 0, approved.stderr
        events = await wait_log(bus, project, count(PlanSubmission, 2), timeout=60)
    (review,) = of(FindingRaised, events, criterion="skeleton-review")
    assert (review.owner, review.slice) == ("operator", "S1")
    assert [s.plan.slice for s in of(PlanSubmission, events)] == ["S1", "S2"]
    assert stand_in.calls()[-1]["closed"][0]["skeleton"] is True


async def test_a_contract_the_merger_would_refuse_is_a_refused_try_with_its_reasons(
    bus: Bus, project: str, tmp_path: Path, agent_dir: Path
) -> None:
    """A contract reusing trunk's check id passes the plan's own checks but would be refused
    at landing (holding its slice): the planner's check runs the landing rules on trunk, so
    the try is refused and re-asked, never proposed."""
    edits = GOOD + '\n[contract]\n\n[[contract.checks]]\nid = "tests"\ncommand = "true"\n'
    stand_in = planner(agent_dir, {"S1": [edits, GOOD]})
    repo = planned_repo(tmp_path, project, stand_in.command)
    async with running(bus, Planner(config_of(repo), poll_s=0.1)):
        await start_charter(bus, project, repo.base)  # type: ignore[attr-defined]
        events = await wait_log(bus, project, count(PlanProposed), timeout=60)
    (refused,) = of(PlanAttemptRefused, events)
    assert refused.attempt == 1
    assert any("'tests' is a check trunk has already" in p for p in refused.problems)
    (proposed,) = of(PlanProposed, events)
    assert proposed.attempt == 2
    assert any("'tests' is a check trunk has already" in r for r in stand_in.calls()[1]["refusals"])


async def test_an_oversized_findings_document_is_recorded_bounded_once(
    bus: Bus, project: str, tmp_path: Path, agent_dir: Path
) -> None:
    """A reconnaissance command printing a 70,000-character fact: the record keeps the
    fact cut (marked), the run is recorded once and the planner is asked, rather than the
    log refusing the record and the command being run again for ever."""
    scout = recon(agent_dir, [{"facts": [{"id": "F1", "text": "z" * 70_000}]}])
    stand_in = planner(agent_dir, {"S1": [GOOD]})
    repo = planned_repo(tmp_path, project, stand_in.command, scout.command)
    async with (
        running(bus, dispatcher(bus, project, repo.path)),
        running(bus, Planner(config_of(repo), poll_s=0.1)),
    ):
        await start_charter(bus, project, repo.base)  # type: ignore[attr-defined]
        events = await wait_log(bus, project, count(SlicePlanAccepted), timeout=60)
    (recorded,) = of(ReconRecorded, events)
    assert len(recorded.facts[0].text) <= 4000 and recorded.facts[0].text.endswith("…")
    assert len(scout.calls()) == 1
