"""The planner's decision, pure: when it asks for a plan (and when not), the re-ask with the
reasons, the bound on tries, reconnaissance first and again when a fact is said false,
supervised approval, the skeleton hold; and how an answer is read and judged."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import msgspec

from projections.intents import Effect, Publish, PublishBatch
from schemas import Actor, Event, FindingRaised, FindingResolved
from schemas.charter import Charter, CharterApproved, CharterCriterion, RunCriteriaChecked
from schemas.planning import (
    CAPPED,
    GAVE_UP,
    SKELETON_REVIEW,
    PlanApprove,
    PlanAttemptRefused,
    PlanBrief,
    PlanProposed,
    ReconFact,
    ReconRecorded,
    SkeletonApprove,
)
from schemas.slices import (
    BootResult,
    PlannedUnit,
    PlanSubmission,
    SliceClosed,
    SlicePlan,
    SlicePlanAccepted,
    SlicePlanDiscarded,
)
from schemas.targets import CodeTarget, PlanTarget
from workers.kernel import World
from workers.planner.answer import answer, parse_answer, plan_problems
from workers.planner.decide import FOLDS, Options, decide, trunk_key
from workers.planner.effects import PlanSlice, Reconnoitre

P = "demo"
SYSTEM = Actor(role="system", principal="test-system")
OPERATOR = Actor(role="operator", principal="ana")
BUILDER = Actor(role="builder", principal="b1")
HEAD = "a" * 40
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def charter(autonomy: str = "full") -> Charter:
    return Charter(
        id="C1",
        title="calculator",
        criteria=(CharterCriterion(id="adds", text="it adds", test="tests/t.py::test_add"),),
        autonomy=autonomy,  # type: ignore[arg-type]
    )


def started(autonomy: str = "full", trunk: str = HEAD) -> list[Event]:
    approved = CharterApproved(project=P, actor=SYSTEM, charter=charter(autonomy))
    checked = RunCriteriaChecked(
        project=P, actor=SYSTEM, run=approved.id, charter="C1", trunk=trunk, failing=("adds",)
    )
    return [approved, checked]


def world(events: list[Event], head: str = HEAD) -> World:
    states = {fold.name: fold.fold(events) for fold in FOLDS}
    return World(
        project=P,
        states=states,
        seqs={},
        now=NOW,
        actor=SYSTEM,
        outside={trunk_key(P): head},
    )


def plan(slice_id: str = "S1", *units: str, skeleton: bool = False) -> SlicePlan:
    return SlicePlan(
        slice=slice_id,
        units=[PlannedUnit(id=u, files=[f"src/{u}.py"]) for u in (units or ("U1",))],
        skeleton=skeleton,
    )


def effects(intents: list[Any], kind: type[Effect]) -> list[Any]:
    return [i for i in intents if isinstance(i, kind)]


def published(intents: list[Any]) -> list[Any]:
    out: list[Any] = []
    for intent in intents:
        if isinstance(intent, Publish):
            out.append(intent.event)
        elif isinstance(intent, PublishBatch):
            out.extend(intent.events)
    return out


def only_plan(intents: list[Any]) -> PlanBrief:
    (effect,) = effects(intents, PlanSlice)
    brief: PlanBrief = effect.brief
    return brief


def refused(basis: str, attempt: int, *problems: str, slice_id: str = "S1") -> PlanAttemptRefused:
    return PlanAttemptRefused(
        project=P,
        actor=SYSTEM,
        slice=slice_id,
        charter="C1",
        attempt=attempt,
        problems=list(problems),
        basis=basis,
    )


def basis_of(events: list[Event]) -> str:
    return str(world(events).state("planner").basis)


def closed(slice_plan: SlicePlan) -> list[Event]:
    accepted = SlicePlanAccepted(project=P, actor=SYSTEM, plan=slice_plan, cause="c")
    done = SliceClosed(
        project=P, actor=SYSTEM, slice=slice_plan.slice, boot=BootResult(outcome="pass")
    )
    return [accepted, done]


# -- when ------------------------------------------------------------------------------------


def test_nothing_without_a_charter_or_before_criteria_are_checked_on_trunk_head() -> None:
    assert decide(world([]), Options()) == []
    approved = started()[:1]
    assert decide(world(approved), Options()) == []  # never checked
    assert decide(world(started(), head="b" * 40), Options()) == []  # checked on an old head


def test_a_running_charter_checked_on_head_asks_for_s1_with_the_brief() -> None:
    brief = only_plan(decide(world(started()), Options()))
    assert (brief.slice, brief.attempt, brief.skeleton_allowed) == ("S1", 1, True)
    assert brief.charter["id"] == "C1"
    assert brief.lessons == [] and brief.refusals == [] and brief.closed == []


def test_a_met_or_ended_charter_is_not_planned_past() -> None:
    approved, _ = started()
    met = RunCriteriaChecked(
        project=P, actor=SYSTEM, run=approved.id, charter="C1", trunk=HEAD, held=("adds",)
    )
    assert decide(world([approved, met]), Options()) == []


def test_an_open_slice_holds_the_next_and_a_closed_one_is_followed_by_s2() -> None:
    events = started()
    s1 = plan("S1", "U1")
    events.append(SlicePlanAccepted(project=P, actor=SYSTEM, plan=s1, cause="c"))
    assert decide(world(events), Options()) == []
    events.append(SliceClosed(project=P, actor=SYSTEM, slice="S1", boot=BootResult(outcome="pass")))
    brief = only_plan(decide(world(events), Options()))
    assert brief.slice == "S2" and brief.used_units == ["U1"]
    assert [c.slice for c in brief.closed] == ["S1"]
    assert brief.skeleton_allowed is False  # S1 was accepted under the charter


# -- re-ask, bound, give up -----------------------------------------------------------------


def test_a_refused_try_is_asked_again_with_its_reasons_then_the_planner_gives_up() -> None:
    events = started()
    basis = basis_of(events)
    events.append(refused(basis, 1, "dependency cycle: U1 -> U2 -> U1"))
    brief = only_plan(decide(world(events), Options(max_tries=2)))
    assert brief.attempt == 2
    assert brief.refusals == ["try 1: dependency cycle: U1 -> U2 -> U1"]
    events.append(refused(basis, 2, "the plan has no units"))
    intents = decide(world(events), Options(max_tries=2))
    assert effects(intents, PlanSlice) == []
    (finding,) = published(intents)
    assert isinstance(finding, FindingRaised)
    assert (finding.criterion, finding.owner, finding.actor.role) == (GAVE_UP, "operator", "system")
    events.append(finding)
    assert decide(world(events), Options(max_tries=2)) == []  # raised once
    # Resolved (the operator's claim, answered by the system): a new round, try 1 again.
    events.append(FindingResolved(project=P, actor=SYSTEM, finding=finding.id, why="fixed"))
    assert only_plan(decide(world(events), Options(max_tries=2))).attempt == 1


def test_a_refusal_of_an_old_round_does_not_count() -> None:
    events = started()
    events.append(refused("01J0000000000000000000OLD0", 1, "stale"))
    assert only_plan(decide(world(events), Options())).attempt == 1


def test_the_dispatchers_refusal_of_the_submission_is_a_refused_try() -> None:
    events = started()
    basis = basis_of(events)
    proposed = PlanProposed(
        project=P, actor=SYSTEM, slice="S1", charter="C1", attempt=1, plan=plan(),
        autonomy="full", basis=basis,
    )  # fmt: skip
    events.append(proposed)
    (submission,) = published(decide(world(events), Options()))
    assert isinstance(submission, PlanSubmission)
    assert submission.actor == Actor(role="planner", principal="planner")
    events.append(submission)
    assert decide(world(events), Options()) == []  # waits for the dispatcher
    refusal = FindingRaised(
        project=P, actor=SYSTEM, producer="standards", target=PlanTarget(slice="S1"),
        severity="high", criterion="plan-valid", cls="refused-transition", message="refused",
        evidence={"submission": submission.id, "problems": ["pending criterion X unclaimed"]},
    )  # fmt: skip
    events.append(refusal)
    brief = only_plan(decide(world(events), Options()))
    assert brief.attempt == 2 and brief.refusals == ["try 1: pending criterion X unclaimed"]


# -- autonomy -------------------------------------------------------------------------------


def test_supervised_waits_for_the_operators_approval_and_ignores_anyone_elses() -> None:
    events = started("supervised")
    basis = basis_of(events)
    events.append(
        PlanProposed(
            project=P, actor=SYSTEM, slice="S1", charter="C1", attempt=1, plan=plan(),
            autonomy="supervised", basis=basis,
        )
    )  # fmt: skip
    assert decide(world(events), Options()) == []
    events.append(PlanApprove(project=P, actor=BUILDER, slice="S1", why="me"))  # a forgery
    assert decide(world(events), Options()) == []
    events.append(PlanApprove(project=P, actor=OPERATOR, slice="S1", why="looks right"))
    (submission,) = published(decide(world(events), Options()))
    assert isinstance(submission, PlanSubmission) and submission.plan == plan()


def test_an_approval_names_the_proposal_the_operator_saw() -> None:
    """``approve --plan`` names the proposal: an approval of an earlier proposal for the
    same slice (before a re-ask) does not pass to the one proposed now."""
    events = started("supervised")
    proposed = PlanProposed(
        project=P, actor=SYSTEM, slice="S1", charter="C1", attempt=2, plan=plan(),
        autonomy="supervised", basis=basis_of(events),
    )  # fmt: skip
    events.append(proposed)
    stale = PlanApprove(project=P, actor=OPERATOR, slice="S1", why="ok", proposal="01J0OLD")
    events.append(stale)
    assert decide(world(events), Options()) == []
    events.append(
        PlanApprove(project=P, actor=OPERATOR, slice="S1", why="ok", proposal=proposed.id)
    )
    (submission,) = published(decide(world(events), Options()))
    assert isinstance(submission, PlanSubmission) and submission.plan == plan()


def test_full_autonomy_proposes_and_submits_in_one_batch_supervised_only_proposes() -> None:
    brief = PlanBrief(project=P, slice="S1", attempt=1)
    args = PlanSlice(
        project=P, brief=brief, basis="01J00000000000000000000000", charter="C1", autonomy="full"
    )
    full = answer(P, args, (plan(), "why"), actor=SYSTEM, now=NOW)
    assert isinstance(full, PublishBatch)
    proposed, submission = full.events
    assert isinstance(proposed, PlanProposed) and isinstance(submission, PlanSubmission)
    assert proposed.submission == submission.id
    supervised = answer(
        P, msgspec.structs.replace(args, autonomy="supervised"), (plan(), ""), actor=SYSTEM, now=NOW
    )
    assert isinstance(supervised, Publish) and isinstance(supervised.event, PlanProposed)
    refusal = answer(P, args, ["bad"], actor=SYSTEM, now=NOW)
    assert isinstance(refusal, Publish) and isinstance(refusal.event, PlanAttemptRefused)


# -- reconnaissance ---------------------------------------------------------------------------


def recorded(basis: str, *facts: str, answers: tuple[str, ...] = ()) -> ReconRecorded:
    return ReconRecorded(
        project=P,
        actor=SYSTEM,
        charter="C1",
        facts=[ReconFact(id=f, text=f"fact {f}") for f in facts],
        answers=list(answers),
    )


def test_reconnaissance_runs_before_the_first_plan_and_its_facts_reach_the_brief() -> None:
    events = started()
    (effect,) = decide(world(events), Options(recon=True))
    assert isinstance(effect, Reconnoitre)
    events.append(recorded(basis_of(events), "F1"))
    brief = only_plan(decide(world(events), Options(recon=True)))
    assert [f.id for f in brief.recon] == ["F1"]


def test_a_blocked_by_fact_finding_on_a_recon_fact_reruns_reconnaissance() -> None:
    events = started()
    events.append(recorded(basis_of(events), "F1", "F2"))
    blocked = FindingRaised(
        project=P, actor=BUILDER, producer="builder", target=PlanTarget(slice="S1"),
        severity="high", criterion="layout", cls="blocked-by-fact",
        message="tests are not under tests/", evidence={"fact": "F2"},
    )  # fmt: skip
    events.append(blocked)
    intents = decide(world(events), Options(recon=True))
    (effect,) = effects(intents, Reconnoitre)
    assert [f.id for f in effect.brief.invalidated] == [blocked.id]
    assert [f.id for f in effect.brief.previous] == ["F1", "F2"]
    events.append(recorded(basis_of(events), "F1", "F2b", answers=(blocked.id,)))
    brief = only_plan(decide(world(events), Options(recon=True)))
    assert [f.id for f in brief.recon] == ["F1", "F2b"]
    # Still open (a new plan answers it), and the planner is told which fact it contradicts.
    assert [(f.id, f.fact) for f in brief.findings] == [(blocked.id, "F2")]
    # A blocked-by-fact finding naming no recon fact re-runs nothing.
    other = msgspec.structs.replace(blocked, id="01J0000000000000000000000X", evidence={})
    assert effects(decide(world([*events, other]), Options(recon=True)), Reconnoitre) == []


# -- skeleton -------------------------------------------------------------------------------


def test_a_closed_skeleton_holds_build_slices_until_the_operator_approves() -> None:
    events = started() + closed(plan("S1", "U1", skeleton=True))
    intents = decide(world(events), Options())
    assert effects(intents, PlanSlice) == []
    (review,) = published(intents)
    assert review.criterion == SKELETON_REVIEW and review.owner == "operator"
    events.append(review)
    assert decide(world(events), Options()) == []
    events.append(SkeletonApprove(project=P, actor=BUILDER, slice="S1", why="me"))  # forged
    assert decide(world(events), Options()) == []
    events.append(SkeletonApprove(project=P, actor=OPERATOR, slice="S1", why="signatures ok"))
    assert only_plan(decide(world(events), Options())).slice == "S2"


def test_a_discarded_slice_is_planned_again_under_its_own_id() -> None:
    events = started()
    events.append(SlicePlanAccepted(project=P, actor=SYSTEM, plan=plan("S1", "U1"), cause="c"))
    events.append(SlicePlanDiscarded(project=P, actor=SYSTEM, slice="S1", why="blocked"))
    brief = only_plan(decide(world(events), Options()))
    assert brief.slice == "S1" and brief.used_units == ["U1"]


# -- reading and judging an answer --------------------------------------------------------------

GOOD_TOML = '[slice]\nid = "S1"\n\n[[unit]]\nid = "U1"\nfiles = ["src/a.py"]\n'


def test_an_answer_is_read_as_envelope_json_plan_or_toml_plan() -> None:
    as_toml = parse_answer(GOOD_TOML.encode())
    envelope = {"plan": {"slice": {"id": "S1"}, "unit": [{"id": "U1"}]}, "summary": "first"}
    as_envelope = parse_answer(msgspec.json.encode(envelope))
    as_json = parse_answer(msgspec.json.encode(envelope["plan"]))
    assert isinstance(as_toml, tuple) and as_toml[0].units[0].id == "U1"
    assert isinstance(as_envelope, tuple) and as_envelope[1] == "first"
    assert isinstance(as_json, tuple) and as_json[0].slice == "S1"
    assert parse_answer(b"  ") == ["the planner printed nothing; print a plan (docs/planning.md)"]
    broken = parse_answer(b'[slice]\nid = "S1"\n')
    assert isinstance(broken, list) and any("at least one [[unit]]" in p for p in broken)


def test_plan_problems_are_plan_checks_and_the_planners_own_rules() -> None:
    cycle = SlicePlan(
        slice="S2",
        units=[PlannedUnit(id="U1", blocked_by=["U2"]), PlannedUnit(id="U2", blocked_by=["U1"])],
        skeleton=True,
    )
    problems = plan_problems(cycle, "S1", ["tests/t.py::test_add"], skeleton_allowed=False)
    assert any("the slice to plan is S1" in p for p in problems)
    assert any("only a charter's first slice may be a skeleton" in p for p in problems)
    assert any("dependency cycle: U1 -> U2 -> U1" in p for p in problems)
    assert any("tests/t.py::test_add is claimed by no unit" in p for p in problems)
    used = plan_problems(plan("S1", "U1"), "S1", None, skeleton_allowed=True, used_units=["U1"])
    assert used and "U1 is used by an earlier slice" in used[0]
    assert plan_problems(plan("S1", "U1"), "S1", None, skeleton_allowed=True) == []


def test_a_reviewers_finding_named_like_the_planners_silences_nothing() -> None:
    """The system re-raises a reviewer's findings with the reviewer's own criterion, class
    and evidence: one named ``planner-gave-up`` for this round must not pass for the
    planner's, or the operator would never be told the planner gave up (and resolving it
    would reset the bounded tries)."""
    events = started()
    basis = basis_of(events)
    events.append(
        FindingRaised(
            project=P, actor=SYSTEM, producer="reviewer", target=PlanTarget(slice="S1"),
            severity="high", criterion=GAVE_UP, cls="meta", message="nothing to see",
            evidence={"basis": basis}, slice="S1",
        )
    )  # fmt: skip
    events.append(refused(basis, 1, "the plan has no units"))
    (finding,) = published(decide(world(events), Options(max_tries=1)))
    assert isinstance(finding, FindingRaised) and finding.criterion == GAVE_UP
    assert finding.producer == "standards"


def test_a_plan_the_log_would_refuse_is_a_refused_try_not_a_failing_effect() -> None:
    """A plan carrying a text over the log's limit cannot be recorded: publishing it would
    fail and the kernel would perform the planner again and again. It is a refused try,
    with the reason, and the answer's problems are each bounded."""
    brief = PlanBrief(project=P, slice="S1", attempt=1)
    args = PlanSlice(
        project=P, brief=brief, basis="01J00000000000000000000000", charter="C1", autonomy="full"
    )
    huge = msgspec.structs.replace(plan(), units=[PlannedUnit(id="U1", title="x" * 70_000)])
    refusal = answer(P, args, (huge, ""), actor=SYSTEM, now=NOW)
    assert isinstance(refusal, Publish) and isinstance(refusal.event, PlanAttemptRefused)
    assert "cannot be recorded on the log" in refusal.event.problems[0]
    long = answer(P, args, ["y" * 70_000], actor=SYSTEM, now=NOW)
    assert isinstance(long, Publish) and isinstance(long.event, PlanAttemptRefused)
    assert len(long.event.problems[0]) <= 1000


