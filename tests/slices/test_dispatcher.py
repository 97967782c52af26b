"""The dispatcher daemon on a real NATS server with real git repositories (dulwich).

The units daemon, the gate runner and the merger are stood in by the test publishing the
facts they would establish (as role ``system``); builders are small scripts or reports.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import msgspec
import pytest
from dulwich.objects import Blob, Commit, Tree
from dulwich.repo import Repo
from kernelkit import running
from slice_helpers import (
    BUILDER,
    OPERATOR,
    PLANNER,
    gate_result,
    gate_suite,
    loopbus_toml,
    make_repo,
    of_type,
    plan,
    registration,
    transition,
    unit,
    wait_state,
)

from bus import Bus, read
from projections import findings, gates, transitions
from schemas import (
    Actor,
    Event,
    FindingRaised,
    FindingResolved,
    UnitPlanned,
    UnitTransitioned,
    project_subjects,
)
from schemas.gates import GateResultRecorded
from schemas.reports import CommitReport, StartedReport
from schemas.slices import (
    MisalignmentRouted,
    PlanSubmission,
    RunEntryCompleted,
    SliceClosed,
    SlicePlan,
    SlicePlanAccepted,
    SlicePlanDiscarded,
    UnitDispatched,
)
from schemas.targets import PlanTarget
from workers.dispatcher.daemon import Dispatcher
from workers.dispatcher.repo import ProjectRepo
from workers.gates.signing import Signer
from workers.integrity.daemon import Integrity
from workers.kernel import Kernel
from workers.runtime import cancel_all

BOOT_OK = f"{sys.executable} -c \"print('booted')\""


@asynccontextmanager
async def dispatcher(bus: Bus, project: str, **kw: Any) -> AsyncIterator[Kernel]:
    """A dispatcher for ``project`` on the kernel, following the log until the block ends."""
    async with running(bus, Dispatcher(bus, projects=[project], **kw)) as kernel:
        yield kernel


async def settle(d: Kernel, bus: Bus, *events: Event) -> None:
    """Publish ``events`` and wait (bounded) until the dispatcher has folded and acted on them,
    the repository reads and boots its decisions asked for included."""
    acks = [await bus.publish(e) for e in events]
    await asyncio.wait_for(d.wait_settled(acks[-1].seq), 20)


async def log_of(bus: Bus, project: str) -> list[Event]:
    records = read(bus, subjects=[project_subjects(project)])
    return [r.event async for r in records if r.event is not None]


def submit(project: str, p: SlicePlan, actor: Actor = PLANNER) -> PlanSubmission:
    return PlanSubmission(project=project, actor=actor, plan=p)


def repo_for(tmp_path: Path, project: str, pending: list[str], boot: str | None = BOOT_OK) -> Path:
    path = tmp_path / "repo"
    make_repo(path, {"loopbus.toml": loopbus_toml(project, pending, boot), "README.md": "hi\n"})
    return path


def closed_slice(slice_id: str) -> Any:
    """A wait_state predicate: the slice is on the log as closed."""
    return lambda s, _e: slice_id in s.slices and s.slices[slice_id].status == "closed"


def dispatched(events: list[Event]) -> list[str]:
    return [e.unit for e in of_type(events, UnitDispatched)]


async def test_accepted_plan_is_planned_and_first_wave_dispatched_in_order(
    bus: Bus, project: str, tmp_path: Path
) -> None:
    """A valid plan becomes a fact with the trunk's pending criteria, every unit is planned,
    and wave 0 goes out longest chain first (A before B) against the trunk commit."""
    path = repo_for(tmp_path, project, ["t::chain", "t::fan"])
    trunk = ProjectRepo(path).trunk_commit().commit
    p = plan(
        "S1",
        unit("B"),
        *(unit(x, "B") for x in "GHIJ"),
        unit("K", "B", criteria=["t::fan"]),
        unit("A"),
        unit("C", "A"),
        unit("D", "C"),
        unit("E", "D"),
        unit("F", "E", criteria=["t::chain"]),
    )
    async with dispatcher(bus, project, repos={project: ProjectRepo(path)}) as d:
        await settle(d, bus, submit(project, p))
    events = await log_of(bus, project)
    [accepted] = of_type(events, SlicePlanAccepted)
    assert accepted.pending == ["t::chain", "t::fan"]
    assert accepted.criteria_source == f"loopbus.toml@{trunk}"
    assert [e.unit for e in of_type(events, UnitPlanned)] == [u.id for u in p.units]
    assert dispatched(events) == ["A", "B"]
    assert {e.base for e in of_type(events, UnitDispatched)} == {trunk}


@pytest.mark.parametrize(
    ("units", "actor", "expected"),
    [
        pytest.param(
            [unit("U1", criteria=["t::a"]), unit("U3", "U5"), unit("U5", "U3")],
            PLANNER,
            ["dependency cycle: U3 -> U5 -> U3", "pending criterion t::b is claimed by no unit"],
            id="cycle-and-unclaimed",
        ),
        pytest.param(
            [unit("U1", criteria=["t::a", "t::b"]), unit("U2", criteria=["t::b"])],
            PLANNER,
            ["criterion t::b is claimed by more than one unit: U1, U2"],
            id="doubly-claimed",
        ),
        pytest.param(
            [unit("U1", criteria=["t::a", "t::b"])],
            BUILDER,
            ["submitted by role 'builder'"],
            id="not-a-planner",
        ),
    ],
)
async def test_invalid_plan_is_refused_with_every_problem(
    bus: Bus,
    project: str,
    tmp_path: Path,
    units: list[Any],
    actor: Actor,
    expected: list[str],
) -> None:
    """A plan that does not stand is answered by one finding listing each problem; nothing is
    accepted, planned or dispatched."""
    path = repo_for(tmp_path, project, ["t::a", "t::b"])
    submission = submit(project, plan("S1", *units), actor)
    async with dispatcher(bus, project, repos={project: ProjectRepo(path)}) as d:
        await settle(d, bus, submission)
    events = await log_of(bus, project)
    [refusal] = of_type(events, FindingRaised)
    assert refusal.evidence["submission"] == submission.id
    assert refusal.cls == "refused-transition" and refusal.owner == "planner"
    assert refusal.target == PlanTarget(slice="S1")
    problems = refusal.evidence["problems"]
    assert len(problems) == len(expected)
    for want, got in zip(expected, problems, strict=True):
        assert want in got
    assert not of_type(events, SlicePlanAccepted) and not of_type(events, UnitDispatched)


async def test_a_refusal_resolves_when_a_later_plan_for_its_slice_is_accepted(
    bus: Bus, project: str, tmp_path: Path
) -> None:
    """A refused plan's finding is resolved by the dispatcher once a plan for the same slice
    is accepted (it asks the planner for nothing more); a refusal of another slice, still
    unanswered, stays open."""
    path = repo_for(tmp_path, project, [])
    cyclic = submit(project, plan("S1", unit("X", "Y"), unit("Y", "X")))
    other = submit(project, plan("S2", unit("V", "W"), unit("W", "V")))
    fixed = submit(project, plan("S1", unit("X"), unit("Y", "X")))
    async with dispatcher(bus, project, repos={project: ProjectRepo(path)}) as d:
        await settle(d, bus, cyclic, other)
        events = await log_of(bus, project)
        refusals = {f.evidence["submission"]: f for f in of_type(events, FindingRaised)}
        assert set(refusals) == {cyclic.id, other.id}
        assert not of_type(events, FindingResolved)
        await settle(d, bus, fixed)
        _, events = await wait_state(bus, project, lambda _s, e: bool(of_type(e, FindingResolved)))
        [resolved] = of_type(events, FindingResolved)
        # Settled past the resolution: any further resolution would have been decided now.
        seq = await last_seq(bus, project)
        await asyncio.wait_for(d.wait_settled(seq), 20)
    events = await log_of(bus, project)
    [accepted] = of_type(events, SlicePlanAccepted)
    assert accepted.cause == fixed.id
    assert [r.finding for r in of_type(events, FindingResolved)] == [refusals[cyclic.id].id]
    assert resolved.actor.role == "system"
    assert f"plan {accepted.id} accepted for slice S1" in resolved.why
    still_open = findings.FOLD.fold(events)
    assert [f.id for f in findings.open_findings(still_open)] == [refusals[other.id].id]


async def last_seq(bus: Bus, project: str) -> int:
    return [r.seq async for r in read(bus, subjects=[project_subjects(project)])][-1]


async def test_failure_holds_dependents_transitively_while_branches_drain(
    bus: Bus, project: str, tmp_path: Path, signer: Signer
) -> None:
    """A halted unit holds its whole downstream (BLOCKED awaiting-dependency naming it), the
    independent branch keeps going, and when every unit is settled trunk is booted and the
    slice closes with the boot result."""
    path = repo_for(tmp_path, project, [])
    p = plan("S1", unit("A"), unit("B"), unit("C", "A"), unit("D", "C"), unit("E", "B"))
    async with dispatcher(bus, project, repos={project: ProjectRepo(path)}, signer=signer) as d:
        await settle(d, bus, submit(project, p))
        await settle(d, bus, transition(project, "A", "failed", by="halted", ended_by="halted"))
        events = await log_of(bus, project)
        holds = [e for e in of_type(events, UnitTransitioned) if e.by == "hold"]
        assert {(h.unit, h.block.subject) for h in holds} == {("C", "A"), ("D", "A")}  # type: ignore[union-attr]
        assert all(h.block.reason == "awaiting-dependency" for h in holds)  # type: ignore[union-attr]
        assert all(h.prior is None and transitions.allowed(None, "blocked", "hold") for h in holds)
        assert dispatched(events) == ["A", "B"]  # wave 1 waits for B: terminal, not success
        await settle(d, bus, transition(project, "B", "done", by="merged"))
        assert dispatched(await log_of(bus, project)) == ["A", "B", "E"]
        await settle(d, bus, transition(project, "E", "done", by="merged"))
        _state, events = await wait_state(bus, project, closed_slice("S1"))
    [closed] = of_type(events, SliceClosed)
    assert closed.done == ["B", "E"] and closed.failed == ["A"] and closed.blocked == ["C", "D"]
    assert closed.boot.outcome == "pass" and closed.boot.exit_code == 0
    assert closed.boot.commit == ProjectRepo(path).trunk_commit().commit
    [booted] = [e for e in of_type(events, GateResultRecorded) if e.id == closed.boot.result]
    assert booted.check == "boot" and booted.commit == closed.boot.commit
    completed = of_type(events, RunEntryCompleted)
    assert [c.unit for c in completed] == ["A", "B", "E"]
    assert dispatched(events) == ["A", "B", "E"]


@pytest.mark.parametrize(
    ("boot", "outcome", "says"),
    [
        pytest.param(f"{sys.executable} -c 'raise SystemExit(3)'", "fail", "", id="exit-3-fails"),
        pytest.param(None, "error", "no boot check", id="no-boot-check-is-error"),
        pytest.param("no-such-program-xyz", "error", "could not start", id="cannot-start"),
    ],
)
async def test_boot_result_has_three_outcomes(
    bus: Bus,
    project: str,
    tmp_path: Path,
    signer: Signer,
    boot: str | None,
    outcome: str,
    says: str,
) -> None:
    """The increment's boot check is pass, fail or error; what cannot be established is error."""
    path = repo_for(tmp_path, project, [], boot=boot)
    async with dispatcher(bus, project, repos={project: ProjectRepo(path)}, signer=signer) as d:
        await settle(d, bus, submit(project, plan("S1", unit("U1"))))
        await settle(d, bus, transition(project, "U1", "done", by="merged"))
        _state, events = await wait_state(bus, project, closed_slice("S1"))
    [closed] = of_type(events, SliceClosed)
    assert closed.boot.outcome == outcome
    assert says in closed.boot.detail
    if outcome == "fail":
        assert closed.boot.exit_code == 3


