"""The gate runner's decision alone, on worlds folded from event lists: which asks run, how
many at once, when trunk is asked for, and the refusal findings."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from projections import gates, ratchet
from projections.intents import Intent, Publish
from schemas import Actor, Event, FindingRaised, UnitTransitioned
from schemas.gates import GateRunRequested, GateSuiteCompleted, SuiteEntry
from schemas.ids import new_id
from workers.gate_runner.decide import FOLD, TRUNK, TrunkSeen, decide
from workers.gate_runner.effects import RUN, RunSuite
from workers.gates.signing import Signer
from workers.kernel import World

P = "proj"
SYSTEM = Actor(role="system", principal="tests")
NOW = datetime(2030, 1, 1, tzinfo=UTC)


def world(events: list[Event], **kw: Any) -> World:
    fields: dict[str, Any] = {
        "project": P,
        "states": {FOLD.name: FOLD.fold(events), ratchet.FOLD.name: ratchet.FOLD.fold(events)},
        "seqs": {},
        "now": NOW,
        "actor": SYSTEM,
        "outside": {},
    } | kw
    return World(**fields)


def commit_of(unit: str, sha: str) -> UnitTransitioned:
    return UnitTransitioned(
        project=P,
        actor=SYSTEM,
        unit=unit,
        state="working",
        prior="working",
        by="commit",
        commit=sha,
    )


def request(sha: str, **kw: Any) -> GateRunRequested:
    return GateRunRequested(project=P, actor=SYSTEM, commit=sha, **kw)


def runs(intents: list[Intent]) -> list[str]:
    return [i.job.cause for i in intents if isinstance(i, RunSuite)]


def suite(signer: Signer | None, cause: str, sha: str) -> GateSuiteCompleted:
    event = GateSuiteCompleted(
        project=P,
        actor=SYSTEM,
        commit=sha,
        tree="d" * 40,
        reason="manual",
        cause=cause,
        outcome="pass",
        checks=[
            SuiteEntry(check="ok", outcome="pass", cached=False, result=new_id(), duration_s=0.1)
        ],
        runner=signer.runner if signer else "nobody",
    )
    return signer.sign(event) if signer else event


def test_at_most_jobs_suites_run_at_once_oldest_first() -> None:
    """Three asks and two jobs: the two oldest start; with one of them running, one more."""
    asks = [request("a" * 40), request("b" * 40), request("c" * 40)]
    assert runs(decide(world(asks), 2)) == [asks[0].id, asks[1].id]
    running = frozenset({f"{RUN}:{asks[0].id}"})
    assert runs(decide(world(asks, running=running), 2)) == [asks[1].id]


def test_a_units_newer_commit_supersedes_its_older_ask() -> None:
    """Only a unit's latest unanswered commit is gated; another unit's is kept."""
    old, new, other = (
        commit_of("U1", "a" * 40),
        commit_of("U1", "b" * 40),
        commit_of("U2", "a" * 40),
    )
    assert runs(decide(world([old, other, new]), 5)) == [other.id, new.id]


def test_only_a_verified_suite_answers_an_ask(signer: Signer) -> None:
    """A suite signed by a registered key answers its cause; an unsigned one answers
    nothing and is reported as refused, once, with an id derived from it."""
    ask = request("a" * 40)
    key = signer.registration(P, SYSTEM)
    forged = suite(None, ask.id, "a" * 40)
    intents = decide(world([key, ask, forged]), 2)
    assert runs(intents) == [ask.id]
    [finding] = [i.event for i in intents if isinstance(i, Publish)]
    assert isinstance(finding, FindingRaised) and finding.evidence["refused"] == forged.id
    assert finding.criterion == gates.REFUSAL_CRITERION and finding.producer == "gate_runner"
    assert decide(world([key, ask, forged]), 2) == intents  # the same id every time
    answered = world([key, ask, forged, finding, suite(signer, ask.id, "a" * 40)])
    assert decide(answered, 2) == []


def test_trunk_is_asked_for_unless_a_suite_or_an_ask_exists(signer: Signer) -> None:
    """A new trunk commit gets one trunk request (with the sensor's id); none while a
    request for it is unanswered, none once a suite for it exists."""
    sha = "a" * 40
    seen = {TRUNK: TrunkSeen(sha, "01JAAAAAAAAAAAAAAAAAAAAAAA")}
    [ask] = [i.event for i in decide(world([], outside=seen), 2) if isinstance(i, Publish)]
    assert isinstance(ask, GateRunRequested)
    assert (ask.id, ask.commit, ask.reason) == ("01JAAAAAAAAAAAAAAAAAAAAAAA", sha, "trunk")
    pending = decide(world([ask], outside=seen), 2)
    assert runs(pending) == [ask.id] and not [i for i in pending if isinstance(i, Publish)]
    done = [signer.registration(P, SYSTEM), ask, suite(signer, ask.id, sha)]
    assert decide(world(done, outside=seen), 2) == []
