"""The kernel fetches a daemon's mirror before folding an event that names a commit the
mirror lacks (:mod:`workers.ref_fetch`): a commit written on another machine since the
mirror's last fetch is readable by the time the daemon's fold and decision see it.

A real bare repository reached by a file:// URL stands for the remote, and a real
nats-server for the log; the mirror's timer is not running, so only the kernel's hook can
bring the new commits."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kernelkit import running

from bus import Bus, Record
from projections import FoldFailure
from schemas import Actor, UnitTransitioned
from schemas.merges import MergeReverted, TrunkAdvanced
from workers.kernel import Daemon
from workers.ref_fetch import commits_named
from workers.remote import Mirror, mirror_at

WAIT_S = 30.0
OTHER = Actor(role="system", principal="tests")


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def _commit(remote: Path, parent: str | None, message: str, ref: str) -> str:
    """A commit written straight into the remote (as another machine's push would)."""
    tree = _git("--git-dir", str(remote), "hash-object", "-t", "tree", "-w", "/dev/null")
    parents = ["-p", parent] if parent else []
    sha = _git(
        *("-c", "user.name=t", "-c", "user.email=t@x", "--git-dir", str(remote)),
        *("commit-tree", *parents, "-m", message, tree),
    )
    _git("--git-dir", str(remote), "update-ref", ref, sha)
    return sha


class Probe(Daemon):
    """Notes, at each fold, whether its mirror holds the commits the event names."""

    name = "probe"

    def __init__(self, project: str, mirror: Mirror) -> None:
        super().__init__(projects=[project])
        self.mirror = mirror
        self.seen: list[tuple[str, bool]] = []

    def repo_for(self, project: str) -> Path | None:
        return self.mirror.path

    def fold(self, states: dict[str, Any], record: Record) -> Sequence[FoldFailure]:
        assert record.event is not None
        for commit in commits_named(record.event):
            self.seen.append((commit, self.mirror.holds(commit)))
        return ()


async def test_a_commit_pushed_elsewhere_is_fetched_before_its_event_is_folded(
    bus: Bus, project: str, tmp_path: Path
) -> None:
    remote = tmp_path / "remote.git"
    _git("init", "-q", "--bare", "-b", "main", str(remote))
    first = _commit(remote, None, "first", "refs/heads/main")
    mirror = mirror_at(remote.as_uri(), tmp_path / "mirrors")
    mirror.ensure()
    probe = Probe(project, mirror)

    async with running(bus, probe) as kernel:
        # Already held: folded as it is.
        await bus.publish(_unit(project, "U0", first))
        await kernel.until(lambda: len(probe.seen) == 1, WAIT_S)
        # Three commits another machine wrote after this mirror's last fetch.
        head = _commit(remote, first, "unit head", f"refs/heads/loopbus/{project}/U1")
        merge = _commit(remote, first, "merge U1", "refs/heads/main")
        revert = _commit(remote, merge, "revert U1", "refs/heads/main")
        assert not any(mirror.holds(c) for c in (head, merge, revert))
        await bus.publish(_unit(project, "U1", head))
        await bus.publish(_advanced(project, head, merge, first))
        await bus.publish(_reverted(project, merge, revert))
        await kernel.until(lambda: len(probe.seen) == 4, WAIT_S)
        # One the remote never had: folded after one fetch, not waited on for ever.
        missing = "0" * 39 + "1"
        await bus.publish(_unit(project, "U2", missing))
        await kernel.until(lambda: len(probe.seen) == 5, WAIT_S)

    assert probe.seen == [
        (first, True),
        (head, True),
        (merge, True),
        (revert, True),
        (missing, False),
    ]

    # A daemon started later replays all of it on a mirror of its own with one fetch: the
    # first record's fetch began after every record was stored, so it covers them all, the
    # commit the remote never had among them.
    later = mirror_at(remote.as_uri(), tmp_path / "later")
    later.ensure()
    replayed = Probe(project, later)
    async with running(bus, replayed) as kernel:
        await kernel.until(lambda: len(replayed.seen) == 5, WAIT_S)
        assert kernel.ref_fetch.fetches == 1
    assert replayed.seen == probe.seen


def _unit(project: str, unit: str, commit: str) -> UnitTransitioned:
    return UnitTransitioned(
        project=project, actor=OTHER, unit=unit, state="working", by="commit", commit=commit
    )


def _advanced(project: str, head: str, merge: str, previous: str) -> TrunkAdvanced:
    return TrunkAdvanced(
        project=project,
        actor=OTHER,
        trunk="main",
        unit="U1",
        commit=head,
        merge=merge,
        tree=_empty_tree(),
        previous=previous,
        cause="merge-U1",
    )


def _reverted(project: str, merge: str, revert: str) -> MergeReverted:
    return MergeReverted(
        project=project,
        actor=OTHER,
        trunk="main",
        unit="U1",
        merge=merge,
        revert=revert,
        tree=_empty_tree(),
        finding="f-1",
        cause="advance-U1",
    )


def _empty_tree() -> str:
    return "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