async def test_restart_and_a_second_dispatcher_never_dispatch_twice(
    bus: Bus, project: str, tmp_path: Path
) -> None:
    """Dispatch state comes from the log: a restarted dispatcher carries on where the first
    stopped, and two running at once dispatch each unit exactly once."""
    repos = {project: ProjectRepo(repo_for(tmp_path, project, []))}
    p = plan("S1", *(unit(f"U{i}") for i in range(4)))
    async with dispatcher(bus, project, capacity=1, repos=repos) as d:
        await settle(d, bus, submit(project, p))
    assert dispatched(await log_of(bus, project)) == ["U0"]
    async with (
        dispatcher(bus, project, capacity=1, repos=repos) as first,
        dispatcher(bus, project, capacity=1, repos=repos) as second,
    ):
        await settle(first, bus, transition(project, "U0", "done", by="merged"))
        await asyncio.wait_for(second.wait_settled(first.settled.seq), 20)
        await settle(first, bus, transition(project, "U1", "done", by="merged"))
        await asyncio.wait_for(second.wait_settled(first.settled.seq), 20)
    events = await log_of(bus, project)
    assert dispatched(events) == ["U0", "U1", "U2"]
    assert len(of_type(events, SlicePlanAccepted)) == 1


@pytest.mark.parametrize(
    ("merged_first", "route", "owner"),
    [
        pytest.param(False, "re-slice", "planner", id="none-merged-re-slices"),
        pytest.param(True, "contract-change", "operator", id="some-merged-changes-contract"),
    ],
)
async def test_misaligned_routes_by_what_its_criteria_reach(
    bus: Bus, project: str, tmp_path: Path, merged_first: bool, route: str, owner: str
) -> None:
    """Misaligned goes where the affected set says: no reached unit merged -> re-slice (the plan
    is discarded), some merged -> contract change; never to an author."""
    p = plan(
        "S1",
        unit("U1", criteria=["t::a"]),
        unit("U2", criteria=["t::b"]),
        unit("U3", "U1", criteria=["t::c"]),
    )
    misaligned = FindingRaised(
        project=project,
        actor=OPERATOR,
        producer="operator",
        target=PlanTarget(slice="S1"),
        severity="high",
        criterion="t::a",
        cls="misaligned",
        message="this is not the report I asked for",
        evidence={"criteria": "t::b"},
        slice="S1",
    )
    both_done = [transition(project, u, "done", by="merged") for u in ("U1", "U2")]
    repos = {project: ProjectRepo(repo_for(tmp_path, project, ["t::a", "t::b", "t::c"]))}
    async with dispatcher(bus, project, repos=repos) as d:
        await settle(d, bus, submit(project, p))
        if merged_first:
            await settle(d, bus, *both_done)
        await settle(d, bus, misaligned)
        if not merged_first:
            await settle(d, bus, *both_done)
    events = await log_of(bus, project)
    [routed] = of_type(events, MisalignmentRouted)
    assert routed.finding == misaligned.id and routed.criteria == ["t::a", "t::b"]
    assert routed.reached == ["U1", "U2"]
    assert routed.route == route and routed.owner == owner
    assert routed.merged == (["U1", "U2"] if merged_first else [])
    owners = [f.owner or "" for f in of_type(events, FindingRaised)]
    assert not any(o.startswith("builder") for o in owners)
    discarded = of_type(events, SlicePlanDiscarded)
    if route == "re-slice":
        assert [x.cause for x in discarded] == [misaligned.id]
        assert "U3" not in dispatched(events)  # a discarded plan dispatches nothing more
    else:
        assert discarded == [] and "U3" in dispatched(events)


