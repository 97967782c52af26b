"""Generated histories touching every projection: units and claims, findings, slices and
the run record, budgets, signed gate results, reviews and rounds, merges, investigations,
forgeries and the findings that name them.

Events reference a small pool of units, slices, heads and earlier event ids, so the folds'
lookups hit as often as they miss. Nothing here has to make sense as a run: the folds must
take whatever is on the log, and the views must follow.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
from hypothesis import strategies as st

from schemas import (
    Actor,
    Block,
    Event,
    FindingRaised,
    FindingResolved,
    MessageQuarantined,
    Outcome,
    UnitPlanned,
    UnitTransitioned,
    parse_target,
)
from schemas.adoption import ConfigAdopt, ConfigAdopted, config_digest
from schemas.charter import (
    Charter,
    CharterApprove,
    CharterApproved,
    CharterCriterion,
    CharterSubmission,
    RunCriteriaChecked,
    RunEnded,
    RunStop,
)
from schemas.decisions import BlockedRouted, DecisionRecorded
from schemas.lifecycle import FindingClaim, FindingDismissed
from schemas.merges import (
    ApproveReport,
    CandidateTested,
    CheckVerdict,
    MergeConflicted,
    MergeQueued,
    MergeReverted,
    TrunkAdvanced,
)
from schemas.ratchet import GateMoved
from schemas.reports import (
    BlockedReport,
    CommitReport,
    GaveUpReport,
    StartedReport,
    UnblockedReport,
)
from schemas.reviews import (
    InvestigationCompleted,
    InvestigationRequested,
    ReviewRequested,
    ReviewVerdict,
    RoundClosed,
    RungPromoted,
    VerdictAccepted,
    VerdictRefused,
)
from schemas.slices import (
    BootResult,
    MisalignmentRouted,
    PlannedUnit,
    PlanSubmission,
    RunEntryCompleted,
    SliceBudgets,
    SliceClosed,
    SlicePlan,
    SlicePlanAccepted,
    SlicePlanDiscarded,
    UnitDispatched,
    UsageReport,
)
from workers.gates.signing import Signer, load_or_create

SYSTEM = Actor(role="system", principal="tests")
BUILDER = Actor(role="builder", principal="b1")
REVIEWER = Actor(role="reviewer", principal="r1")
PLANNER = Actor(role="planner", principal="p1")
UNITS = ["U1", "U2", "U3", "U4"]
SLICES = ["S1", "S2"]
HEADS = ["a" * 40, "b" * 40, "c" * 40]
STATES = ["working", "blocked", "done", "failed", "lost"]
BY = ["started", "blocked", "gates", "hold", "returned", "merged", "halted", "unblocked"]
_signer: Signer | None = None


def signer() -> Signer:
    global _signer
    if _signer is None:
        _signer = load_or_create(Path(tempfile.mkdtemp()), "runner-1")
    return _signer


class Pool:
    """What a history has made so far, for later events to refer to."""

    def __init__(self, project: str) -> None:
        self.project = project
        self.ids: dict[str, list[str]] = {}

    def note(self, kind: str, event: Event) -> Event:
        self.ids.setdefault(kind, []).append(event.id)
        return event

    def some(self, draw: st.DrawFn, kind: str) -> str:
        known = self.ids.get(kind) or ["01HZZZZZZZZZZZZZZZZZZZZZZZ"]
        return draw(st.sampled_from(known))


Maker = Callable[[st.DrawFn, Pool], Event]


def _plan(draw: st.DrawFn, slice_id: str) -> SlicePlan:
    units = draw(st.lists(st.sampled_from(UNITS), min_size=1, max_size=4, unique=True))
    return SlicePlan(
        slice=slice_id,
        units=[
            PlannedUnit(id=u, title=f"t {u}", files=[f"src/{u}.py"], blocked_by=units[:i][-1:])
            for i, u in enumerate(units)
        ],
        budgets=SliceBudgets(),
    )


def units_events(draw: st.DrawFn, pool: Pool) -> Event:
    p, unit = pool.project, draw(st.sampled_from(UNITS))
    choice = draw(st.integers(0, 7))
    if choice == 0:
        return UnitPlanned(project=p, actor=SYSTEM, unit=unit, slice=draw(st.sampled_from(SLICES)))
    if choice == 1:
        state = draw(st.sampled_from(STATES))
        block = Block(reason="awaiting-dependency", subject="U1") if state == "blocked" else None
        outcome = (
            Outcome(summary="s", ended_by="report") if state in ("done", "failed", "lost") else None
        )
        return pool.note(
            "transition",
            UnitTransitioned(
                project=p,
                actor=draw(st.sampled_from([SYSTEM, SYSTEM, BUILDER])),
                unit=unit,
                state=state,
                block=block,
                outcome=outcome,  # type: ignore[arg-type]
                by=draw(st.sampled_from(BY)),
                cause=draw(st.sampled_from([None, pool.some(draw, "report")])),  # type: ignore[arg-type]
                commit=draw(st.sampled_from([None, *HEADS])),
            ),
        )
    reports: list[Event] = [
        StartedReport(project=p, actor=BUILDER, unit=unit),
        BlockedReport(
            project=p, actor=BUILDER, unit=unit, reason="awaiting-dependency", subject="U2"
        ),
        UnblockedReport(project=p, actor=BUILDER, unit=unit),
        CommitReport(project=p, actor=BUILDER, unit=unit, sha=draw(st.sampled_from(HEADS))),
        GaveUpReport(project=p, actor=BUILDER, unit=unit, why="stuck"),
        UsageReport(project=p, actor=BUILDER, unit=unit, tokens_in=draw(st.integers(0, 99))),
    ]
    return pool.note("report", reports[choice - 2])


def findings_events(draw: st.DrawFn, pool: Pool) -> Event:
    p = pool.project
    choice = draw(st.integers(0, 4))
    if choice == 4:
        return FindingResolved(
            project=p, actor=SYSTEM, finding=pool.some(draw, "finding"), why="ok"
        )
    if choice == 3:
        return MessageQuarantined(
            project=p,
            actor=SYSTEM,
            original_seq=draw(st.integers(1, 9)),
            original_subject=f"loop.{p}.unit.U1",
            reason="bad",
        )
    cls = draw(
        st.sampled_from(["defect", "refused-transition", "wait-budget", "misaligned", "forgery"])
    )
    line = draw(st.integers(1, 3))
    evidence: dict[str, Any] = (
        {"report": pool.some(draw, "report")} if cls == "refused-transition" else {}
    )
    if cls == "wait-budget":
        evidence = {"block": pool.some(draw, "transition")}
    if cls == "misaligned":
        evidence = {"criteria": ["C1"]}
    if cls == "forgery":  # names a transition, which a builder's would be a forgery of
        evidence = {"forged": pool.some(draw, "transition")}
    return pool.note(
        "finding",
        FindingRaised(
            project=p,
            actor=draw(st.sampled_from([SYSTEM, REVIEWER])),
            producer="reviewer",
            target=parse_target(f"code:src/m.py:{line}-{line}"),
            severity=draw(st.sampled_from(["low", "high"])),
            criterion="C1",
            cls=cls,  # type: ignore[arg-type]
            message=f"line {line}",
            unit=draw(st.sampled_from([None, *UNITS])),
            slice=draw(st.sampled_from([None, *SLICES])),
            evidence=evidence,
        ),
    )


def slices_events(draw: st.DrawFn, pool: Pool) -> Event:
    p, slice_id = pool.project, draw(st.sampled_from(SLICES))
    unit = draw(st.sampled_from(UNITS))
    choice = draw(st.integers(0, 6))
    if choice == 0:
        return pool.note(
            "submission", PlanSubmission(project=p, actor=PLANNER, plan=_plan(draw, slice_id))
        )
    if choice == 1:
        return SlicePlanAccepted(
            project=p, actor=SYSTEM, plan=_plan(draw, slice_id), cause=pool.some(draw, "submission")
        )
    if choice == 2:
        return pool.note(
            "dispatch",
            UnitDispatched(
                project=p,
                actor=SYSTEM,
                slice=slice_id,
                unit=unit,
                wave=0,
                sub_wave=0,
                position=0,
                base=draw(st.sampled_from(HEADS)),
            ),
        )
    if choice == 3:
        return RunEntryCompleted(
            project=p,
            actor=SYSTEM,
            slice=slice_id,
            unit=unit,
            dispatch=pool.some(draw, "dispatch"),
            state=draw(st.sampled_from(["done", "failed", "lost"])),
        )
    if choice == 4:
        return SliceClosed(project=p, actor=SYSTEM, slice=slice_id, boot=BootResult(outcome="pass"))
    if choice == 5:
        return SlicePlanDiscarded(project=p, actor=SYSTEM, slice=slice_id, why="re-slice")
    return MisalignmentRouted(
        project=p,
        actor=SYSTEM,
        slice=slice_id,
        finding=pool.some(draw, "finding"),
        criteria=["C1"],
        route=draw(st.sampled_from(["re-slice", "contract-change"])),
        owner="operator",
    )


def gates_events(draw: st.DrawFn, pool: Pool) -> Event:
    p, key = pool.project, signer()
    choice = draw(st.integers(0, 2))
    if choice == 0:
        return key.registration(p, SYSTEM)
    head = draw(st.sampled_from(HEADS))
    from schemas.gates import GateResultRecorded, GateSuiteCompleted, SuiteEntry

    outcome = draw(st.sampled_from(["pass", "fail", "error"]))
    result = key.sign(
        GateResultRecorded(
            project=p,
            actor=SYSTEM,
            check=draw(st.sampled_from(["tests", "lint"])),
            tree=head,
            commit=head,
            inputs=head,
            config_sha="0" * 64,
            outcome=outcome,
            error="boom" if outcome == "error" else "",
            summary="s",
            duration_s=1.0,
            runner=key.runner,
        )
    )
    if choice == 1:
        return pool.note("result", result)
    return key.sign(
        GateSuiteCompleted(
            project=p,
            actor=SYSTEM,
            commit=head,
            tree=head,
            unit=draw(st.sampled_from(UNITS)),
            outcome=result.outcome,
            runner=key.runner,
            checks=[
                SuiteEntry(
                    check=result.check,
                    outcome=result.outcome,
                    cached=False,
                    result=pool.some(draw, "result"),
                    duration_s=1.0,
                )
            ],
        )
    )


def reviews_events(draw: st.DrawFn, pool: Pool) -> Event:
    p, unit, head = pool.project, draw(st.sampled_from(UNITS)), draw(st.sampled_from(HEADS))
    choice = draw(st.integers(0, 7))
    round_no = draw(st.integers(1, 3))
    if choice == 0:
        return pool.note(
            "request",
            ReviewRequested(
                project=p,
                actor=SYSTEM,
                unit=unit,
                round=round_no,
                head=head,
                base=HEADS[0],
                reviewer="bob",
                diff_digest="d",
                cause=pool.some(draw, "transition"),
            ),
        )
    if choice == 1:
        return pool.note(
            "verdict",
            ReviewVerdict(
                project=p,
                actor=REVIEWER,
                unit=unit,
                request=pool.some(draw, "request"),
                head=head,
                verdict=draw(st.sampled_from(["approve", "reject"])),
            ),
        )
    if choice == 2:
        decision = draw(st.sampled_from(["approve", "reject"]))
        return VerdictAccepted(
            project=p,
            actor=SYSTEM,
            unit=unit,
            verdict=pool.some(draw, "verdict"),
            request=pool.some(draw, "request"),
            reviewer="bob",
            decision=decision,
            claimed=decision,
            round=round_no,
            head=head,
            cause=pool.some(draw, "verdict"),
        )
    if choice == 3:
        return VerdictRefused(
            project=p,
            actor=SYSTEM,
            unit=unit,
            reviewer="bob",
            reason="r",
            finding=pool.some(draw, "finding"),
            cause=pool.some(draw, "verdict"),
        )
    if choice == 4:
        return RoundClosed(
            project=p,
            actor=SYSTEM,
            unit=unit,
            round=round_no,
            head=head,
            failure_signature="f",
            diff_digest="d",
            passed=draw(st.booleans()),
            finding_keys=["k1"],
            blocking_keys=[],
            convergence=draw(st.sampled_from(["first", "converging", "stalled", "thrashing"])),
            action=draw(st.sampled_from(["continue", "approved", "halted", "promoted", "stopped"])),
            cause=pool.some(draw, "transition"),
        )
    if choice == 5:
        return RungPromoted(
            project=p,
            actor=SYSTEM,
            unit=unit,
            from_rung=1,
            to_rung=2,
            tactic="rethink",
            why="w",
            cause=pool.some(draw, "transition"),
        )
    if choice == 6:
        return pool.note(
            "investigation",
            InvestigationRequested(
                project=p,
                actor=SYSTEM,
                trigger=f"unit-failed:{unit}",
                trigger_kind="unit-failed",
                key=unit,
                failures=[pool.some(draw, "transition")],
                unit=unit,
            ),
        )
    return InvestigationCompleted(
        project=p,
        actor=SYSTEM,
        request=pool.some(draw, "investigation"),
        trigger=f"unit-failed:{unit}",
        key=unit,
        finding=pool.some(draw, "finding"),
        outcome="finding",
        cause=pool.some(draw, "investigation"),
    )


def merges_events(draw: st.DrawFn, pool: Pool) -> Event:
    p, unit = pool.project, draw(st.sampled_from(UNITS))
    head, other = draw(st.sampled_from(HEADS)), draw(st.sampled_from(HEADS))
    choice = draw(st.integers(0, 9))
    if choice == 8:  # the configuration that judges trunk, adopted (first start, operator)
        text = f'[project]\nid = "{p}"\n# {other[:6]}\n'
        return ConfigAdopted(
            project=p, actor=SYSTEM, commit=other, blob=head, digest=config_digest(text),
            text=text, why=draw(st.sampled_from(["first-start", "operator"])), by="o",
            cause=pool.some(draw, "adopt"),
        )  # fmt: skip
    if choice == 9:
        claim = ConfigAdopt(project=p, actor=Actor(role="operator", principal="o"), commit=head)
        return pool.note("adopt", claim)
    if choice >= 6:  # a gate finding of the merger's runs (or an operator's), for no unit
        check = draw(st.sampled_from(["tests", "tests", "lint", "gate-suite"]))
        return pool.note(
            "finding",
            FindingRaised(
                project=p, actor=SYSTEM, producer="gate_runner",
                target=parse_target(f"check:{check}"), severity="high", criterion=check,
                message="red", evidence={"commit": other, "check": check},
            ),
        )  # fmt: skip
    if choice == 0:
        return pool.note(
            "approval",
            ApproveReport(
                project=p, actor=Actor(role="operator", principal="o"), unit=unit, head=head
            ),
        )
    if choice == 1:
        return MergeQueued(
            project=p,
            actor=SYSTEM,
            unit=unit,
            head=head,
            approval=pool.some(draw, "approval"),
            approver="o",
            via="report",
            cause=pool.some(draw, "approval"),
        )
    if choice == 2:
        return CandidateTested(
            project=p,
            actor=SYSTEM,
            stage=draw(st.sampled_from(["candidate", "trunk"])),
            unit=unit,
            head=head,
            candidate=other,
            tree=other,
            outcome=draw(st.sampled_from(["pass", "fail"])),
            checks=[
                CheckVerdict(check=check, outcome=outcome, cached=False)
                for check, outcome in draw(
                    st.dictionaries(
                        st.sampled_from(["tests", "lint"]),
                        st.sampled_from(["pass", "fail", "fail"]),
                    )
                ).items()
            ],
        )
    if choice == 3:
        return TrunkAdvanced(
            project=p,
            actor=SYSTEM,
            trunk="main",
            unit=unit,
            commit=head,
            merge=other,
            tree=other,
            previous=HEADS[0],
            cause=pool.some(draw, "approval"),
        )
    if choice == 4:
        return MergeReverted(
            project=p,
            actor=SYSTEM,
            trunk="main",
            unit=unit,
            merge=head,
            revert=other,
            tree=other,
            finding=pool.some(draw, "finding"),
            cause=pool.some(draw, "finding"),
        )
    return MergeConflicted(
        project=p,
        actor=SYSTEM,
        unit=unit,
        head=head,
        base=other,
        paths=["src/a.py"],
        finding=pool.some(draw, "finding"),
        cause=pool.some(draw, "approval"),
    )


OPERATOR = Actor(role="operator", principal="o1")


def rules_events(draw: st.DrawFn, pool: Pool) -> Event:
    """The finding lifecycle, decisions, blocked-by-fact and the ratchet."""
    p = pool.project
    choice = draw(st.integers(0, 5))
    if choice == 0:
        return pool.note(
            "claim",
            FindingClaim(
                project=p, actor=OPERATOR, finding=pool.some(draw, "finding"),
                action="dismiss", reason="false-positive", why="noise",
            ),
        )  # fmt: skip
    if choice == 1:
        return FindingDismissed(
            project=p, actor=SYSTEM, finding=pool.some(draw, "finding"), reason="wont-fix",
            why="later", claim=pool.some(draw, "claim"), by="operator:o1",
        )  # fmt: skip
    if choice == 2:
        return pool.note(
            "decision",
            DecisionRecorded(
                project=p, actor=SYSTEM, question="which store?", options=["a", "b"],
                chosen=draw(st.sampled_from(["a", "b"])), owner="operator:o1",
                supersedes=draw(st.sampled_from([None, pool.some(draw, "decision")])),
                files=["src/m.py"],
            ),
        )  # fmt: skip
    if choice == 3:
        return GateMoved(
            project=p, actor=SYSTEM, gate=draw(st.sampled_from(["tests", "lint"])),
            scope="local", move="draft", source=None, target="Drafted",
            claim=pool.some(draw, "claim"), authority="project-operator",
        )  # fmt: skip
    if choice == 4:
        return BlockedRouted(
            project=p, actor=SYSTEM, finding=pool.some(draw, "finding"),
            slices=[draw(st.sampled_from(SLICES))],
        )  # fmt: skip
    return pool.note(
        "finding",
        FindingRaised(
            project=p, actor=SYSTEM, producer="reviewer",
            target=parse_target(f"plan:{draw(st.sampled_from(SLICES))}"), severity="high",
            criterion="C1", cls="blocked-by-fact", message="the plan is built on a false fact",
        ),
    )  # fmt: skip


def charter_events(draw: st.DrawFn, pool: Pool) -> Event:
    """Charters submitted and approved, runs judged, stopped and ended."""
    p = pool.project
    crit = CharterCriterion(id="adds", text="adds", test="tests/t.py::test_add")
    chosen = Charter(id=draw(st.sampled_from(["C1", "C2"])), title="t", criteria=(crit,))
    choice = draw(st.integers(0, 5))
    if choice == 0:
        return CharterSubmission(project=p, actor=OPERATOR, charter=chosen)
    if choice == 1:
        return pool.note("claim", CharterApprove(project=p, actor=OPERATOR, why="go"))
    if choice == 2:
        return pool.note(
            "run", CharterApproved(project=p, actor=SYSTEM, charter=chosen, claim=None)
        )
    if choice == 3:
        return RunCriteriaChecked(
            project=p, actor=SYSTEM, run=pool.some(draw, "run"), charter=chosen.id,
            trunk=draw(st.sampled_from(HEADS)), held=draw(st.sampled_from([(), ("adds",)])),
        )  # fmt: skip
    if choice == 4:
        return RunStop(project=p, actor=OPERATOR, why="enough")
    return RunEnded(
        project=p, actor=SYSTEM, run=pool.some(draw, "run"), charter=chosen.id, reason="budget"
    )


def contract_events(draw: st.DrawFn, pool: Pool) -> Event:
    """Contracts (tests/contract): plans bringing one, landings, config proposals."""
    from schemas.contract import (
        ConfigApprove,
        ConfigLanded,
        ConfigProposal,
        ContractChanges,
        ContractLanded,
        NewCriterion,
    )

    p, slice_id = pool.project, draw(st.sampled_from(SLICES))
    choice = draw(st.integers(0, 3))
    if choice == 0:
        changes = ContractChanges(
            criteria=(NewCriterion(test="tests/test_a.py::test_a", text="def test_a(): 0"),)
        )
        plan = msgspec.structs.replace(_plan(draw, slice_id), contract=changes)
        accepted = SlicePlanAccepted(project=p, actor=SYSTEM, plan=plan, cause="c")
        return pool.note("contract", accepted)
    if choice == 1:
        return ContractLanded(
            project=p, actor=SYSTEM, slice=slice_id, commit=draw(st.sampled_from(HEADS)),
            tree=HEADS[0], previous=HEADS[1], accepted=pool.some(draw, "contract"), config="d",
        )  # fmt: skip
    if choice == 2:
        return pool.note("proposal", ConfigProposal(project=p, actor=OPERATOR, text="x", why="w"))
    proposal = pool.some(draw, "proposal")
    if draw(st.booleans()):
        return pool.note(
            "approval", ConfigApprove(project=p, actor=OPERATOR, proposal=proposal, why="w")
        )
    return ConfigLanded(
        project=p, actor=SYSTEM, proposal=proposal, approval=pool.some(draw, "approval"),
        commit=HEADS[2], tree=HEADS[0], previous=HEADS[1], config="d",
    )  # fmt: skip


def lease_events(draw: st.DrawFn, pool: Pool) -> Event:
    """Leases (tests/leases): takings, takeovers, renewals and releases of a few items."""
    from schemas.leases import LeaseReleased, LeaseRenewed, LeaseTaken

    p, item = pool.project, draw(st.sampled_from(("I1", "I2")))
    holder, work = draw(st.sampled_from(("r1", "r2"))), draw(st.sampled_from(("gate", "build")))
    choice = draw(st.integers(0, 2))
    if choice == 0:
        lapsed = draw(st.sampled_from((None, "r1", "r2")))
        return LeaseTaken(
            project=p, actor=SYSTEM, work=work, item=item, holder=holder, ttl_s=30, lapsed=lapsed
        )
    if choice == 1:
        return LeaseRenewed(project=p, actor=SYSTEM, work=work, item=item, holder=holder, ttl_s=30)
    return LeaseReleased(
        project=p, actor=SYSTEM, work=work, item=item, holder=holder,
        how=draw(st.sampled_from(("done", "given-up"))),
    )  # fmt: skip


MAKERS: list[Maker] = [
    units_events,
    units_events,
    findings_events,
    slices_events,
    gates_events,
    reviews_events,
    merges_events,
    rules_events,
    charter_events,
    contract_events,
    lease_events,
]


@st.composite
def histories(draw: st.DrawFn, project: str, max_size: int = 60) -> list[Event]:
    """A mixed history of ``project`` touching every projection."""
    pool = Pool(project)
    steps = draw(st.lists(st.sampled_from(range(len(MAKERS))), min_size=1, max_size=max_size))
    return [MAKERS[step](draw, pool) for step in steps]
