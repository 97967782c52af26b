"""A gate runner on a mirror follows trunk's subject: when the log says trunk advanced
(a merger on another machine pushed it), the runner reads the new trunk at once and asks
for its gates, without waiting for its trunk poll or its mirror's timer.

Real components: a git repository reached by a file:// URL as the remote, the runner's own
mirror of it, a real nats-server. The trunk poll is an hour and the mirror's timer is not
running, so only the trunk event can bring the new commit to the runner."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

from kernelkit import running
from logkit import wait_log

from bus import Bus
from schemas import Actor, Event
from schemas.gates import GateRunRequested
from schemas.merges import TrunkAdvanced
from workers.gate_runner.daemon import GateRunnerDaemon
from workers.gates.runner import GateRunner
from workers.gates.signing import load_or_create
from workers.remote import mirror_at

WAIT_S = 60.0
MERGER = Actor(role="system", principal="tests")
CHECK = '[[check]]\nid = "ok"\ncommand = "python -c \'pass\'"\nparser = "exit-code"\ntimeout = 30\n'


def _git(repo: Path, *args: str) -> str:
    argv = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@x", *args]
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout.strip()


def _commit(repo: Path, name: str, text: str) -> str:
    (repo / name).write_text(text)
    _git(repo, "add", name)
    _git(repo, "commit", "-q", "-m", f"write {name}")
    return _git(repo, "rev-parse", "HEAD")


def _asks_for(commit: str) -> Callable[[list[Event]], bool]:
    def done(events: list[Event]) -> bool:
        return any(isinstance(e, GateRunRequested) and e.commit == commit for e in events)

    return done


async def test_a_trunk_advance_on_the_log_wakes_the_runner_on_its_fetched_mirror(
    bus: Bus, project: str, tmp_path: Path
) -> None:
    origin = tmp_path / "origin"
    origin.mkdir()
    _git(origin, "init", "-q", "-b", "main")
    _commit(origin, "loopbus.toml", f'[project]\nid = "{project}"\n\n{CHECK}')
    first = _commit(origin, "README", "one\n")
    mirror = mirror_at(origin.as_uri(), tmp_path / "mirrors")
    mirror.ensure()
    runner = GateRunner(bus, mirror.path, load_or_create(tmp_path / "key", "a"), project=project)
    daemon = GateRunnerDaemon(runner, project, jobs=1, trunk="HEAD", trunk_poll_s=3600)

    async with running(bus, daemon):
        await wait_log(bus, project, _asks_for(first), WAIT_S)  # trunk as first found
        merged = _commit(origin, "README", "two\n")  # another machine's merger
        await bus.publish(
            TrunkAdvanced(
                project=project,
                actor=MERGER,
                trunk="main",
                unit="U1",
                commit=merged,
                merge=merged,
                tree=_git(origin, "rev-parse", "HEAD^{tree}"),
                previous=first,
                cause="merge-U1",
            )
        )
        events = await wait_log(bus, project, _asks_for(merged), WAIT_S)

    asked = [e for e in events if isinstance(e, GateRunRequested)]
    assert [e.commit for e in asked] == [first, merged]
    assert {e.reason for e in asked} == {"trunk"}
