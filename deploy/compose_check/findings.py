"""Findings published and read back through the real ``loopbus`` CLI, from the host and
from inside a container, and the count of what was acknowledged against what was stored.

Every loopbus command line is built by :class:`Client`, the one place that knows how a
client reaches the cluster: ``--nats-url`` with the three nodes and ``--creds``. From the
host that is the role's file that ``loopbus provision --creds-out secrets`` wrote (the
operator's for publishing, the reader's for tail and status, the agent's for forge.py's
forged fact); inside a daemon's container it is the one credential mounted there, the
system's (it may publish claims too). The nodes require TLS, so both also get the
deployment's CA (``--tls-ca``) and ``tls://`` URLs.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import re
import shutil
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .shell import CheckFailed, last_line, run

Role = Literal["operator", "reader", "agent"]  # whose credential file a host command uses
SECRETS = Path(__file__).resolve().parents[2] / "secrets"
"""Where ``loopbus provision --creds-out secrets`` puts the credentials (compose.yaml)."""
CONTAINER_CREDS = "/run/secrets/loopbus_system"
CONTAINER_CA = "/run/secrets/loopbus_ca"
ACK = re.compile(r"^finding (\S+) published at seq (\d+)$", re.MULTILINE)


@dataclass(frozen=True)
class Client:
    """How loopbus commands reach the cluster from the host and from inside a container."""

    project: str
    host_urls: str  # the nodes' published client ports, e.g. nats://127.0.0.1:4222,...
    container_urls: str  # the nodes by service name on the compose network
    container_service: str  # a running container to publish from (a daemon's)

    def connection(self, role: Role, inside: bool) -> list[str]:
        """The flags that connect as ``role`` (inside a container: as the daemon's system)."""
        if inside:
            return [
                "--nats-url", self.container_urls, "--creds", CONTAINER_CREDS,
                "--tls-ca", CONTAINER_CA,
            ]  # fmt: skip
        return [
            "--nats-url", self.host_urls, "--creds", str(SECRETS / "creds" / f"{role}.json"),
            "--tls-ca", str(SECRETS / "tls" / "ca.pem"),
        ]  # fmt: skip

    def host(self, role: Role, *argv: str) -> list[str]:
        return [*host_loopbus(), *argv, *self.connection(role, inside=False)]

    def container(self, exec_argv: list[str], role: Role, *argv: str) -> list[str]:
        """``exec_argv`` is compose's ``exec -T SERVICE`` prefix for the running container."""
        return [*exec_argv, "loopbus", *argv, *self.connection(role, inside=True)]

    def forge(self) -> list[str]:
        """The hostile agent's move (forge.py): a fact published with the agent's file."""
        script = Path(__file__).resolve().parent / "forge.py"
        connection = self.connection("agent", inside=False)
        return [host_python(), str(script), *connection, "--project", self.project]

    def finding(self, target: str, message: str, *, new: bool = False) -> list[str]:
        """``new``: this finding opens the project (its first event), so it says ``--new``;
        loopbus refuses every other command on a project with no event on the log."""
        return [
            "report", "finding", "--project", self.project, "--producer", "operator",
            "--target", target, "--severity", "info", "--message", message,
            *(["--new"] if new else []),
        ]  # fmt: skip


def host_loopbus() -> list[str]:
    """The host's loopbus: this Python's module if installed here, else one on PATH."""
    if importlib.util.find_spec("loopbus") is not None:
        return [sys.executable, "-m", "loopbus.cli"]
    found = shutil.which("loopbus")
    if found is None:
        raise CheckFailed(
            "loopbus is not installed where compose-check runs: activate the virtualenv "
            "that has it, or `pip install -e .` from the repository root"
        )
    return [found]


def host_python() -> str:
    """The Python loopbus is installed in (forge.py imports loopbus and nats-py)."""
    if importlib.util.find_spec("loopbus") is not None:
        return sys.executable
    found = host_loopbus()[0]
    shebang = Path(found).read_text(errors="replace").splitlines()[0]
    if not shebang.startswith("#!") or " " in shebang[2:].strip():
        raise CheckFailed(f"cannot tell which Python runs {found}: activate its virtualenv")
    return shebang[2:].strip()


@dataclass(frozen=True)
class Attempt:
    """One `report finding`: its target (unique per attempt) and, if acknowledged, id/seq."""

    publisher: str
    target: str
    started: float
    ended: float
    finding_id: str | None
    seq: int | None
    error: str


def publish(argv: list[str], publisher: str, target: str, timeout: float = 30) -> Attempt:
    started = time.monotonic()
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
        )
        stdout, stderr, code = done.stdout, done.stderr, done.returncode
    except subprocess.TimeoutExpired:
        stdout, stderr, code = "", f"no answer within {timeout:.0f} s", -1
    match = ACK.search(stdout) if code == 0 else None
    return Attempt(
        publisher=publisher,
        target=target,
        started=started,
        ended=time.monotonic(),
        finding_id=match[1] if match else None,
        seq=int(match[2]) if match else None,
        error="" if match else last_line(stderr or stdout),
    )


