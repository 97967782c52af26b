"""A hostile agent against a real ``loopbus up``: it holds only the agent credential that
``up`` hands out, the CLI and a NATS client, and tries to declare its own success.

Each move must be refused, and each must be visible on the log as a finding that names it:
a publish the server refuses is reported by the integrity daemon from the server's own log
(the attempt never reaches the log itself); a claim the server lets through but no role may
make is a forgery the integrity daemon names; a claim under another principal never leaves
the CLI.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import nats
import pytest

from bus import connect_once, free_port, read
from bus.creds import Credential, default_file, load_credential
from schemas import (
    Actor,
    Event,
    FindingRaised,
    UnitPlanned,
    UnitTransitioned,
    encode_event,
    parse_target,
    subject_of,
)
from schemas.gates import GateRunnerKeyRegistered
from schemas.reports import StartedReport
from schemas.units import Outcome

pytestmark = pytest.mark.slow

LOOPBUS = [sys.executable, "-m", "loopbus.cli"]
P = "shop"
WAIT_S = 60.0


class Loop:
    """The running ``loopbus up`` and the credentials it handed out."""

    def __init__(self, process: subprocess.Popen[str], url: str, data_dir: Path) -> None:
        self.process, self.url, self.data_dir = process, url, data_dir

    def cred(self, role: Any) -> Credential:
        return load_credential(default_file(self.data_dir, role))

    def cli(self, *args: str, role: str = "agent") -> subprocess.CompletedProcess[str]:
        """A ``loopbus`` command with one role's credential file, as an agent runs it."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPBUS_")}
        env["LOOPBUS_CREDS"] = str(default_file(self.data_dir, role))  # type: ignore[arg-type]
        return subprocess.run(
            [*LOOPBUS, *args, "--nats-url", self.url],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )

    async def findings(self, project: str, match: Callable[[FindingRaised], bool]) -> list[Any]:
        """Read the log as the ``reader`` until a finding matching ``match`` is on it."""
        bus = await connect_once(self.url, creds=self.cred("reader"))
        try:
            async with asyncio.timeout(WAIT_S):
                while True:
                    found = [
                        r.event
                        async for r in read(bus, subjects=[f"loop.{project}.>"])
                        if isinstance(r.event, FindingRaised) and match(r.event)
                    ]
                    if found:
                        return found
                    await asyncio.sleep(0.2)
        finally:
            await bus.close()

    async def events(self, project: str) -> list[Event]:
        bus = await connect_once(self.url, creds=self.cred("reader"))
        try:
            return [r.event async for r in read(bus, subjects=[f"loop.{project}.>"]) if r.event]
        finally:
            await bus.close()


@contextlib.contextmanager
def running_up(data_dir: Path, *args: str, port: int | None = None) -> Iterator[Loop]:
    """A real ``loopbus up`` on ``data_dir`` (plus ``args``), as an operator starts it
    with no ``LOOPBUS_*`` of this process's; stopped afterwards."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPBUS_")}
    argv = ["up", *args, "--data-dir", str(data_dir), "--port", str(port or free_port())]
    process = subprocess.Popen(
        [*LOOPBUS, *argv, "--no-web"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    assert process.stdout is not None
    lines, url = [], None
    for line in process.stdout:
        lines.append(line)
        if url is None and "NATS with JetStream at " in line:
            url = line.split(" at ")[1].split()[0]
        if "press Ctrl-C to stop" in line:
            break
    assert url is not None and process.poll() is None, "".join(lines)
    try:
        yield Loop(process, url, data_dir)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture(scope="module")
def loop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loop]:
    with running_up(tmp_path_factory.mktemp("hostile") / "data") as started:
        yield started


async def raw_agent(loop: Loop) -> Any:
    """A plain nats-py client with the agent's seed: no loopbus client-side checks."""
    errors: list[Exception] = []

    async def on_error(exc: Exception) -> None:
        errors.append(exc)

    client = await nats.connect(
        loop.url,
        nkeys_seed_str=loop.cred("agent").seed,
        error_cb=on_error,
        max_reconnect_attempts=0,
    )
    client.errors = errors  # type: ignore[attr-defined]
    return client


def refused(subject: str) -> Callable[[FindingRaised], bool]:
    return lambda f: f.cls == "forgery" and f.evidence.get("refused_publish") == subject


@pytest.mark.parametrize(
    "move",
    [
        pytest.param("done", id="publish-its-own-unit-done"),
        pytest.param("runner-key", id="register-its-own-gate-runner-key"),
        pytest.param("other-principal", id="claim-under-another-principal"),
        pytest.param("approve", id="approve-as-an-operator"),
    ],
)
async def test_a_publish_the_agent_credential_may_not_make_is_refused_and_named(
    loop: Loop, move: str
) -> None:
    """Facts, another principal's claims and an operator's approval never reach the log
    from an agent credential; each refusal is a finding naming the credential."""
    me = Actor(role="system", principal="agent")
    event: Event
    if move == "done":
        event = UnitTransitioned(
            project=P, actor=me, unit="U1", state="done", by="merged",
            outcome=Outcome(summary="trust me", ended_by="merge"),
        )  # fmt: skip
        subject = subject_of(event)
    elif move == "runner-key":
        event = GateRunnerKeyRegistered(
            project=P, actor=me, runner="gate-runner-evil", public_key="A" * 43 + "="
        )
        subject = subject_of(event)
    elif move == "other-principal":
        event = StartedReport(project=P, actor=Actor(role="builder", principal="bob"), unit="U1")
        subject = subject_of(event)
    else:
        subject = f"loop.{P}.claim.operator.agent.report.operator.U1"
        event = StartedReport(project=P, actor=Actor(role="builder", principal="agent"), unit="U1")
    client = await raw_agent(loop)
    try:
        await client.publish(subject, encode_event(event))
        await client.flush()
    finally:
        await client.close()
    [finding] = await loop.findings(P, refused(subject))
    assert finding.actor.role == "system"
    assert finding.evidence["credential"] == "agent:agent"
    assert not [e for e in await loop.events(P) if e.id == event.id], "nothing reached the log"


