"""The merger's decision alone: worlds built from event lists, no bus, no repository."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from projections import builds as builds_fold
from projections import merges as merges_fold
from projections import units as units_fold
from projections.intents import Intent, MoveUnit, Publish, PublishBatch
from projections.merges import QueueEntry
from schemas import Actor, Event, FindingRaised, UnitPlanned, UnitTransitioned
from schemas.adoption import ConfigAdopt, ConfigAdopted, config_digest
from schemas.authority import refused_claim
from schemas.builds import DecisionOption
from schemas.decisions import DecisionChoice, DecisionRecorded, DecisionRequested
from schemas.ids import answer_id
from schemas.merges import ApproveReport, CandidateTested, MergeQueued
from schemas.reports import CommitReport
from schemas.slices import UnitDispatched
from schemas.targets import RecordTarget
from workers.kernel import World
from workers.merger import facts
from workers.merger.decide import Policy, decide
from workers.merger.effects import (
    Adopt,
    AdoptFirst,
    CheckTrunk,
    Land,
    RecordAdvance,
    RecordRed,
    Stack,
)
from workers.merger.gates import TrunkVerdict
from workers.merger.gitops import MergeAttempt
from workers.merger.seen import (
    PIPELINE,
    QUEUED,
    TRUNK,
    CandidateView,
    PipelineView,
    TrunkSeen,
    request_of,
)

P = "shop"
SYSTEM = Actor(role="system", principal="tests")
MERGER = Actor(role="system", principal="merger@tests")
ALICE = Actor(role="builder", principal="alice")
BOB = Actor(role="operator", principal="bob")
NOW = datetime(2030, 1, 1, tzinfo=UTC)
TRUNK0, HEAD, MERGE, TREE = "1" * 40, "2" * 40, "3" * 40, "4" * 40
CONFIG = '[project]\nid = "shop"\n\n[[check]]\nid = "tests"\ncommand = "pytest"\n'
DIGEST = config_digest(CONFIG)
ADOPTED = ConfigAdopted(
    project=P, actor=MERGER, commit=TRUNK0, blob=TREE, digest=DIGEST, text=CONFIG,
    why="first-start", by="olive@host",
)  # fmt: skip


def ready_unit(unit: str = "U1", head: str = HEAD) -> list[Event]:
    """A unit planned, started, with ``head`` submitted by alice and its gates green."""
    report = CommitReport(project=P, actor=ALICE, unit=unit, sha=head)

    def moved(by: Any, **fields: Any) -> UnitTransitioned:
        return UnitTransitioned(
            project=P, actor=SYSTEM, unit=unit, state="working", by=by, **fields
        )

    return [
        UnitPlanned(project=P, actor=SYSTEM, unit=unit, slice="S1"),
        moved("started", prior=None, cause=report.id),
        report,
        moved("commit", prior="working", cause=report.id, commit=head),
        moved("gates", prior="working", cause=report.id, commit=head, ready=True),
    ]


def green_trunk(commit: str = TRUNK0) -> CandidateTested:
    return CandidateTested(
        project=P, actor=MERGER, stage="trunk", candidate=commit, tree=TREE, outcome="pass",
        config=DIGEST,
    )  # fmt: skip


def queued(approval: ApproveReport) -> MergeQueued:
    return MergeQueued(
        id=answer_id(approval.id, "queued"), project=P, actor=MERGER, unit=approval.unit,
        head=approval.head, approval=approval.id, approver="bob", via="report",
        cause=approval.id,
    )  # fmt: skip


def world(events: Sequence[Event], running: frozenset[str] = frozenset(), **outside: Any) -> World:
    """The merger's world after ``events``, on a project whose configuration was adopted
    at first start (``ADOPTED`` comes first)."""
    events = [ADOPTED, *events]
    states = {
        "units": units_fold.FOLD.fold(list(events)),
        "merges": merges_fold.FOLD.fold(list(events)),
        "builds": builds_fold.FOLD.fold(list(events)),
    }
    return World(
        project=P, states=states, seqs={}, now=NOW, actor=MERGER, outside=outside,
        running=running,
    )  # fmt: skip


def only(intents: Sequence[Intent]) -> Intent:
    assert len(intents) == 1, intents
    return intents[0]


def test_self_approval_is_refused_with_an_id_derived_from_the_approval() -> None:
    """The author's own approval is answered with a self-approval finding, the same twice."""
    approval = ApproveReport(project=P, actor=Actor(role="operator", principal="alice"),
                             unit="U1", head=HEAD)  # fmt: skip
    events = [*ready_unit(), approval]
    first, again = decide(world(events), Policy()), decide(world(events), Policy())
    intent = only(first)
    assert isinstance(intent, Publish) and isinstance(intent.event, FindingRaised)
    assert intent.event.criterion == "self-approval"
    assert intent.event.id == answer_id(approval.id, "refused")
    assert refused_claim(intent.event) == approval.id  # it names the claim it answers
    assert intent.event.at == NOW  # the decision's time, not the clock's
    assert first == again


