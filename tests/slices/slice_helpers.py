"""Shared builders for the slices tests: events, a pure dispatcher stand-in, real repos."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from dulwich import porcelain
from dulwich.repo import Repo

from bus import Bus, read
from projections import slice_dispatch, slices
from projections.slice_dispatch import (
    BlockDependent,
    Close,
    Complete,
    Dispatch,
    PlanUnits,
    Retry,
    Revive,
)
from projections.slices import SlicesState
from schemas import (
    Actor,
    Block,
    Event,
    Outcome,
    UnitPlanned,
    UnitTransitioned,
    new_id,
    project_subjects,
)
from schemas.gates import (
    GateResultRecorded,
    GateRunnerKeyRegistered,
    GateSuiteCompleted,
    SuiteEntry,
)
from schemas.slices import (
    BootResult,
    PlannedUnit,
    PlanSubmission,
    RetryDecided,
    RunEntryCompleted,
    SliceBudgets,
    SliceClosed,
    SlicePlan,
    SlicePlanAccepted,
    UnitDispatched,
)
from workers.gates.signing import Signer

SYSTEM = Actor(role="system", principal="tests")
PLANNER = Actor(role="planner", principal="planner-1")
BUILDER = Actor(role="builder", principal="builder-1")
OPERATOR = Actor(role="operator", principal="alice")


def unit(uid: str, *blocked_by: str, files: list[str] | None = None, **kw: Any) -> PlannedUnit:
    return PlannedUnit(
        id=uid,
        title=kw.pop("title", f"build {uid}"),
        blocked_by=list(blocked_by),
        files=[f"src/{uid.lower()}.py"] if files is None else files,
        **kw,
    )


def plan(slice_id: str, *units: PlannedUnit, budgets: SliceBudgets | None = None) -> SlicePlan:
    return SlicePlan(slice=slice_id, units=list(units), budgets=budgets or SliceBudgets())


def accepted(project: str, p: SlicePlan) -> list[Event]:
    submission = PlanSubmission(project=project, actor=PLANNER, plan=p)
    return [
        submission,
        SlicePlanAccepted(project=project, actor=SYSTEM, plan=p, cause=submission.id),
        *(UnitPlanned(project=project, actor=SYSTEM, unit=u.id, slice=p.slice) for u in p.units),
    ]


def transition(
    project: str,
    unit_id: str,
    state: str,
    *,
    by: str,
    ended_by: str | None = None,
    block: Block | None = None,
    commit: str | None = None,
    at: Any = None,
) -> UnitTransitioned:
    outcome = None
    if state in ("done", "failed", "lost"):
        outcome = Outcome(summary=f"{unit_id} {state}", ended_by=ended_by or by)
    extra = {"at": at} if at is not None else {}
    return UnitTransitioned(
        project=project,
        actor=SYSTEM,
        unit=unit_id,
        state=state,  # type: ignore[arg-type]
        block=block,
        outcome=outcome,
        by=by,  # type: ignore[arg-type]
        commit=commit,
        **extra,
    )


def registration(project: str, signer: Signer) -> GateRunnerKeyRegistered:
    """The system registering ``signer``'s key: what makes its signatures count."""
    return signer.registration(project, SYSTEM)


def gate_result(
    signer: Signer | None,
    project: str,
    *,
    commit: str,
    tree: str,
    outcome: str = "pass",
    check: str = "tests",
    **kw: Any,
) -> GateResultRecorded:
    """A gate result as a runner records it, signed by ``signer`` (``None``: unsigned)."""
    fields: dict[str, Any] = {
        "project": project,
        "actor": SYSTEM,
        "check": check,
        "tree": tree,
        "commit": commit,
        "inputs": tree,
        "config_sha": "0" * 64,
        "outcome": outcome,
        "summary": "3 passed",
        "duration_s": 1.25,
        "exit_code": 0,
        "runner": signer.runner if signer is not None else "r1",
    } | kw
    event = GateResultRecorded(**fields)
    return signer.sign(event) if signer is not None else event


def gate_suite(
    signer: Signer | None,
    project: str,
    unit_id: str,
    *,
    seconds: float = 1.3,
    cached: list[bool] | None = None,
    results: list[GateResultRecorded] | None = None,
    commit: str = "c" * 40,
    tree: str = "d" * 40,
    **kw: Any,
) -> GateSuiteCompleted:
    """A suite on ``unit_id``'s commit, signed by ``signer`` (``None``: unsigned): one entry
    per result, or one uncached/cached entry per ``cached`` flag."""
    if results is not None:
        entries = [
            SuiteEntry(
                check=r.check, outcome=r.outcome, cached=False, result=r.id, duration_s=r.duration_s
            )
            for r in results
        ]
    else:
        entries = [
            SuiteEntry(check=f"k{i}", outcome="pass", cached=c, result=new_id(), duration_s=1.0)
            for i, c in enumerate(cached or [])
        ]
    fields: dict[str, Any] = {
        "project": project,
        "actor": SYSTEM,
        "commit": commit,
        "tree": tree,
        "unit": unit_id,
        "reason": "unit",
        "outcome": "pass",
        "checks": entries,
        "duration_s": seconds,
        "runner": signer.runner if signer is not None else "r1",
    } | kw
    event = GateSuiteCompleted(**fields)
    return signer.sign(event) if signer is not None else event