@pytest.mark.parametrize(
    ("move", "subject"),
    [
        pytest.param("delete", "$JS.API.STREAM.DELETE.LOOP", id="delete-the-log"),
        pytest.param("shrink", "$JS.API.STREAM.UPDATE.LOOP", id="shrink-the-log"),
        pytest.param(
            "overwrite-view", "$KV.loopbus_projections.checkpoint", id="overwrite-the-views"
        ),
    ],
)
async def test_the_agent_cannot_rewrite_history_or_the_views(
    loop: Loop, move: str, subject: str
) -> None:
    """Deleting or shrinking the log, or overwriting the projector's checkpoint, is refused
    by the server; the log keeps its history and the refusal is named on the bus's record."""
    client = await raw_agent(loop)
    js = client.jetstream()
    try:
        if move == "delete":
            with pytest.raises(nats.errors.TimeoutError):  # the server drops it unanswered
                await js.delete_stream("LOOP")
        elif move == "shrink":
            from nats.js.api import StreamConfig

            with pytest.raises(nats.errors.TimeoutError):
                await js.update_stream(StreamConfig(name="LOOP", max_msgs=1))
        else:
            await client.publish(subject, b"0")
            await client.flush()
    finally:
        await client.close()
    [finding] = await loop.findings("_bus", refused(subject))
    assert finding.evidence["credential"] == "agent:agent"
    system = await connect_once(loop.url, creds=loop.cred("reader"))
    try:
        info = await system.stream_info()
        assert info.state.first_seq == 1 and info.config.max_msgs in (-1, None)
    finally:
        await system.close()


async def test_a_claim_no_agent_may_make_is_a_forgery_named_by_the_system(loop: Loop) -> None:
    """The server lets an agent publish on its own claim subject, but a refusal finding is
    the system's to raise: the forged one is applied by no fold and named in a finding."""
    forged = FindingRaised(
        project=P, actor=Actor(role="builder", principal="agent"), producer="builder",
        target=parse_target("record:U1"), severity="high", criterion="self-approval",
        cls="refused-transition", message="a refusal I made up", evidence={"report": "x"},
    )  # fmt: skip
    client = await raw_agent(loop)
    try:
        await client.jetstream().publish(subject_of(forged), encode_event(forged))
    finally:
        await client.close()
    [named] = await loop.findings(P, lambda f: f.evidence.get("forged") == forged.id)
    assert named.actor.role == "system" and named.evidence["forger"] == "builder:agent"


def test_the_cli_refuses_another_principal_and_an_agent_approval(loop: Loop) -> None:
    """Through the CLI the same moves stop before anything is sent, in one line each."""
    alias = loop.cli("report", "started", "--project", P, "--unit", "U1", "--principal", "bob")
    assert alias.returncode == 2 and "--principal 'bob'" in alias.stderr
    assert "Traceback" not in alias.stderr and alias.stderr.count("\n") == 1
    approve = loop.cli("approve", "--project", P, "--unit", "U1", "--why", "mine")
    assert approve.returncode != 0 and "Traceback" not in approve.stderr
    assert "agent credential may not publish" in approve.stderr


async def test_a_re_stored_report_is_answered_not_swallowed(loop: Loop) -> None:
    """The agent stores its own started report's bytes a second time (allowed: its own claim
    subject): the units daemon answers that copy too, so the unit is not frozen."""
    system = await connect_once(loop.url, creds=loop.cred("system"))
    try:
        await system.publish(
            UnitPlanned(project=P, actor=Actor(role="system", principal="t"), unit="U9", slice="S")
        )
    finally:
        await system.close()
    started = StartedReport(project=P, actor=Actor(role="builder", principal="agent"), unit="U9")
    client = await raw_agent(loop)
    try:
        js = client.jetstream()
        await js.publish(subject_of(started), encode_event(started))
        await js.publish(subject_of(started), encode_event(started))  # the same bytes again
    finally:
        await client.close()

    def answers(f: FindingRaised) -> bool:
        return f.evidence.get("report") == started.id

    async with asyncio.timeout(WAIT_S):
        while True:
            events = await loop.events(P)
            answered = [
                e
                for e in events
                if (isinstance(e, UnitTransitioned) and e.cause == started.id)
                or (isinstance(e, FindingRaised) and answers(e))
            ]
            if len(answered) == 2:
                break
            await asyncio.sleep(0.2)
    assert len({a.id for a in answered}) == 2