BUILDER_SCRIPT = textwrap.dedent(
    """
    import asyncio, sys
    from bus import connect
    from schemas import Actor
    from schemas.reports import StartedReport
    from schemas.slices import UsageReport

    async def main(url, project, unit):
        bus = await connect(url)
        me = Actor(role="builder", principal="builder-" + unit)
        await bus.publish(StartedReport(project=project, actor=me, unit=unit))
        await bus.publish(UsageReport(project=project, actor=me, unit=unit, tokens_in=1200))
        print("working", flush=True)
        await asyncio.Event().wait()  # works for ever, until killed

    asyncio.run(main(*sys.argv[1:]))
    """
)


def branch_commit(path: Path, branch: str, name: str, text: str) -> str:
    """A commit on ``branch`` adding one top-level file on top of the current HEAD commit."""
    with Repo(str(path)) as repo:
        base = repo[repo.head()]
        assert isinstance(base, Commit)
        old = repo[base.tree]
        assert isinstance(old, Tree)
        blob = Blob.from_string(text.encode())
        tree = Tree()
        for item in old.items():
            tree.add(item.path, item.mode, item.sha)
        tree.add(name.encode(), 0o100644, blob.id)
        new = Commit()
        new.tree, new.parents = tree.id, [base.id]
        new.author = new.committer = b"Builder <b@example.com>"
        new.author_time = new.commit_time = base.commit_time + 1
        new.author_timezone = new.commit_timezone = 0
        new.message = f"{name}\n".encode()
        for obj in (blob, tree, new):
            repo.object_store.add_object(obj)
        repo.refs[f"refs/heads/{branch}".encode()] = new.id
        return new.id.decode()