class PureDispatcher:
    """What the dispatcher daemon publishes for each action, without a bus: for fold tests.

    ``retry`` is its answer to every retryable failure (the real one weighs the ladder and
    the slice's budget: workers/dispatcher/retries.py)."""

    def __init__(
        self, project: str, capacity: int = 8, *, retry: bool = False, paced: bool = True
    ) -> None:
        self.project = project
        self.capacity = capacity
        self.paced = paced
        self.retry = retry
        self.state = slices.initial()
        self.log: list[Event] = []

    def apply(self, *events: Event) -> None:
        for event in events:
            self.log.append(event)
            slices.apply(self.state, event)

    def step(self) -> list[Any]:
        """Run next_actions to a fixpoint; return every action taken."""
        taken: list[Any] = []
        while True:
            actions = slice_dispatch.next_actions(self.state, self.capacity, paced=self.paced)
            if not actions:
                return taken
            for action in actions:
                taken.append(action)
                self.apply(*self._facts(action))

    def _facts(self, action: Any) -> list[Event]:
        p = self.project
        view = self.state.slices[action.slice]
        match action:
            case PlanUnits():
                return [
                    UnitPlanned(project=p, actor=SYSTEM, unit=u, slice=action.slice)
                    for u in action.units
                ]
            case BlockDependent():
                return [
                    UnitTransitioned(
                        project=p,
                        actor=SYSTEM,
                        unit=action.unit,
                        state="blocked",
                        block=Block("awaiting-dependency", action.failed),
                        by="hold",
                    )
                ]
            case Dispatch():
                return [
                    UnitDispatched(
                        project=p,
                        actor=SYSTEM,
                        slice=action.slice,
                        unit=action.unit,
                        wave=action.wave,
                        sub_wave=action.sub_wave,
                        position=action.position,
                        attempt=action.attempt,
                    )
                ]
            case Complete():
                u = view.units[action.unit]
                return [
                    RunEntryCompleted(
                        project=p,
                        actor=SYSTEM,
                        slice=action.slice,
                        unit=action.unit,
                        dispatch=action.dispatch,
                        state=u.state,  # type: ignore[arg-type]
                        returned_nothing=u.returned == 0,
                    )
                ]
            case Retry():
                return [
                    RetryDecided(
                        project=p, actor=SYSTEM, slice=action.slice, unit=action.unit,
                        failure=action.failure, ended_by=view.units[action.unit].ended_by,
                        retry=self.retry, from_rung=1, to_rung=2 if self.retry else 1,
                        why="the stand-in's policy",
                    )
                ]  # fmt: skip
            case Revive():
                return [
                    UnitTransitioned(
                        project=p, actor=SYSTEM, unit=action.unit, state="working",
                        prior="failed", by="retried", cause=action.decision,
                    )
                ]  # fmt: skip
            case Close():
                summary = slice_dispatch.settled_summary(view)
                return [
                    SliceClosed(
                        project=p,
                        actor=SYSTEM,
                        slice=action.slice,
                        boot=BootResult(outcome="pass"),
                        **summary,
                    )
                ]
        raise AssertionError(action)

    def dispatched(self) -> list[str]:
        return [e.unit for e in self.log if isinstance(e, UnitDispatched)]


# -- real repositories -------------------------------------------------------------------------


def make_repo(path: Path, files: dict[str, str], message: str = "skeleton") -> str:
    """A git repository at ``path`` whose single commit holds ``files``; returns the sha."""
    path.mkdir(parents=True, exist_ok=True)
    porcelain.init(str(path))
    return commit(path, files, message)


def commit(path: Path, files: dict[str, str], message: str = "change") -> str:
    """Write ``files`` into the working tree and commit them on the current branch."""
    path = path.resolve()  # dulwich reads a relative path against the repository root
    for name, text in files.items():
        target = path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    with Repo(str(path)) as repo:
        porcelain.add(repo, paths=[str(path / name) for name in files])
        sha = porcelain.commit(
            repo,
            message=message.encode(),
            author=b"Test <test@example.com>",
            committer=b"Test <test@example.com>",
        )
    return sha.decode()


def loopbus_toml(project: str, pending: Iterable[str], boot: str | None) -> str:
    """A ``loopbus.toml`` with a tests check declaring ``pending`` and an optional boot check."""
    quoted = ", ".join(f'"{p}"' for p in pending)
    text = (
        f'[project]\nid = "{project}"\n\n'
        f'[[check]]\nid = "tests"\ncommand = "{sys.executable} -m pytest -q"\n'
        f'parser = "pytest"\npending = [{quoted}]\n'
    )
    if boot is not None:
        # A TOML literal string: the command keeps its quotes exactly as written.
        text += (
            f"\n[[check]]\nid = \"boot\"\ncommand = '''{boot}'''\n"
            'parser = "exit-code"\ntimeout = 60\n'
        )
    return text


# -- waiting on the log ------------------------------------------------------------------------


async def wait_state(
    bus: Bus,
    project: str,
    predicate: Callable[[SlicesState, list[Event]], bool],
    timeout: float = 20.0,
) -> tuple[SlicesState, list[Event]]:
    """Fold the project's log until ``predicate(state, events)`` holds (bounded)."""
    state = slices.initial()
    events: list[Event] = []

    async def scan() -> None:
        async for record in read(bus, subjects=[project_subjects(project)], follow=True):
            if record.event is None:
                continue
            events.append(record.event)
            slices.apply(state, record.event)
            if predicate(state, events):
                return

    await asyncio.wait_for(scan(), timeout)
    return state, events


def of_type(events: Iterable[Event], kind: type) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]