# -- the run's allowance ----------------------------------------------------------------------


def blocked_on(fact: str, n: int, target: Any = None) -> FindingRaised:
    return FindingRaised(
        id=f"01J00000000000000000000B{n:02d}",
        project=P, actor=BUILDER, producer="builder", target=target or PlanTarget(slice="S1"),
        severity="high", criterion="layout", cls="blocked-by-fact",
        message=f"fact {fact} is false ({n})", evidence={"fact": fact},
    )  # fmt: skip


def test_blocked_by_fact_findings_rerun_reconnaissance_only_up_to_the_runs_cap() -> None:
    """Each trusted finding re-runs reconnaissance and starts a new round (tries reset), but
    the run's allowance does not reset: at the cap, one finding and nothing more."""
    options = Options(recon=True, max_recon_runs=2)
    events = started()
    events.append(recorded(basis_of(events), "F1"))
    events.append(blocked_on("F1", 1))
    assert effects(decide(world(events), options), Reconnoitre)  # the second run is allowed
    events.append(recorded(basis_of(events), "F1", answers=(blocked_on("F1", 1).id,)))
    events.append(blocked_on("F1", 2))
    intents = decide(world(events), options)
    assert effects(intents, Reconnoitre) == [] and effects(intents, PlanSlice) == []
    (finding,) = published(intents)
    assert (finding.criterion, finding.owner, finding.cls) == (CAPPED, "operator", "meta")
    assert "reconnaissance ran 2 times ([recon] max_runs = 2)" in finding.message
    events.append(finding)
    events.append(blocked_on("F1", 3))
    assert decide(world(events), options) == []  # stopped, and said once
    # The operator closes it: a new allowance, reconnaissance runs again.
    events.append(FindingResolved(project=P, actor=SYSTEM, finding=finding.id, why="fixed"))
    assert effects(decide(world(events), options), Reconnoitre)


