"""`loopbus config adopt`: the operator's claim names the commit in full; without
--commit it pins trunk as the merger last gated it (a forged trunk fact does not count)."""

from __future__ import annotations

from bus import Bus, read
from schemas import Actor, project_subjects
from schemas.adoption import ConfigAdopt
from schemas.merges import CandidateTested

from .conftest import loopbus

GATED, FORGED, TREE = "1" * 40, "2" * 40, "3" * 40


def trunk_run(project: str, commit: str, actor: Actor) -> CandidateTested:
    return CandidateTested(
        project=project, actor=actor, stage="trunk", candidate=commit, tree=TREE, outcome="fail"
    )


async def claims(bus: Bus, project: str) -> list[ConfigAdopt]:
    found = [r.event async for r in read(bus, subjects=[project_subjects(project)])]
    return [e for e in found if isinstance(e, ConfigAdopt)]


async def test_without_commit_the_claim_pins_trunk_as_the_merger_gated_it(
    bus: Bus, nats_url: str, project: str, system: Actor
) -> None:
    """No --commit: the claim carries the trunk commit the merger's last trunk run gated
    (not a later forged one), and the command prints it; a short sha is refused in one
    line before anything is published."""
    await bus.publish(trunk_run(project, GATED, system))
    await bus.publish(trunk_run(project, FORGED, Actor(role="builder", principal="evil")))
    base = ("config", "adopt", "--project", project, "--nats-url", nats_url)
    short = loopbus(*base, "--commit", GATED[:12], "--why", "reviewed")
    assert short.code == 2 and "is not a full commit sha" in short.err
    assert short.err.count("\n") == 1
    done = loopbus(*base, "--why", "reviewed it", env={"LOOPBUS_PRINCIPAL": "olive"})
    assert done.code == 0, done.err
    assert f"at {GATED} (trunk as the merger last gated it)" in done.out
    [claim] = await claims(bus, project)
    assert (claim.commit, claim.why, claim.actor) == (
        GATED,
        "reviewed it",
        Actor(role="operator", principal="olive"),
    )
