"""The command line end to end, as a user runs it: up, report, tail, replay, status."""

from __future__ import annotations

import getpass
import json
import os
import pty
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from bus import Bus, free_port, server_binary
from schemas import Actor, UnitPlanned

from .conftest import LOOPBUS, loopbus, start_up

pytestmark = pytest.mark.slow

FINDING_ARGS = (
    "--producer", "reviewer", "--target", "code:src/app.py:10-14", "--severity", "high",
    "--criterion", "C1", "--message", "unchecked None",
)  # fmt: skip


def wait_for_status(url: str, project: str, seq: int, timeout: float = 30) -> dict[str, Any]:
    """`status --json` once the projector has folded through ``seq``."""
    deadline = time.monotonic() + timeout
    while True:
        result = loopbus("status", "--project", project, "--json", "--nats-url", url)
        assert result.code == 0, result.err
        document = result.json_lines()[0]
        if document["projector_checkpoint"] >= seq or time.monotonic() > deadline:
            return document
        time.sleep(0.1)


def test_up_report_tail_replay_status(up_factory: Any) -> None:
    """A finding reported through the CLI shows in tail, replay and status, all agreeing;
    SIGTERM stops up and every child cleanly."""
    up = up_factory("--port", str(free_port()))
    env_url = ("--nats-url", up.url)
    reported = loopbus("report", "finding", "--new", "--project", "demo", *FINDING_ARGS, *env_url)
    assert reported.code == 0, reported.err
    assert "published at seq 1" in reported.out

    tail = loopbus("tail", "--project", "demo", "--no-follow", "--json", *env_url)
    assert tail.code == 0, tail.err
    [line] = tail.json_lines()
    assert (
        line["seq"] == 1
        # the principal is the one of up's agent credential, which the CLI found by itself
        and line["subject"] == "loop.demo.claim.reviewer.agent.finding.reviewer"
    )
    assert line["kind"] == "finding.raised.v1"
    assert (line["producer"], line["severity"], line["criterion"]) == ("reviewer", "high", "C1")
    assert line["target"] == {"type": "code", "path": "src/app.py", "start": 10, "end": 14}
    assert line["message"] == "unchecked None"

    plain = loopbus("tail", "--project", "demo", "--no-follow", *env_url)
    assert plain.out.count("\n") == 1 and "unchecked None" in plain.out
    assert "\x1b[" not in plain.out, "no colour when stdout is not a terminal"

    replay = loopbus("replay", "--project", "demo", "--json", *env_url)
    assert replay.code == 0, replay.err
    document = replay.json_lines()[0]
    assert document["events"] == [line]
    [(key, open_finding)] = document["state"]["findings"]["open"]["-"].items()
    assert key == "code:src/app.py:10-14|high|C1" and open_finding["message"] == "unchecked None"

    status = wait_for_status(up.url, "demo", 1)
    assert status["projector_checkpoint"] >= 1
    assert status["state"] == document["state"], "the materialised view equals the replay"

    # SIGUSR1 to up is passed to every daemon it runs: each logs what its tasks wait on.
    up.process.send_signal(signal.SIGUSR1)
    time.sleep(3)  # the daemons write their lines; up's own are read at the stop
    assert up.process.poll() is None, "up ended on SIGUSR1"

    assert up.stop() == 0
    assert any("every daemon stopped" in line for line in up.lines)
    logs = Path(os.environ["LOOPBUS_DATA_DIR"]) / "logs"  # each daemon's own log
    dumped = {
        json.loads(line)["daemon"]
        for log in logs.glob("*.log")
        for line in log.read_text().splitlines()
        if '"daemon.stacks"' in line
    }
    assert {"projector", "dispatcher", "gate-runner"} <= dumped, dumped
    host, port = up.url.removeprefix("nats://").split(":")
    with pytest.raises(OSError):
        socket.create_connection((host, int(port)), timeout=1).close()


def test_replay_until_shows_the_state_as_it_was(up_factory: Any) -> None:
    """`replay --until SEQ` folds only up to that sequence."""
    up = up_factory("--port", str(free_port()))
    for line, new in (("1-1", ["--new"]), ("2-2", [])):  # --new: the project's first event
        args = list(FINDING_ARGS)
        args[3] = f"code:a.py:{line}"
        assert (
            loopbus("report", "finding", *new, "--project", "p", *args, "--nats-url", up.url).code
            == 0
        )
    full = loopbus("replay", "--project", "p", "--json", "--nats-url", up.url).json_lines()[0]
    early = loopbus(
        "replay", "--project", "p", "--json", "--until", "1", "--nats-url", up.url
    ).json_lines()[0]
    assert [e["seq"] for e in full["events"]] == [1, 2]
    assert [e["seq"] for e in early["events"]] == [1]
    assert len(early["state"]["findings"]["open"]["-"]) == 1
    assert up.stop() == 0