def test_the_planners_answers_are_capped_per_run_across_rounds() -> None:
    """Rounds restart when a slice closes; the run's count of answers does not."""
    options = Options(max_tries=3, max_run_tries=2)
    events = started()
    events.append(refused(basis_of(events), 1, "no units"))
    events += closed(plan("S1", "U1"))  # a new round: the try count restarts
    events.append(refused(basis_of(events), 1, "no units", slice_id="S2"))
    intents = decide(world(events), options)
    assert effects(intents, PlanSlice) == []
    (finding,) = published(intents)
    assert finding.criterion == CAPPED
    assert "the planner answered 2 times ([plan] max_run_tries = 2)" in finding.message


def test_only_trusted_blocked_by_fact_findings_invalidate_reconnaissance() -> None:
    """About a plan or a decision, naming a fact the latest reconnaissance holds: anything
    else re-runs nothing (and so spends none of the run's allowance)."""
    events = started()
    events.append(recorded(basis_of(events), "F1"))
    unknown_fact = blocked_on("F9", 1)
    about_code = blocked_on("F1", 2, target=CodeTarget(path="src/app.py", start=1, end=2))
    for finding in (unknown_fact, about_code):
        state = world([*events, finding]).state("planner")
        assert state.invalidations == {}
        assert effects(decide(world([*events, finding]), Options(recon=True)), Reconnoitre) == []


