"""Replicas of the gate runner as real processes on one project, for the lease tests and
the gate-scale benchmark (a plain module: the conftest puts this folder on sys.path)."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from daemon_process import DaemonProcess
from gate_repos import GitRepo, config

from schemas import Event
from schemas.gates import GateResultRecorded, GateSuiteCompleted
from schemas.leases import LeaseReleased, LeaseTaken


def sleeping_check(seconds: float) -> str:
    """A ``[[check]]`` that only sleeps: CPU-free work, so two cores run many at once."""
    return (
        '\n[[check]]\nid = "nap"\n'
        f"command = \"python -c 'import time; time.sleep({seconds})'\"\n"
        'parser = "exit-code"\ntimeout = 120\n'
    )


def commits(repo: GitRepo, project: str, count: int, seconds: float) -> list[str]:
    """``count`` commits with distinct trees (so no cached result answers one for another)."""
    made = []
    for n in range(count):
        files = {"loopbus.toml": config(project, sleeping_check(seconds)), "n.txt": f"{n}\n"}
        made.append(repo.commit(files))
    return made


class Runner(DaemonProcess):
    """One ``loopbus worker gate-runner`` process with a key of its own."""

    def __init__(
        self, name: str, repo: Path, url: str, home: Path, *, jobs: int = 1, lease_ttl: float = 30
    ) -> None:
        self.name = name
        args = [
            sys.executable,
            "-m",
            "loopbus.cli",
            "worker",  # one more replica against a running server, as an operator adds one
            "gate-runner",
            "--repo",
            str(repo),
            "--nats-url",
            url,
            "--data-dir",
            str(home / name),
            "--runner-name",
            name,
            "--jobs",
            str(jobs),
            "--trunk-poll",
            "0",
            "--lease-ttl",
            str(lease_ttl),
        ]
        super().__init__(args, home / f"{name}.log")


def answered(events: list[Event], asks: set[str]) -> bool:
    """Every ask answered by a suite, and its lease released (published after the suite)."""
    suites = {e.cause for e in events if isinstance(e, GateSuiteCompleted)}
    return asks <= suites and asks <= {e.item for e in events if isinstance(e, LeaseReleased)}


def doubled(events: list[Event]) -> dict[str, int]:
    """Checks run more than once on one tree (a suite's work done twice), and asks
    answered more than once: the count of each."""
    runs = Counter(
        f"{e.check}@{e.tree}"
        for e in events
        if isinstance(e, GateResultRecorded) and e.outcome != "error"
    )
    suites = Counter(f"suite:{e.cause}" for e in events if isinstance(e, GateSuiteCompleted))
    return {k: n for k, n in (runs + suites).items() if n > 1}


def runners_used(events: list[Event]) -> Counter[str]:
    """Runner key -> checks it ran."""
    return Counter(e.runner for e in events if isinstance(e, GateResultRecorded))


def holders(events: list[Event]) -> set[str]:
    return {e.holder for e in events if isinstance(e, LeaseTaken)}