class Publisher(threading.Thread):
    """Publishes findings back to back, each to a new target, until halted."""

    def __init__(self, label: str, argv_for: Callable[[str], list[str]], pause: float = 0.2):
        super().__init__(name=f"publisher-{label}", daemon=True)
        self.label = label
        self.argv_for = argv_for
        self.pause = pause
        self.attempts: list[Attempt] = []
        self.halt = threading.Event()

    def run(self) -> None:
        for number in itertools.count(1):
            if self.halt.is_set():
                return
            target = f"check:outage-{self.label}-{number}"
            self.attempts.append(publish(self.argv_for(target), self.label, target))
            self.halt.wait(self.pause)


def read_log(client: Client) -> list[dict[str, Any]]:
    """Every event of the project on the log, via ``loopbus tail --no-follow --json``."""
    argv = client.host("reader", "tail", "--project", client.project, "--no-follow", "--json")
    return [json.loads(line) for line in run(argv, timeout=120).stdout.splitlines() if line]


def read_status(client: Client) -> dict[str, Any]:
    """The projector's view of the project, via ``loopbus status --json``."""
    argv = client.host("reader", "status", "--project", client.project, "--json")
    document: dict[str, Any] = json.loads(run(argv, timeout=120).stdout)
    return document


def open_targets(status: dict[str, Any]) -> set[str]:
    """Targets of the open findings in a ``status --json`` document."""
    groups = status.get("state", {}).get("findings", {}).get("open", {})
    return {f["target"] for group in groups.values() for f in group.values()}


@dataclass(frozen=True)
class Tally:
    attempted: int
    acked: int
    stored: int  # acknowledged findings found on the log, at the sequence the ack gave
    lost: tuple[str, ...]  # acknowledged, but not on the log (or not at its acked sequence)
    stored_unacked: int  # not acknowledged (an error), yet on the log: an ack lost in transit
    duplicated: tuple[str, ...]  # targets stored more than once


def tally(attempts: list[Attempt], events: list[dict[str, Any]]) -> Tally:
    """Compare what the publishers were told with what the log holds."""
    stored_at = {e["id"]: e["seq"] for e in events if e.get("kind", "").startswith("finding.")}
    targets = Counter(
        f"{e['target']['type']}:{e['target'].get('check', '')}"
        for e in events
        if e.get("kind", "").startswith("finding.") and e.get("target", {}).get("type") == "check"
    )
    acked = [a for a in attempts if a.finding_id]
    lost = tuple(a.finding_id or "" for a in acked if stored_at.get(a.finding_id) != a.seq)
    return Tally(
        attempted=len(attempts),
        acked=len(acked),
        stored=len(acked) - len(lost),
        lost=lost,
        stored_unacked=sum(1 for a in attempts if not a.finding_id and targets[a.target]),
        duplicated=tuple(sorted(t for t, n in targets.items() if n > 1)),
    )