def test_taken_port_falls_back_with_a_clear_message(up_factory: Any) -> None:
    """When the asked-for port is taken, up says so and serves on another port."""
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        taken = blocker.getsockname()[1]
        up = up_factory("--port", str(taken))
        assert any(f"port {taken} is taken" in line for line in up.lines)
        assert not up.url.endswith(f":{taken}")
        assert loopbus("tail", "--no-follow", "--nats-url", up.url).code == 0
        # Told nothing, a command beside it reaches it too: up recorded the address it
        # serves in its data directory (the default port would reach no server, or another).
        beside = loopbus("tail", "--no-follow", env={"LOOPBUS_NATS_URL": ""})
        assert beside.code == 0, beside.err
        assert up.stop() == 0
        gone = loopbus("tail", "--no-follow", env={"LOOPBUS_NATS_URL": ""})
        assert up.url not in gone.err  # stopped: its address is forgotten


def test_external_url_starts_no_server(up_factory: Any, nats_url: str) -> None:
    """With LOOPBUS_NATS_URL set, up uses that server, starts none of its own, and says
    so with how to have its own (unset the variable)."""
    up = up_factory(env={"LOOPBUS_NATS_URL": nats_url})
    assert up.url == nats_url
    [said] = [line for line in up.lines if "no embedded server" in line]
    assert f"using the NATS server at {nats_url} that $LOOPBUS_NATS_URL names" in said
    assert "to start loopbus's own, unset LOOPBUS_NATS_URL" in said
    assert up.stop() == 0


@pytest.mark.parametrize("how", ["env", "option"])
def test_up_on_an_external_url_nobody_serves_says_how_to_start_its_own(
    tmp_path: Any, how: str
) -> None:
    """The README's second terminal has LOOPBUS_NATS_URL exported: up run there with no
    server at that URL says it uses that server instead of starting one, and how to have
    it start its own, not "start one with `loopbus up`"."""
    url = f"nats://127.0.0.1:{free_port()}"
    data = ("--data-dir", str(tmp_path / "data"))
    if how == "env":
        result = loopbus("up", *data, env={"LOOPBUS_NATS_URL": url})
        drop = "unset LOOPBUS_NATS_URL"
    else:
        result = loopbus("up", *data, "--nats-url", url)
        drop = "drop --nats-url"
    assert result.code == 1, result.out + result.err
    [line] = result.err.splitlines()
    assert f"cannot reach NATS at {url}" in line
    assert "up uses the server" in line and f"{drop} for up to start its own" in line
    assert "start one with `loopbus up`" not in line


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(("tail", "--no-follow"), id="tail"),
        pytest.param(("status", "--project", "demo"), id="status"),
        pytest.param(("replay", "--project", "demo"), id="replay"),
        pytest.param(
            ("report", "finding", "--new", "--project", "demo", *FINDING_ARGS), id="report"
        ),
    ],
)
def test_unreachable_server_is_one_line(command: tuple[str, ...]) -> None:
    """With no server at the URL, every command prints one line naming it and how to start one."""
    url = f"nats://127.0.0.1:{free_port()}"
    result = loopbus(*command, env={"LOOPBUS_NATS_URL": url})
    assert result.code == 1
    assert result.err.count("\n") == 1, result.err
    assert url in result.err and "loopbus up" in result.err
    assert "Traceback" not in result.err