def test_a_valid_approval_queues_the_head_even_while_an_effect_runs() -> None:
    """Approvals need only the log: they are answered while the shell is busy with git."""
    approval = ApproveReport(project=P, actor=BOB, unit="U1", head=HEAD)
    intent = only(decide(world([*ready_unit(), approval], running=frozenset({"x"})), Policy()))
    assert isinstance(intent, Publish) and isinstance(intent.event, MergeQueued)
    assert (intent.event.unit, intent.event.head, intent.event.cause) == ("U1", HEAD, approval.id)


def test_nothing_about_trunk_is_decided_before_the_ref_is_seen_or_while_an_effect_runs() -> None:
    """Without the trunk ref, or with an effect in flight, the queue waits."""
    approval = ApproveReport(project=P, actor=BOB, unit="U1", head=HEAD)
    events = [*ready_unit(), approval, queued(approval), green_trunk()]
    assert decide(world(events), Policy()) == []
    seen = TrunkSeen(TRUNK0, tree=TREE)
    assert decide(world(events, running=frozenset({"land:x"}), trunk=seen), Policy()) == []


def test_an_unknown_trunk_is_gated_first_with_the_adopted_configuration() -> None:
    """A trunk commit the log does not know is gated (an effect of the shell), judged with
    the adopted configuration and held to the adopted commit as its reference."""
    intent = only(decide(world([], **{TRUNK: TrunkSeen(TRUNK0, tree=TREE)}), Policy()))
    assert isinstance(intent, CheckTrunk)
    assert (intent.ref, intent.cause) == (TRUNK0, None)
    assert intent.judge.digest == DIGEST and intent.reference == TRUNK0


def test_without_an_adoption_trunk_is_not_gated_until_one_is_made() -> None:
    """No adoption on the log: the first thing asked is to adopt trunk's file (a first
    start), never to gate trunk with whatever the commit says."""
    states = {
        "units": units_fold.FOLD.initial(),
        "merges": merges_fold.FOLD.initial(),
        "builds": builds_fold.FOLD.initial(),
    }
    seen = TrunkSeen(TRUNK0, tree=TREE)
    bare = World(project=P, states=states, seqs={}, now=NOW, actor=MERGER, outside={TRUNK: seen})
    intent = only(decide(bare, Policy()))
    assert isinstance(intent, AdoptFirst)


def test_an_agents_adoption_claim_is_refused_and_an_operators_goes_to_the_shell() -> None:
    """A config.adopt claim from an agent is refused with a finding; an operator's is read
    by the shell (the file of the commit it names)."""
    seen = {TRUNK: TrunkSeen(TRUNK0, tree=TREE)}
    agent = ConfigAdopt(project=P, actor=ALICE, commit=HEAD)
    refusal = only(decide(world([green_trunk(), agent], **seen), Policy()))
    assert isinstance(refusal, Publish) and isinstance(refusal.event, FindingRaised)
    assert refusal.event.criterion == "adopter-role"
    assert refusal.event.evidence["claim"] == agent.id
    claim = ConfigAdopt(project=P, actor=BOB, commit=HEAD, why="reviewed")
    events = [green_trunk(), agent, refusal.event, claim]
    effect = only(decide(world(events, **seen), Policy()))
    assert isinstance(effect, Adopt)
    assert effect.claim.id == claim.id