async def test_run_record_keeps_a_stub_for_a_unit_killed_mid_run(
    bus: Bus, project: str, nats_url: str, tmp_path: Path, signer: Signer
) -> None:
    """The record has one entry per dispatch: the unit that reached the barrier shows its real
    commands, files and what did not run; the one whose builder was killed is a bare heading."""
    path = repo_for(tmp_path, project, [])
    head = branch_commit(path, "u1", "u1.py", "print('u1')\n")
    tree = Repo(str(path))[head.encode()].tree.decode()  # type: ignore[union-attr]
    p = plan("S1", unit("U1", title="parse the input"), unit("U2", title="print the total"))
    async with dispatcher(bus, project, repos={project: ProjectRepo(path)}) as d:
        await settle(d, bus, registration(project, signer), submit(project, p))
        builder = subprocess.Popen(
            [sys.executable, "-c", BUILDER_SCRIPT, nats_url, project, "U2"],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert builder.stdout is not None
            line = await asyncio.wait_for(asyncio.to_thread(builder.stdout.readline), 20)
            assert line.strip() == "working"
        finally:
            os.kill(builder.pid, signal.SIGKILL)
            builder.wait(timeout=10)
        result = gate_result(signer, project, commit=head, tree=tree)
        suite = gate_suite(signer, project, "U1", results=[result], commit=head, tree=tree)
        await settle(
            d,
            bus,
            StartedReport(project=project, actor=BUILDER, unit="U1"),
            CommitReport(project=project, actor=BUILDER, unit="U1", sha=head),
            transition(project, "U1", "working", by="commit", commit=head),
            result,
            suite,
            transition(project, "U1", "done", by="merged", commit=head),
        )
    events = await log_of(bus, project)
    [entry] = of_type(events, RunEntryCompleted)
    assert entry.unit == "U1" and entry.state == "done" and not entry.returned_nothing
    assert entry.files_changed == ["u1.py"]
    [command] = entry.commands
    assert command.command == f"{sys.executable} -m pytest -q" and command.outcome == "pass"
    assert "exit 0; 3 passed" in command.detail
    done = subprocess.run(
        [sys.executable, "-m", "loopbus.cli", "record", "--project", project],
        capture_output=True,
        text=True,
        timeout=60,
        env=os.environ | {"LOOPBUS_NATS_URL": nats_url},
    )
    assert done.returncode == 0, done.stderr
    blocks = [b for b in done.stdout.split("\n## ")[1:]]
    u1 = next(b for b in blocks if "— U1 —" in b)
    u2 = next(b for b in blocks if "— U2 —" in b)
    assert "- ended: done (merged)" in u1 and "→ pass" in u1 and "files changed: u1.py" in u1
    assert "-m pytest -q` [tests]" in u1
    assert u2.strip().splitlines() == [u2.strip().splitlines()[0]]  # the heading, nothing under
    as_json = subprocess.run(
        [sys.executable, "-m", "loopbus.cli", "record", "--project", project, "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        env=os.environ | {"LOOPBUS_NATS_URL": nats_url},
    )
    stubs = {e["unit"]: e["stub"] for e in json.loads(as_json.stdout)["entries"]}
    assert stubs == {"U1": False, "U2": True}


async def test_holds_and_the_close_are_not_repeated_after_a_restart(
    bus: Bus, project: str, tmp_path: Path
) -> None:
    """What the dispatcher already answered is read back from the log: a restarted dispatcher
    writes no second hold, completion or close."""
    repos = {project: ProjectRepo(repo_for(tmp_path, project, [], boot=None))}
    p = plan("S1", unit("A"), unit("B", "A"), unit("C", "B"))
    async with dispatcher(bus, project, repos=repos) as d:
        await settle(d, bus, submit(project, p))
        await settle(d, bus, transition(project, "A", "lost", by="heartbeat-lapse"))
        await wait_state(bus, project, closed_slice("S1"))
    async with dispatcher(bus, project, repos=repos) as d:
        await settle(d, bus, nudge(project))
    events = await log_of(bus, project)
    holds = [e.unit for e in of_type(events, UnitTransitioned) if e.by == "hold"]
    assert holds == ["B", "C"]
    assert [c.unit for c in of_type(events, RunEntryCompleted)] == ["A"]
    [closed] = of_type(events, SliceClosed)
    assert closed.lost == ["A"] and closed.blocked == ["B", "C"]
    assert closed.boot.outcome == "error" and "no boot check" in closed.boot.detail


def nudge(project: str) -> Event:
    """An unrelated claim, to give a dispatcher a record to act on."""
    return StartedReport(project=project, actor=BUILDER, unit="nobody")


async def test_plan_is_refused_when_no_repository_is_configured(bus: Bus, project: str) -> None:
    """Without a repository the pending criteria cannot be read, so the check cannot run and
    the plan is refused with one line saying what to do; nothing is accepted or planned."""
    submission = submit(project, plan("S1", unit("U1", criteria=["t::a"])))
    async with dispatcher(bus, project) as d:
        await settle(d, bus, submission)
    events = await log_of(bus, project)
    [refusal] = of_type(events, FindingRaised)
    assert refusal.evidence["submission"] == submission.id
    assert refusal.evidence["problems"] == [
        f"pending criteria cannot be read: no repository configured for {project}; "
        "run the dispatcher with --repo"
    ]
    assert not of_type(events, SlicePlanAccepted) and not of_type(events, UnitPlanned)


def misaligned_finding(
    project: str,
    criteria: list[str],
    slice_id: str | None,
    actor: Actor = OPERATOR,
    producer: str = "operator",
) -> FindingRaised:
    return FindingRaised(
        project=project,
        actor=actor,
        producer=producer,  # type: ignore[arg-type]
        target=PlanTarget(slice=slice_id or "S1"),
        severity="high",
        criterion=criteria[0],
        cls="misaligned",
        message="this is not what I asked for",
        evidence={"criteria": ",".join(criteria[1:])} if criteria[1:] else {},
        slice=slice_id,
    )


THREE_UNITS = (
    unit("U1", criteria=["t::a"]),
    unit("U2", criteria=["t::b"]),
    unit("U3", "U1", criteria=["t::c"]),
)


@pytest.mark.parametrize(
    ("criteria", "slice_id", "actor", "producer", "says"),
    [
        pytest.param(
            ["t::typo"],
            "S1",
            OPERATOR,
            "operator",
            "no unit of slice S1 claims t::typo",
            id="typo-in-a-named-slice",
        ),
        pytest.param(
            ["t::typo", "t::other"],
            None,
            OPERATOR,
            "operator",
            "no unit of any slice claims t::typo, t::other",
            id="typo-and-no-slice-named",
        ),
        pytest.param(
            ["t::b"],
            None,
            OPERATOR,
            "operator",
            "a re-slice discards slice S1's plan; raise it again naming the slice (--slice S1)",
            id="re-slice-of-a-slice-it-did-not-name",
        ),
    ],
)
async def test_misaligned_that_cannot_be_routed_is_refused_and_discards_nothing(
    bus: Bus,
    project: str,
    tmp_path: Path,
    criteria: list[str],
    slice_id: str | None,
    actor: Actor,
    producer: str,
    says: str,
) -> None:
    """A misaligned finding that reaches no unit, that would discard a plan it did not name,
    or that is not the operator's, is refused by the system (producer standards, owner
    operator) naming why; no route is derived and no plan is discarded."""
    repos = {project: ProjectRepo(repo_for(tmp_path, project, ["t::a", "t::b", "t::c"]))}
    finding = misaligned_finding(project, criteria, slice_id, actor, producer)
    async with dispatcher(bus, project, repos=repos) as d:
        await settle(d, bus, submit(project, plan("S1", *THREE_UNITS)))
        await settle(d, bus, finding)
        await settle(d, bus, *(transition(project, u, "done", by="merged") for u in ("U1", "U2")))
    events = await log_of(bus, project)
    [refusal] = [f for f in of_type(events, FindingRaised) if f.evidence.get("misaligned")]
    assert refusal.evidence["misaligned"] == finding.id
    assert refusal.producer == "standards" and refusal.actor.role == "system"
    assert refusal.owner == "operator" and refusal.cls == "refused-transition"
    assert says in refusal.message, refusal.message
    assert of_type(events, MisalignmentRouted) == []
    assert of_type(events, SlicePlanDiscarded) == []
    assert "U3" in dispatched(events)  # S1 carries on


def forgery_named(kernel: Kernel, project: str, forged: str) -> bool:
    """The integrity daemon has folded its own finding naming ``forged``."""
    state = kernel.project_states(project)["integrity"]
    return state.reported >= 1 and forged not in state.unreported


@pytest.mark.parametrize(
    ("actor", "producer", "says"),
    [
        pytest.param(BUILDER, "operator", "as producer 'operator'", id="builder-as-operator"),
        pytest.param(BUILDER, "builder", "'misaligned' finding", id="builder-own-producer"),
        pytest.param(OPERATOR, "reviewer", "as producer 'reviewer'", id="operator-as-reviewer"),
    ],
)
async def test_misaligned_beyond_its_roles_claims_is_a_forgery_and_routes_nothing(
    bus: Bus, project: str, tmp_path: Path, actor: Actor, producer: str, says: str
) -> None:
    """Only an operator may say the increment is misaligned, as itself: the same finding from
    a builder, or under another producer, is a forgery. No fold applies it, so nothing is
    routed or discarded, and the integrity daemon names the forger."""
    repos = {project: ProjectRepo(repo_for(tmp_path, project, ["t::a", "t::b", "t::c"]))}
    finding = misaligned_finding(project, ["t::a"], "S1", actor, producer)
    async with (
        dispatcher(bus, project, repos=repos) as d,
        running(bus, Integrity(projects=[project])) as integrity,
    ):
        await settle(d, bus, submit(project, plan("S1", *THREE_UNITS)))
        await settle(d, bus, finding)
        await integrity.until(lambda: forgery_named(integrity, project, finding.id), 20)
        await settle(d, bus, *(transition(project, u, "done", by="merged") for u in ("U1", "U2")))
    events = await log_of(bus, project)
    [named] = [f for f in of_type(events, FindingRaised) if f.cls == "forgery"]
    assert named.evidence["forged"] == finding.id and named.actor.role == "system"
    assert named.evidence["forger"] == f"{actor.role}:{actor.principal}" and says in named.message
    assert not [f for f in of_type(events, FindingRaised) if f.evidence.get("misaligned")]
    assert of_type(events, MisalignmentRouted) == []
    assert of_type(events, SlicePlanDiscarded) == []
    assert "U3" in dispatched(events)  # S1 carries on


async def test_misaligned_naming_no_slice_routes_a_contract_change(
    bus: Bus, project: str, tmp_path: Path
) -> None:
    """Without a slice named, the slice is derived from the units reached; a contract change
    discards nothing, so it is routed."""
    repos = {project: ProjectRepo(repo_for(tmp_path, project, ["t::a", "t::b", "t::c"]))}
    finding = misaligned_finding(project, ["t::a"], None)
    async with dispatcher(bus, project, repos=repos) as d:
        await settle(d, bus, submit(project, plan("S1", *THREE_UNITS)))
        await settle(d, bus, transition(project, "U1", "done", by="merged"))
        await settle(d, bus, finding)
    events = await log_of(bus, project)
    [routed] = of_type(events, MisalignmentRouted)
    assert (routed.slice, routed.route, routed.merged) == ("S1", "contract-change", ["U1"])
    assert of_type(events, SlicePlanDiscarded) == []


def boot_repo(tmp_path: Path, project: str, name: str, check: str) -> Path:
    """A repository whose loopbus.toml has only a boot check, as given."""
    path = tmp_path / name
    text = f'[project]\nid = "{project}"\n\n[[check]]\nid = "boot"\n{check}'
    make_repo(path, {"loopbus.toml": text, "README.md": "hi\n"})
    return path


async def test_boot_runs_through_the_gate_runner_signed_and_cached(
    bus: Bus, project: str, tmp_path: Path, signer: Signer
) -> None:
    """The increment's boot is a gate run: a signed result on the log (verified by the gates
    projection's rule) that the close names, and a second increment on the same trunk is
    answered from the gate cache."""
    path = repo_for(tmp_path, project, [])
    trunk = ProjectRepo(path).trunk_commit().commit
    async with dispatcher(bus, project, repos={project: ProjectRepo(path)}, signer=signer) as d:
        for slice_id, unit_id in (("S1", "U1"), ("S2", "U2")):
            await settle(d, bus, submit(project, plan(slice_id, unit(unit_id))))
            await settle(d, bus, transition(project, unit_id, "done", by="merged"))
            await wait_state(bus, project, closed_slice(slice_id))
    events = await log_of(bus, project)
    first, second = of_type(events, SliceClosed)
    results = {e.id: e for e in of_type(events, GateResultRecorded)}
    booted = results[first.boot.result]  # type: ignore[index]
    assert booted.check == "boot" and booted.commit == trunk and booted.outcome == "pass"
    assert booted.runner == signer.runner
    # The Boot effect returned the result's records to the dispatcher's kernel, which
    # published them before deciding again: the close names a result already on the log.
    assert events.index(booted) < events.index(first)
    state = gates.FOLD.fold(events)
    assert gates.judge(state, booted) is None and state.refused == {}
    assert first.boot.cached is False and first.boot.outcome == "pass"
    assert second.boot.cached is True and second.boot.result == first.boot.result
    assert len(results) == 1  # the command ran once


@pytest.mark.parametrize(
    ("check", "says"),
    [
        pytest.param(
            f"command = '''{sys.executable} -c \"print(1)\"'''\nparser = \"pytest\"\n",
            "no pytest report",
            id="parser-pytest-without-a-pytest-run",
        ),
        pytest.param(
            f"command = '''{sys.executable} -c \"print(1)\"'''\nimage = \"python:3.12-slim\"\n",
            "never falls back to the host",
            id="image-without-a-docker-engine",
        ),
    ],
)
async def test_boot_honours_the_checks_parser_and_image(
    bus: Bus,
    project: str,
    tmp_path: Path,
    signer: Signer,
    monkeypatch: pytest.MonkeyPatch,
    check: str,
    says: str,
) -> None:
    """The boot check is read like any check: its parser judges the run and its image
    decides where it runs; a command that exits 0 is not a pass when either says otherwise."""
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")
    path = boot_repo(tmp_path, project, "repo", check)
    async with dispatcher(bus, project, repos={project: ProjectRepo(path)}, signer=signer) as d:
        await settle(d, bus, submit(project, plan("S1", unit("U1"))))
        await settle(d, bus, transition(project, "U1", "done", by="merged"))
        _state, events = await wait_state(bus, project, closed_slice("S1"))
    [closed] = of_type(events, SliceClosed)
    assert closed.boot.outcome == "error"
    assert says in closed.boot.detail, closed.boot.detail


@pytest.mark.parametrize("how", ["unsigned", "altered-after-signing"])
async def test_run_record_shows_no_outcome_for_an_unverified_gate_suite(
    bus: Bus, project: str, tmp_path: Path, signer: Signer, how: str
) -> None:
    """A gate suite that is not a verified fact (unsigned, or altered after signing) is not a
    command the record shows as run: the completion says no gate suite ran."""
    path = repo_for(tmp_path, project, [])
    head = branch_commit(path, "u1", "u1.py", "print('u1')\n")
    tree = Repo(str(path))[head.encode()].tree.decode()  # type: ignore[union-attr]
    if how == "unsigned":
        result = gate_result(None, project, commit=head, tree=tree)
        suite = gate_suite(None, project, "U1", results=[result], commit=head, tree=tree)
    else:
        result = gate_result(signer, project, commit=head, tree=tree, outcome="fail")
        red = gate_suite(
            signer, project, "U1", results=[result], commit=head, tree=tree, outcome="fail"
        )
        suite = msgspec.structs.replace(  # turned green after it was signed
            red,
            outcome="pass",
            checks=[msgspec.structs.replace(c, outcome="pass") for c in red.checks],
        )
    async with dispatcher(bus, project, repos={project: ProjectRepo(path)}) as d:
        await settle(d, bus, registration(project, signer), submit(project, plan("S1", unit("U1"))))
        await settle(
            d,
            bus,
            CommitReport(project=project, actor=BUILDER, unit="U1", sha=head),
            transition(project, "U1", "working", by="commit", commit=head),
            result,
            suite,
            transition(project, "U1", "done", by="merged", commit=head),
        )
    [entry] = of_type(await log_of(bus, project), RunEntryCompleted)
    assert entry.commands == []
    assert [n.what for n in entry.not_run] == ["gates"]
    assert "no gate suite ran" in entry.not_run[0].why


async def test_stopping_cancels_again_a_task_that_swallowed_its_cancel() -> None:
    """A task that swallows one cancel (as Python 3.11's wait_for can, inside the log reader)
    is cancelled again until it ends, so stopping a dispatcher never hangs."""
    started, swallowed = asyncio.Event(), asyncio.Event()

    async def stubborn() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            swallowed.set()  # and carries on, as if the cancel had never come
        await asyncio.Event().wait()

    task = asyncio.create_task(stubborn())
    await started.wait()
    await asyncio.wait_for(cancel_all([task], retry_s=0.05), 10)
    assert swallowed.is_set() and task.cancelled()