def test_a_url_that_is_not_nats_is_one_line_saying_so() -> None:
    """An http:// URL, or nats:// at nats-server's own monitoring (HTTP) port: one line
    saying it is not a NATS server, not a timeout."""
    port = free_port()
    monitor = subprocess.Popen(
        [server_binary(), "-p", str(free_port()), "-m", str(port), "-a", "127.0.0.1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_listening(port)
        for url, needle in (
            (f"http://127.0.0.1:{port}", "http:// is not a NATS URL"),
            (f"nats://127.0.0.1:{port}", "is an HTTP server, not a NATS server"),
        ):
            result = loopbus("tail", "--no-follow", env={"LOOPBUS_NATS_URL": url})
            assert result.code == 1, result.out + result.err
            [line] = result.err.splitlines()
            assert needle in line and "Timeout" not in line, line
    finally:
        monitor.terminate()
        monitor.wait(timeout=30)


def wait_listening(port: int, timeout: float = 30) -> None:
    """Until something accepts connections on ``port`` (bounded)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        pytest.param(("--target", "code:a.py:9-2"), "--target 'code:a.py:9-2'", id="range"),
        pytest.param(("--severity", "huge"), "--severity 'huge' is not one of", id="severity"),
        pytest.param(("--producer", "gate_runner"), "system daemon", id="system-producer"),
        pytest.param(("--project", "a.b"), "--project 'a.b' is not a valid id", id="project"),
    ],
)
def test_bad_report_input_is_one_clear_line(args: tuple[str, ...], needle: str) -> None:
    """A bad value is refused before anything is sent, naming the option and the value."""
    base = dict(zip(FINDING_ARGS[::2], FINDING_ARGS[1::2], strict=True))
    base["--project"] = "demo"
    base.update(dict(zip(args[::2], args[1::2], strict=True)))
    flat = [item for pair in base.items() for item in pair]
    result = loopbus("report", "finding", *flat, env={"LOOPBUS_NATS_URL": "nats://127.0.0.1:1"})
    assert result.code == 2, result.err
    assert needle in result.err and result.err.count("\n") == 1
    assert os.linesep not in result.out


def test_a_second_up_on_the_same_data_dir_is_refused(up_factory: Any, tmp_path: Any) -> None:
    """Two nats-servers on one store would corrupt it: the second up names the first."""
    first = start_up("--data-dir", str(tmp_path / "shared"), "--port", str(free_port()))
    try:
        second = loopbus("up", "--data-dir", str(tmp_path / "shared"), "--port", str(free_port()))
        assert second.code == 2
        assert "is in use by loopbus up" in second.err and second.err.count("\n") == 1
    finally:
        assert first.stop() == 0


def test_unusable_data_dir_is_one_line() -> None:
    """A data directory that cannot be created is refused in one line, not a traceback."""
    result = loopbus("up", "--data-dir", "/proc/no/such/dir")
    assert result.code == 2
    assert "--data-dir '/proc/no/such/dir' cannot be used" in result.err
    assert "Traceback" not in result.err


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
def test_no_child_outlives_up(up_factory: Any, sig: int) -> None:
    """Whether up is stopped or killed outright, nats-server and every daemon go with it."""
    up = up_factory("--port", str(free_port()))
    deadline = time.monotonic() + 30
    while True:  # the daemons are spawned just after up prints its banner
        children = psutil.Process(up.process.pid).children(recursive=True)
        names = " ".join(" ".join(c.cmdline()) for c in children)
        if "workers.projector" in names or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert "nats-server" in names and "workers.projector" in names
    up.stop(sig)
    _gone, alive = psutil.wait_procs(children, timeout=20)
    assert alive == [], [" ".join(p.cmdline()) for p in alive]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        pytest.param(("--kind", "bogus"), "--kind 'bogus' matches no event kind", id="kind"),
        pytest.param(("--unit", "a.b"), "--unit 'a.b' is not a valid unit id", id="unit"),
        pytest.param(("--since", "yesterday"), "--since 'yesterday'", id="since"),
    ],
)
def test_bad_tail_filters_are_one_line(args: tuple[str, ...], needle: str) -> None:
    """A tail filter that could never match is refused instead of printing nothing."""
    result = loopbus("tail", "--no-follow", *args, env={"LOOPBUS_NATS_URL": "nats://127.0.0.1:1"})
    assert result.code == 2 and needle in result.err and result.err.count("\n") == 1


async def test_usage_report_is_published_as_a_builder_claim(
    bus: Bus, nats_url: str, project: str
) -> None:
    """`report usage` publishes the builder's token claim on its unit's report subject."""
    opened = loopbus("report", "finding", "--new", "--project", project, *FINDING_ARGS,
                     "--nats-url", nats_url)  # fmt: skip
    assert opened.code == 0, opened.err  # usage of a project with no event is refused
    # ... and so is usage of a unit no plan has
    system = Actor(role="system", principal="tests")
    await bus.publish(UnitPlanned(project=project, actor=system, unit="U1", slice="S1"))
    result = loopbus(
        "report", "usage", "--project", project, "--unit", "U1", "--tokens-in", "1200",
        "--tokens-out", "300", "--nats-url", nats_url,
    )  # fmt: skip
    assert result.code == 0, result.err
    [line] = loopbus(
        "tail", "--project", project, "--no-follow", "--json", "--kind", "usage",
        "--nats-url", nats_url,
    ).json_lines()  # fmt: skip
    # A claim lives under its role and proven principal (the CLI's default: the OS user).
    me = getpass.getuser()
    assert line["subject"] == f"loop.{project}.claim.builder.{me}.report.builder.U1"
    assert (line["kind"], line["tokens_in"], line["tokens_out"]) == ("usage.report.v1", 1200, 300)
    assert line["actor"]["role"] == "builder"


def test_usage_report_of_nothing_is_refused() -> None:
    """A usage report with no tokens, or negative ones, is refused in one line."""
    result = loopbus("report", "usage", "--project", "p", "--unit", "U1", "--tokens-in", "-5")
    assert result.code == 2 and "--tokens-in -5 is negative" in result.err


def test_tail_colours_a_terminal(nats_url: str, project: str) -> None:
    """On a terminal, tail paints severity and kind; piped (above) it prints plain text."""
    args = list(FINDING_ARGS)
    assert (
        loopbus(
            "report", "finding", "--new", "--project", project, *args, "--nats-url", nats_url
        ).code
        == 0
    )
    leader, follower = pty.openpty()
    try:
        done = subprocess.run(
            [*LOOPBUS, "tail", "--project", project, "--no-follow", "--nats-url", nats_url],
            stdout=follower,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            timeout=60,
        )
        os.close(follower)
        output = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the terminal closed: everything has been read
                break
            if not chunk:
                break
            output += chunk
    finally:
        os.close(leader)
    assert done.returncode == 0, done.stderr
    text = output.decode()
    assert "unchecked None" in text
    assert "\x1b[31mhigh\x1b[0m" in text, "high severity is painted red on a terminal"