def test_a_contract_refused_at_landing_is_one_refused_try_with_the_mergers_reasons() -> None:
    events = started()
    basis = basis_of(events)
    proposed = PlanProposed(
        project=P, actor=SYSTEM, slice="S1", charter="C1", attempt=1, plan=plan(),
        autonomy="full", basis=basis,
    )  # fmt: skip
    accepted = SlicePlanAccepted(project=P, actor=SYSTEM, plan=plan(), cause=proposed.submission)
    refusal = FindingRaised(
        project=P, actor=SYSTEM, producer="trunk_gate", target=PlanTarget(slice="S1"),
        severity="medium", criterion="contract-invalid", cls="refused-transition",
        message="contract of slice S1 refused", slice="S1", owner="planner",
        evidence={"contract_accepted": accepted.id, "refused": ["test_x is defined already"]},
    )  # fmt: skip
    discarded = SlicePlanDiscarded(
        project=P, actor=SYSTEM, slice="S1", why="contract refused", cause=refusal.id
    )
    events += [proposed, accepted, refusal, discarded]
    assert basis_of(events) == basis  # no new round: the tries stay bounded
    brief = only_plan(decide(world(events), Options(max_tries=2)))
    assert brief.attempt == 2
    assert brief.refusals == [
        "try 1: the merger refused the contract at landing: test_x is defined already"
    ]
    events.append(refused(basis, 2, "still wrong"))
    (finding,) = published(decide(world(events), Options(max_tries=2)))
    assert finding.criterion == GAVE_UP
    # The same refusal claimed by an agent's finding is not the merger's: a discard naming
    # it starts a new round as any discard does.
    forged = msgspec.structs.replace(refusal, id="01J0000000000000000000000F", actor=BUILDER)
    other = [*started(), proposed, accepted, forged]
    other.append(
        msgspec.structs.replace(discarded, id="01J0000000000000000000000D", cause=forged.id)
    )
    assert basis_of(other) != basis_of(started())


def test_a_contract_writing_a_charter_pinned_file_otherwise_is_refused() -> None:
    """The planner daemon checks the plan against the charter in its brief: a contract
    writing a test file whose source the charter gives, with other code, is a refused try
    (the planner is re-asked with the reason), not a test that can never meet its
    criterion."""
    from loopbus.charter_file import parse_charter
    from loopbus.scaffold import CHARTER_TOML, SLICE_2_TOML
    from projections.plan_parse import parse_plan

    charter = parse_charter(CHARTER_TOML)
    plan = parse_plan(SLICE_2_TOML)
    assert plan_problems(plan, "S2", None, skeleton_allowed=False, charter=charter) == []
    assert plan.contract is not None
    rewritten = msgspec.structs.replace(
        plan.contract,
        criteria=tuple(
            msgspec.structs.replace(c, text=c.text.replace("== 2", "is not None"))
            for c in plan.contract.criteria
        ),
    )
    changed = msgspec.structs.replace(plan, contract=rewritten)
    [problem] = plan_problems(changed, "S2", None, skeleton_allowed=False, charter=charter)
    assert "tests/test_slice2.py" in problem and "'subtracts' pins this whole file" in problem
