"""`loopbus config propose` and `loopbus approve --config`: an operator's proposal (the
whole file, checked first) and its approval, as claims on the log; mistakes are one line,
exit 2, before anything is published."""

from __future__ import annotations

from pathlib import Path

from bus import Bus, read
from schemas import Actor, project_subjects
from schemas.contract import ConfigApprove, ConfigProposal
from schemas.merges import TrunkRecheck

from .conftest import loopbus

CONFIG = """\
[project]
id = "{project}"

[[check]]
id = "tests"
command = "python -m pytest -q tests"
parser = "pytest"

[review]
roster = ["r1"]
command = "python review.py"
"""


async def claims(bus: Bus, project: str) -> list[object]:
    found = [r.event async for r in read(bus, subjects=[project_subjects(project)])]
    return [e for e in found if isinstance(e, ConfigProposal | ConfigApprove)]


async def test_propose_then_approve_publishes_both_claims(
    bus: Bus, nats_url: str, project: str, tmp_path: Path
) -> None:
    await bus.publish(  # the project exists on the log
        TrunkRecheck(project=project, actor=Actor(role="operator", principal="olive"), why="x")
    )
    good = tmp_path / "loopbus.toml"
    good.write_text(CONFIG.format(project=project))
    bad = tmp_path / "bad.toml"
    bad.write_text("[project]\nid = 3\n")
    env = {"LOOPBUS_PRINCIPAL": "olive"}
    base = ("--project", project, "--nats-url", nats_url)

    wrong = loopbus("config", "propose", *base, "--file", str(bad), "--why", "x", env=env)
    assert wrong.code == 2 and wrong.err.count("\n") == 1 and "project.id" in wrong.err
    latin = tmp_path / "latin.toml"
    latin.write_bytes(b'[project]\nid = "caf\xe9"\n')
    binary = loopbus("config", "propose", *base, "--file", str(latin), "--why", "x", env=env)
    assert binary.code == 2 and binary.err.count("\n") == 1, binary.err
    assert "is not UTF-8 (byte 19); save it as UTF-8" in binary.err
    unknown = loopbus("approve", *base, "--config", "NOPE", "--why", "ok", env=env)
    assert unknown.code == 2 and "no configuration proposal" in unknown.err
    both = loopbus("approve", *base, "--unit", "U1", "--config", "X", "--why", "ok", env=env)
    assert both.code == 2 and "not allowed with argument" in both.err
    assert await claims(bus, project) == []

    proposed = loopbus("config", "propose", *base, "--file", str(good), "--why", "reviews", env=env)
    assert proposed.code == 0, proposed.err
    [proposal] = await claims(bus, project)
    assert isinstance(proposal, ConfigProposal)
    assert proposal.text == good.read_text() and proposal.actor.principal == "olive"
    assert f"--config {proposal.id}" in proposed.out
    approved = loopbus("approve", *base, "--config", proposal.id, "--why", "read it", env=env)
    assert approved.code == 0, approved.err
    [_, approval] = await claims(bus, project)
    assert isinstance(approval, ConfigApprove)
    assert (approval.proposal, approval.why, approval.actor.role) == (
        proposal.id,
        "read it",
        "operator",
    )
