"""The reviewer daemon end to end on real NATS and real dulwich repositories, with scripted
reviewer commands standing in for the external agent."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from reviewkit import (
    CRITERION,
    GateSigner,
    Scripted,
    code_finding,
    config_of,
    count,
    daemon_violations,
    log_events,
    of,
    ready,
    running,
    sandbox_for,
    setup_repo,
    verdict,
    wait_log,
)

from bus import Bus
from schemas import Actor, FindingRaised, UnitTransitioned
from schemas.reviews import (
    FindingSubtracted,
    ReviewRequested,
    ReviewVerdict,
    RoundClosed,
    VerdictAccepted,
    VerdictRefused,
)
from workers.agents.cli import serving_body
from workers.reviewer.daemon import Reviewer
from workers.runtime import DaemonContext


def review_table(agent: Scripted, **overrides: object) -> dict[str, object]:
    table: dict[str, object] = {"command": agent.command, "roster": ["alice", "bob", "carol"]}
    table.update(overrides)
    return table


async def test_approve_hands_exactly_four_inputs_on_a_read_only_copy(
    bus: Bus, project: str, tmp_path: Path, agent_dir: Path
) -> None:
    """A ready unit is reviewed once: the command gets only diff, gate_results, criteria and
    the auto-picked decisions (none here) on stdin, in a copy it cannot write, and its
    approve becomes an accepted verdict."""
    agent = Scripted(agent_dir)
    repo = setup_repo(tmp_path, project, review_table(agent))
    head = repo.commit(
        {"src/app.py": "def total(xs):\n    return sum(xs)\n\n\ndef other():\n    return 1\n"},
        parent=repo.base,
    )
    signer = GateSigner()
    await signer.register(bus, project)
    result = signer.result(project, "tests", head, "pass", [])
    await bus.publish(result)
    await bus.publish(signer.suite(project, "U1", head, [result]))
    async with running(bus, Reviewer(config_of(repo))):
        await ready(bus, project, "U1", head)
        events = await wait_log(bus, project, count(RoundClosed))
        # the same head made ready again (a re-run suite) is not reviewed twice: U2, ready
        # after it, is reviewed, so the daemon has passed U1's second ready transition
        await ready(bus, project, "U1", head, first=False)
        await ready(bus, project, "U2", head)
        events = await wait_log(bus, project, count(RoundClosed, 2))
    assert [r.unit for r in of(ReviewRequested, events)] == ["U1", "U2"]
    call = agent.calls()[0]
    assert call["gate_results"] == [
        {
            "check": "tests",
            "outcome": "pass",
            "cached": False,
            "duration_s": 0.5,
            "summary": "",
            "findings": 0,
        }
    ]
    assert call["keys"] == ["criteria", "decisions", "diff", "gate_results", "lessons"]
    assert call["doc"]["decisions"] == []
    assert call["writable"] is False and call["edits"] is False
    assert call["criteria"] == [CRITERION]
    assert "+    return sum(xs)" in call["diff"]
    assert call["reviewer"] in ("bob", "carol") and call["env_reviewer"] == call["reviewer"]
    (request,) = of(ReviewRequested, events, unit="U1")
    assert (request.head, request.base, request.round) == (head, repo.base, 1)
    (claim,) = of(ReviewVerdict, events, unit="U1")
    assert claim.actor.role == "reviewer" and claim.actor.principal == request.reviewer
    (accepted,) = of(VerdictAccepted, events, unit="U1")
    assert (accepted.decision, accepted.claimed, accepted.verdict) == (
        "approve",
        "approve",
        claim.id,
    )
    (closed,) = of(RoundClosed, events, unit="U1")
    assert (closed.passed, closed.action, closed.convergence) == (True, "approved", "first")


NEW_TOTAL = "def total(xs):\n    return sum(xs)\n\n\ndef other():\n    return 1\n"


async def test_reject_raises_inside_and_subtracts_outside_then_returns_the_unit(
    bus: Bus, project: str, tmp_path: Path, agent_dir: Path
) -> None:
    """A reject's findings on the unit's lines are raised; those elsewhere are recorded as
    subtracted (never dropped); the unit goes back to work, not ready."""
    agent = Scripted(agent_dir)
    agent.plan(
        [
            verdict(
                "reject",
                code_finding("src/app.py", 2),
                code_finding("src/app.py", 5, 6, severity="low"),
                code_finding("tests/test_criteria.py", 4),
                {
                    "target": {"type": "plan", "slice": "S1"},
                    "severity": "medium",
                    "message": "the plan misses error handling",
                },
            )
        ]
    )
    repo = setup_repo(tmp_path, project, review_table(agent))
    head = repo.commit({"src/app.py": NEW_TOTAL}, parent=repo.base)
    async with running(bus, Reviewer(config_of(repo))):
        await ready(bus, project, "U1", head)
        events = await wait_log(bus, project, count(UnitTransitioned, by="returned"))
    (accepted,) = of(VerdictAccepted, events)
    assert accepted.decision == "reject"
    raised = [f for f in of(FindingRaised, events) if f.id in accepted.raised]
    subtracted = of(FindingSubtracted, events)
    assert sorted(f.criterion or f.cls for f in raised) == ["C1", "defect"]
    assert {str(f.target.path) for f in subtracted} == {"src/app.py", "tests/test_criteria.py"}  # type: ignore[union-attr]
    assert all(s.mode == "added" and s.source == accepted.verdict for s in subtracted)
    # The system raises what it accepted, naming the verdict (and so its reviewer).
    assert all(f.owner == "builder:U1" and f.actor.role == "system" for f in raised)
    assert all(f.evidence["verdict"] == accepted.verdict for f in raised)
    (closed,) = of(RoundClosed, events)
    assert (closed.action, closed.passed) == ("continue", False)
    assert closed.blocking_keys == ["code:src/app.py:2-2|high|C1", "plan:S1|medium|"]
    (returned,) = of(UnitTransitioned, events, by="returned")
    assert (returned.state, returned.ready, returned.cause) == ("working", False, closed.id)
    assert daemon_violations(events) == []


@pytest.mark.parametrize(
    ("step", "reason"),
    [
        pytest.param({"stdout": "looks fine to me"}, "malformed JSON", id="malformed-json"),
        pytest.param({"stdout": {"verdict": "maybe"}}, "wrong verdict schema", id="bad-verdict"),
        pytest.param(
            {"stdout": {"verdict": "approve", "score": 9}},
            "wrong verdict schema",
            id="unknown-field",
        ),
        pytest.param(
            {
                "stdout": {
                    "verdict": "reject",
                    "findings": [
                        {
                            "target": {"type": "code", "path": "a.py", "start": 5, "end": 2},
                            "severity": "high",
                            "message": "x",
                        }
                    ],
                }
            },
            "wrong verdict schema",
            id="backwards-lines",
        ),
        pytest.param(
            verdict("approve", code_finding("src/app.py", 2)),
            "carries a blocking finding",
            id="approve-with-blocker",
        ),
        pytest.param({"stdout": {"verdict": "reject"}}, "names no finding", id="empty-reject"),
        pytest.param({"stdout": "", "hang": True}, "timed out after 1s", id="timeout"),
        pytest.param(
            {"stdout": {"verdict": "approve"}, "exit": 3, "stderr": "model overloaded\n"},
            "exited with code 3: model overloaded",
            id="non-zero-exit",
        ),
    ],
)
async def test_a_reviewer_that_gives_no_valid_verdict_is_a_finding_never_a_verdict(
    bus: Bus, project: str, tmp_path: Path, agent_dir: Path, step: dict[str, object], reason: str
) -> None:
    """Malformed output, a wrong schema, a timeout or a non-zero exit raises a
    reviewer-failure finding and blocks the unit on it; nothing is accepted."""
    agent = Scripted(agent_dir)
    agent.plan([step])
    repo = setup_repo(tmp_path, project, review_table(agent, timeout=1))
    head = repo.commit({"src/app.py": NEW_TOTAL}, parent=repo.base)
    async with running(bus, Reviewer(config_of(repo))):
        await ready(bus, project, "U1", head)
        events = await wait_log(bus, project, count(UnitTransitioned, state="blocked"))
    (refused,) = of(VerdictRefused, events)
    assert refused.verdict is None and reason in refused.reason
    (finding,) = of(FindingRaised, events, id=refused.finding)
    assert (finding.cls, finding.producer, finding.owner) == (
        "reviewer-failure",
        "reviewer",
        "operator",
    )
    assert of(VerdictAccepted, events) == [] and of(ReviewVerdict, events) == []
    (blocked,) = of(UnitTransitioned, events, state="blocked")
    assert blocked.block is not None
    assert (blocked.by, blocked.block.reason, blocked.block.subject) == (
        "escalated",
        "awaiting-operator",
        finding.id,
    )
    assert daemon_violations(events) == []


async def test_a_reviewer_stopped_at_a_sandbox_limit_is_a_breach_finding(
    bus: Bus, project: str, tmp_path: Path, agent_dir: Path
) -> None:
    """A reviewer command that spins past ``[agents] cpu_time`` is killed by the sandbox;
    besides the reviewer failure, the daemon publishes the executor's observation as a
    ``sandbox-breach`` finding (what the command printed has no say in it)."""
    agent = Scripted(agent_dir)
    agent.plan([{"spin": True, "stdout": {"verdict": "approve", "findings": []}}])
    agents = {**(sandbox_for(agent.command) or {}), "cpu_time": "1s"}
    repo = setup_repo(tmp_path, project, review_table(agent, timeout=60), agents=agents)
    head = repo.commit({"src/app.py": NEW_TOTAL}, parent=repo.base)
    async with running(bus, Reviewer(config_of(repo))):
        await ready(bus, project, "U1", head)
        events = await wait_log(bus, project, count(UnitTransitioned, state="blocked"))
    (request,) = of(ReviewRequested, events)
    (breach,) = [f for f in of(FindingRaised, events) if f.cls == "sandbox-breach"]
    assert (breach.producer, breach.actor.role, breach.owner) == ("reviewer", "system", "operator")
    assert breach.unit == "U1" and breach.target.id == request.id  # type: ignore[union-attr]
    assert breach.evidence["breaches"] == ["cpu"] and breach.evidence["role"] == "reviewer"
    assert breach.evidence["executor"] in ("local", "container")
    assert request.reviewer in breach.message and "cpu" in breach.message
    (refused,) = of(VerdictRefused, events)
    assert refused.verdict is None and of(VerdictAccepted, events) == []


async def test_the_author_and_whoever_touched_the_head_are_never_chosen(
    bus: Bus, project: str, tmp_path: Path, agent_dir: Path
) -> None:
    """alice built the unit and bob committed to it: of alice, bob and carol only carol
    can review it."""
    agent = Scripted(agent_dir)
    repo = setup_repo(tmp_path, project, review_table(agent))
    head = repo.commit(
        {"src/app.py": NEW_TOTAL}, parent=repo.base, committer="Bob <bob@example.com>"
    )
    async with running(bus, Reviewer(config_of(repo))):
        await ready(bus, project, "U1", head, builder="alice")
        events = await wait_log(bus, project, count(VerdictAccepted))
    (request,) = of(ReviewRequested, events)
    assert request.reviewer == "carol"
    assert [c["reviewer"] for c in agent.calls()] == ["carol"]


async def test_a_roster_of_only_the_author_escalates_instead_of_self_review(
    bus: Bus, project: str, tmp_path: Path, agent_dir: Path
) -> None:
    """With no eligible reviewer nobody reviews: the unit waits on the operator."""
    agent = Scripted(agent_dir)
    repo = setup_repo(tmp_path, project, review_table(agent, roster=["alice"]))
    head = repo.commit({"src/app.py": NEW_TOTAL}, parent=repo.base)
    async with running(bus, Reviewer(config_of(repo))):
        await ready(bus, project, "U1", head, builder="alice")
        events = await wait_log(bus, project, count(UnitTransitioned, state="blocked"))
    assert of(ReviewRequested, events) == [] and agent.calls() == []
    (finding,) = of(FindingRaised, events, criterion="reviewable")
    assert "no eligible reviewer" in finding.message
    (blocked,) = of(UnitTransitioned, events, state="blocked")
    assert blocked.block is not None and blocked.block.subject == finding.id


async def test_a_verdict_from_the_author_is_refused_with_a_finding(
    bus: Bus, project: str, tmp_path: Path, agent_dir: Path
) -> None:
    """alice files an approve on her own unit's open review: refused (no-self-review) while
    the assigned review stays open and the unit is untouched."""
    agent = Scripted(agent_dir)
    agent.plan([{"stdout": "", "hang": True}])
    repo = setup_repo(tmp_path, project, review_table(agent, timeout=600))
    head = repo.commit({"src/app.py": NEW_TOTAL}, parent=repo.base)
    async with running(bus, Reviewer(config_of(repo))):
        await ready(bus, project, "U1", head, builder="alice")
        (request,) = of(ReviewRequested, await wait_log(bus, project, count(ReviewRequested)))
        forged = ReviewVerdict(
            project=project,
            actor=Actor(role="reviewer", principal="alice"),
            unit="U1",
            request=request.id,
            head=head,
            verdict="approve",
        )
        await bus.publish(forged)
        events = await wait_log(bus, project, count(VerdictRefused))
    (refused,) = of(VerdictRefused, events)
    assert (refused.verdict, refused.request, refused.reviewer) == (forged.id, None, "alice")
    assert refused.reason == "self-review: alice authored or touched unit U1"
    (finding,) = of(FindingRaised, events, id=refused.finding)
    assert (finding.criterion, finding.cls) == ("no-self-review", "refused-transition")
    assert of(VerdictAccepted, events) == []
    assert of(UnitTransitioned, events, state="blocked") == []


async def test_a_committer_claiming_a_verdict_is_refused_too(
    bus: Bus, project: str, tmp_path: Path, agent_dir: Path
) -> None:
    """A principal whose git identity committed to the unit cannot review it either (the
    principal ``dan`` names the committer ``dan <dan@x.org>`` by its address)."""
    agent = Scripted(agent_dir)
    agent.plan([{"stdout": "", "hang": True}])
    repo = setup_repo(tmp_path, project, review_table(agent, timeout=600))
    head = repo.commit({"src/app.py": NEW_TOTAL}, parent=repo.base, committer="dan <dan@x.org>")
    async with running(bus, Reviewer(config_of(repo))):
        await ready(bus, project, "U1", head, builder="alice")
        (request,) = of(ReviewRequested, await wait_log(bus, project, count(ReviewRequested)))
        forged = ReviewVerdict(
            project=project,
            actor=Actor(role="reviewer", principal="dan"),
            unit="U1",
            request=request.id,
            head=head,
            verdict="approve",
        )
        await bus.publish(forged)
        events = await wait_log(bus, project, count(VerdictRefused))
    (refused,) = of(VerdictRefused, events)
    assert refused.reason.startswith("self-review: dan ")


async def test_killed_mid_review_and_restarted_reviews_exactly_once(
    bus: Bus, project: str, tmp_path: Path, agent_dir: Path
) -> None:
    """A daemon stopped while its reviewer runs is replaced by one that finishes the same
    request: one request, one verdict, one round."""
    agent = Scripted(agent_dir)
    fifo = agent_dir / "started.fifo"
    os.mkfifo(fifo)
    fifo.chmod(0o666)
    agent.plan([{"stdout": "", "fifo": str(fifo)}, verdict("approve")])
    repo = setup_repo(tmp_path, project, review_table(agent, timeout=600))
    head = repo.commit({"src/app.py": NEW_TOTAL}, parent=repo.base)
    async with running(bus, Reviewer(config_of(repo))):
        await ready(bus, project, "U1", head)
        line = await asyncio.wait_for(asyncio.to_thread(_read_line, fifo), 30)
        assert line == "started\n"  # the reviewer is running right now
    async with running(bus, Reviewer(config_of(repo))):
        events = await wait_log(bus, project, count(RoundClosed))
    assert len(agent.calls()) == 2
    assert len(of(ReviewRequested, events)) == 1
    assert len(of(ReviewVerdict, events)) == 1 and len(of(VerdictAccepted, events)) == 1


def _read_line(path: Path) -> str:
    with path.open() as fh:
        return fh.readline()


async def test_a_project_without_a_review_command_is_left_alone(
    bus: Bus, project: str, tmp_path: Path
) -> None:
    """No [review] command: the daemon idles and a ready unit gets no review."""
    repo = setup_repo(tmp_path, project, {"roster": ["bob"]})
    head = repo.commit({"src/app.py": NEW_TOTAL}, parent=repo.base)
    await ready(bus, project, "U1", head)
    reviewer = Reviewer(config_of(repo))
    assert reviewer.configs == {} and reviewer.projects == ()
    ctx = DaemonContext(bus=bus, name="idle")
    ctx.stop.set()
    await asyncio.wait_for(serving_body(reviewer, "no review command")(ctx), 10)
    assert of(ReviewRequested, await log_events(bus, project)) == []


@pytest.mark.parametrize(
    ("who", "wrong_head", "reason", "closes"),
    [
        pytest.param("other", False, "is not the reviewer assigned", False, id="stray"),
        pytest.param(None, True, "but the review asked for", True, id="assigned-wrong-head"),
    ],
)
async def test_claims_that_do_not_answer_the_request_are_refused(
    bus: Bus,
    project: str,
    tmp_path: Path,
    agent_dir: Path,
    who: str | None,
    wrong_head: bool,
    reason: str,
    closes: bool,
) -> None:
    """A stranger's claim is refused and changes nothing; the assigned reviewer's claim on
    another head is refused, closes the request and hands the unit to the operator."""
    agent = Scripted(agent_dir)
    agent.plan([{"stdout": "", "hang": True}])
    repo = setup_repo(tmp_path, project, review_table(agent, roster=["bob", "dave"], timeout=600))
    head = repo.commit({"src/app.py": NEW_TOTAL}, parent=repo.base)
    async with running(bus, Reviewer(config_of(repo))):
        await ready(bus, project, "U1", head)
        (request,) = of(ReviewRequested, await wait_log(bus, project, count(ReviewRequested)))
        stranger = "dave" if request.reviewer == "bob" else "bob"  # on the roster, not assigned
        principal = stranger if who == "other" else request.reviewer
        claim = ReviewVerdict(
            project=project,
            actor=Actor(role="reviewer", principal=principal),
            unit="U1",
            request=request.id,
            head="f" * 40 if wrong_head else head,
            verdict="approve",
        )
        await bus.publish(claim)
        done = count(UnitTransitioned, state="blocked") if closes else count(VerdictRefused)
        events = await wait_log(bus, project, done)
    (refused,) = of(VerdictRefused, events)
    assert reason in refused.reason and refused.verdict == claim.id
    assert (refused.request == request.id) is closes
    assert bool(of(UnitTransitioned, events, state="blocked")) is closes