def _stacked(events: list[Event], verdict: TrunkVerdict | None) -> dict[str, Any]:
    entry: QueueEntry = merges_fold.FOLD.fold(events).queue[0]
    attempt = MergeAttempt(ours=TRUNK0, theirs=HEAD, base=TRUNK0, commit=MERGE, tree=TREE)
    view = CandidateView((TRUNK0, "U1", HEAD), attempt, (), verdict)
    return {
        TRUNK: TrunkSeen(TRUNK0, tree=TREE),
        PIPELINE: PipelineView(request_of(TRUNK0, [entry], DIGEST), (view,)),
    }


def test_the_queue_asks_for_a_stack_then_records_the_heads_result() -> None:
    """No stack yet: ask the shell for one; a green head result is recorded on trunk."""
    approval = ApproveReport(project=P, actor=BOB, unit="U1", head=HEAD)
    events = [*ready_unit(), approval, queued(approval), green_trunk()]
    ask = only(decide(world(events, **{TRUNK: TrunkSeen(TRUNK0, tree=TREE)}), Policy()))
    assert isinstance(ask, Stack) and ask.trunk == TRUNK0

    running = _stacked(events, None)
    assert decide(world(events, **running), Policy()) == []  # its test runs

    green = TrunkVerdict(commit=MERGE, tree=TREE, outcome="pass", config=DIGEST)
    record = only(decide(world(events, **_stacked(events, green)), Policy()))
    assert isinstance(record, Publish) and isinstance(record.event, CandidateTested)
    assert (record.event.stage, record.event.base, record.event.candidate) == (
        "candidate",
        TRUNK0,
        MERGE,
    )

    land = only(decide(world([*events, record.event], **_stacked(events, green)), Policy()))
    assert isinstance(land, Land)


def auto_picked(unit: str = "U1", decision: str = "rounding") -> list[Event]:
    """``unit`` dispatched, and ``long`` mode's pick of ``decision`` recorded for it."""
    dispatched = UnitDispatched(
        project=P, actor=SYSTEM, slice="S1", unit=unit, title="t", wave=0, sub_wave=0,
        position=0, attempt=1, files=[], criteria=[],
    )  # fmt: skip
    option = DecisionOption(id="cents", summary="round to cents")
    asked = DecisionRequested(
        project=P, actor=SYSTEM, unit=unit, decision_id=decision, question="round?",
        options=[option, DecisionOption(id="raw", summary="keep raw")],
        recommended_default="cents", confidence="high", routed="auto", autonomy="risky",
    )  # fmt: skip
    picked = DecisionRecorded(
        project=P, actor=SYSTEM, unit=unit, decision_id=decision, question="round?",
        options=["cents", "raw"], chosen="cents", owner="auto", confidence=0.9,
        cause=asked.id,
    )  # fmt: skip
    return [dispatched, asked, picked]


def confirm(actor: Actor, choose: str = "cents", unit: str = "U1") -> DecisionChoice:
    return DecisionChoice(project=P, actor=actor, unit=unit, decision_id="rounding", choose=choose)


def test_an_unseen_auto_pick_holds_its_unit_and_an_operator_confirmation_frees_it() -> None:
    """A queued unit whose auto pick no second principal has seen is not stacked (the
    queue asks for nothing); a builder's "confirmation" (a forgery the folds skip) or an
    operator choosing another option frees nothing; the operator choosing the option
    picked does, and the queue asks for the stack."""
    approval = ApproveReport(project=P, actor=BOB, unit="U1", head=HEAD)
    events = [*auto_picked(), *ready_unit(), approval, queued(approval), green_trunk()]
    outside = {TRUNK: TrunkSeen(TRUNK0, tree=TREE)}
    assert decide(world(events, **outside), Policy()) == []
    for unheard in (confirm(ALICE), confirm(BOB, choose="raw")):
        assert decide(world([*events, unheard], **outside), Policy()) == []
    ask = only(decide(world([*events, confirm(BOB)], **outside), Policy()))
    assert isinstance(ask, Stack)
    assert [e.unit for e in ask.entries] == ["U1"]


