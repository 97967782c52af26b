"""The reviewer's and the investigator's decisions alone: pure functions of worlds folded
from event lists (no server, no repository, no command)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from projections.intents import Intent, MoveUnit, Publish, PublishIf
from schemas import (
    Actor,
    Event,
    FindingRaised,
    UnitPlanned,
    UnitTransitioned,
    subject_of,
)
from schemas.ids import answer_id
from schemas.reviews import InvestigationRequested, ReviewRequested, RoundClosed
from schemas.targets import CheckTarget, RecordTarget
from workers.agents.config import parse
from workers.investigator import decide as investigator
from workers.investigator.daemon import Investigator
from workers.investigator.effects import Investigate
from workers.kernel import Daemon, World
from workers.reviewer.daemon import Reviewer
from workers.reviewer.decide import TRANSITION_SALT, decide
from workers.reviewer.diff import parse_unified_diff
from workers.reviewer.effects import ReadChange
from workers.reviewer.scene import CHANGES, Change

PROJECT = "demo"
SYSTEM = Actor(role="system", principal="test-system")
DAEMON = Actor(role="system", principal="reviewer@test")
NOW = datetime(2025, 1, 1, tzinfo=UTC)
HEAD = "a" * 40
BASE = "b" * 40
CONFIG = parse(
    '[project]\nid = "demo"\n[review]\ncommand = "review"\nroster = ["alice", "bob"]\n'
    '[investigator]\ncommand = "investigate"\n'
)
DIFF = (
    "diff --git a/src/app.py b/src/app.py\n--- a/src/app.py\n+++ b/src/app.py\n"
    "@@ -1,2 +1,2 @@\n def total(xs):\n-    return 0\n+    return sum(xs)\n"
)


def world_of(
    daemon: Daemon,
    events: Sequence[Event],
    outside: Mapping[str, Any] | None = None,
    failed: frozenset[str] = frozenset(),
) -> World:
    """The world ``daemon`` decides from after folding ``events`` (sequence = position)."""
    states: dict[str, Any] = {fold.name: fold.initial() for fold in daemon.folds}
    seqs: dict[str, int] = {}
    for seq, event in enumerate(events, start=1):
        for fold in daemon.folds:
            states[fold.name] = fold.apply(states[fold.name], event)
        seqs[subject_of(event)] = seq
    return World(
        project=PROJECT,
        states=states,
        seqs=seqs,
        now=NOW,
        actor=DAEMON,
        outside=outside or {},
        folded=len(events),
        failed=failed,
    )


def ready_unit(unit: str = "U1", *, ready: bool = True) -> list[Event]:
    """A planned unit started by alice, made ready at HEAD (``ready=False``: working)."""
    events: list[Event] = [
        UnitPlanned(project=PROJECT, actor=SYSTEM, unit=unit, slice="S1", criteria=["t::c"]),
        UnitTransitioned(project=PROJECT, actor=SYSTEM, unit=unit, state="working", by="started"),
    ]
    if ready:
        events.append(
            UnitTransitioned(
                project=PROJECT,
                actor=SYSTEM,
                unit=unit,
                state="working",
                prior="working",
                ready=True,
                by="gates",
                commit=HEAD,
            )
        )
    return events


def change(diff: str = DIFF) -> Change:
    return Change(
        head=HEAD,
        base=BASE,
        diff=parse_unified_diff(diff),
        identities=frozenset({("alice", "alice@example.com")}),
        config_before=None,
        config_after=None,
    )


def review(events: Sequence[Event], **world: Any) -> list[Intent]:
    return decide(world_of(Reviewer({PROJECT: CONFIG}), events, **world), CONFIG)


def test_a_ready_unit_is_diffed_by_the_shell_before_anything_is_decided() -> None:
    """With no diff read yet, the only intent is the effect that reads it."""
    (intent,) = review(ready_unit())
    assert intent == ReadChange(project=PROJECT, head=HEAD, hint=None)


def test_with_its_diff_a_ready_unit_gets_one_conditional_request() -> None:
    """The request names a reviewer who did not touch the unit, is conditional on the
    review subject as folded, and deciding again yields the very same intent."""
    events = ready_unit()
    outside = {CHANGES: {(PROJECT, HEAD, ""): change()}}
    first = review(events, outside=outside)
    assert first == review(events, outside=outside)  # pure: same world, same decision
    (intent,) = first
    assert isinstance(intent, PublishIf) and intent.expected == 0
    request = intent.event
    assert isinstance(request, ReviewRequested)
    assert (request.reviewer, request.head, request.base, request.round) == ("bob", HEAD, BASE, 1)
    assert request.id == answer_id(request.cause, "review-request") and request.at == NOW


def test_a_diff_that_cannot_be_read_escalates_and_a_crashed_read_is_left_alone() -> None:
    """A reason from the shell becomes the unreviewable finding; a read that crashed in
    this process leaves the unit for the next process."""
    events = ready_unit()
    (intent,) = review(events, outside={CHANGES: {(PROJECT, HEAD, ""): "no such commit"}})
    assert isinstance(intent, Publish) and isinstance(intent.event, FindingRaised)
    assert intent.event.criterion == "reviewable"
    assert intent.event.message == "U1 cannot be reviewed: cannot diff its head: no such commit"
    assert review(events, failed=frozenset({ReadChange(project=PROJECT, head=HEAD).key})) == []


def round_closed(action: str, **fields: Any) -> RoundClosed:
    values: dict[str, Any] = {
        "project": PROJECT, "actor": DAEMON, "unit": "U1", "round": 2, "head": HEAD,
        "source": "review", "failure_signature": "s", "diff_digest": "d", "passed": False,
        "convergence": "stalled", "action": action, "cause": "01JCAUSE0000000000000000AA",
    }  # fmt: skip
    values.update(fields)
    return RoundClosed(**values)


def owed(events: Sequence[Event]) -> MoveUnit:
    (intent,) = review(events)
    assert isinstance(intent, MoveUnit)
    return intent


def test_a_round_that_continues_returns_the_unit_through_the_claims_table() -> None:
    """Sent back to work, not ready, its id derived from the round, conditional on the
    unit subject as folded."""
    events = [*ready_unit(), round_closed("continue", convergence="first")]
    intent = owed(events)
    assert (intent.move.state, intent.move.by, intent.move.ready) == ("working", "returned", False)
    assert (intent.move.cause, intent.move.commit) == (events[-1].id, HEAD)
    assert intent.event_id == answer_id(events[-1].id, TRANSITION_SALT)
    assert intent.expected == 3  # the unit subject's last sequence: the ready transition


def test_a_stop_at_full_oversight_fails_the_unit_saying_what_ended_it() -> None:
    """The outcome keeps the convergence rule (progress-test), not just ``halted``."""
    events = [*ready_unit(), round_closed("stopped", ended_by="progress-test", why="stalled")]
    move = owed(events).move
    assert (move.state, move.by) == ("failed", "halted")
    assert move.outcome is not None
    assert (move.outcome.ended_by, move.outcome.summary) == (
        "progress-test",
        "progress-test: stalled",
    )


def test_a_supervised_stop_escalates_only_on_an_open_finding() -> None:
    """BLOCKED awaiting-operator on the round's finding while it is open; a finding that
    is not open warrants no transition (claims.escalate refuses it)."""
    stop = FindingRaised(
        project=PROJECT, actor=DAEMON, producer="reviewer", target=RecordTarget(id="U1"),
        severity="high", criterion="convergence", message="stalled", unit="U1",
    )  # fmt: skip
    events = [
        *ready_unit(),
        stop,
        round_closed("stopped", ended_by="progress-test", finding=stop.id),
    ]
    move = owed(events).move
    assert (move.state, move.by) == ("blocked", "escalated")
    assert move.block is not None and move.block.subject == stop.id
    stray = [*ready_unit(), round_closed("stopped", finding="01JNOTRAISED00000000000000")]
    assert not any(isinstance(intent, MoveUnit) for intent in review(stray))


def trunk_red(interface: str) -> FindingRaised:
    return FindingRaised(
        project=PROJECT, actor=SYSTEM, producer="trunk_gate", target=CheckTarget(check="tests"),
        severity="high", criterion="trunk-green", cls="trunk-red", message="trunk went red",
        evidence={"interface": [interface]},
    )  # fmt: skip


def test_the_investigator_requests_on_an_empty_subject_then_runs_the_request() -> None:
    """The second failure warrants one request, conditional on an empty trigger subject,
    with an id fixed by the failure; once it is folded, the decision is to run it."""
    daemon = Investigator({PROJECT: CONFIG})
    failures = [trunk_red("api"), trunk_red("api")]
    assert investigator.decide(world_of(daemon, failures[:1])) == []  # one failure: nothing
    (intent,) = investigator.decide(world_of(daemon, failures))
    assert isinstance(intent, PublishIf) and intent.expected == 0
    request = intent.event
    assert isinstance(request, InvestigationRequested)
    assert request.id == answer_id(failures[-1].id, f"investigation:{request.trigger}")
    (run,) = investigator.decide(world_of(daemon, [*failures, request]))
    assert isinstance(run, Investigate)
    assert run.view.requested == request.id