def test_a_held_unit_does_not_hold_the_units_queued_behind_it() -> None:
    """The unit behind a held one is stacked on its own."""
    first = ApproveReport(project=P, actor=BOB, unit="U1", head=HEAD)
    second = ApproveReport(project=P, actor=BOB, unit="U2", head=MERGE)
    events = [
        *auto_picked(),
        *ready_unit(),
        *ready_unit("U2", MERGE),
        first,
        queued(first),
        second,
        queued(second),
        green_trunk(),
    ]
    ask = only(decide(world(events, **{TRUNK: TrunkSeen(TRUNK0, tree=TREE)}), Policy()))
    assert isinstance(ask, Stack)
    assert [e.unit for e in ask.entries] == ["U2"]


def test_a_red_head_result_needs_the_sibling_diff_from_the_shell() -> None:
    """A red head result is recorded by the shell, which reads the siblings for the finding."""
    approval = ApproveReport(project=P, actor=BOB, unit="U1", head=HEAD)
    events = [*ready_unit(), approval, queued(approval), green_trunk()]
    red = TrunkVerdict(commit=MERGE, tree=TREE, outcome="fail", config=DIGEST)
    effect = only(decide(world(events, **_stacked(events, red)), Policy()))
    assert isinstance(effect, RecordRed)
    assert effect.case.onto == TRUNK0 and effect.case.who.authors == ("alice",)


def test_a_merge_found_on_trunk_by_its_trailers_is_recorded_then_settled() -> None:
    """Trunk at the merger's own unrecorded merge: recorded; green again after: unit DONE."""
    approval = ApproveReport(project=P, actor=BOB, unit="U1", head=HEAD)
    entry = queued(approval)
    tested = CandidateTested(
        project=P, actor=MERGER, stage="candidate", unit="U1", head=HEAD, candidate=MERGE,
        tree=TREE, base=TRUNK0, outcome="pass", cause=entry.id, config=DIGEST,
    )  # fmt: skip
    events: list[Event] = [*ready_unit(), approval, entry, green_trunk(), tested]
    seen = TrunkSeen(MERGE, tree=TREE, trailers={QUEUED: entry.id})
    record = only(decide(world(events, trunk=seen), Policy()))
    assert isinstance(record, RecordAdvance)
    assert record.tested.id == tested.id  # the shell adds the merge's adoption
    advance = facts.advanced(P, MERGER, "main", record.entry, record.tested)
    assert advance.id == answer_id(tested.id, "advance")

    events += [advance, green_trunk(MERGE)]
    done = only(decide(world(events, trunk=seen), Policy()))
    assert isinstance(done, MoveUnit)
    assert (done.move.state, done.move.by, done.move.unit) == ("done", "merged", "U1")
    assert done.move.cause == events[-1].id  # the trunk run that stayed green


def test_a_head_result_lists_the_gate_results_it_names_before_itself() -> None:
    """The candidate's records (unpublished: the gate library publishes nothing) come first
    in the decision's intents, green or red, so the kernel, publishing in order and
    stopping at the first failure, never stores the verdict without them."""
    approval = ApproveReport(project=P, actor=BOB, unit="U1", head=HEAD)
    events = [*ready_unit(), approval, queued(approval), green_trunk()]
    recorded = FindingRaised(
        project=P, actor=MERGER, producer="gate_runner", target=RecordTarget(id="commit:x"),
        severity="low", message="a result's finding", criterion="tests",
    )  # fmt: skip
    records = (PublishBatch((recorded,)),)
    for outcome, last in (("pass", Publish), ("fail", RecordRed)):
        verdict = TrunkVerdict(
            commit=MERGE, tree=TREE, outcome=outcome, config=DIGEST, records=records
        )
        intents = decide(world(events, **_stacked(events, verdict)), Policy())
        assert [type(i) for i in intents] == [PublishBatch, last], outcome
        assert intents[0] == records[0]
