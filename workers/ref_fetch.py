"""Fetch a daemon's mirror before folding an event that names a commit the mirror lacks.

A daemon given ``--repo`` as a URL reads a mirror of its own (:mod:`workers.remote`), which
a timer fetches every few seconds. An event of the log can name a commit written on
another machine since that fetch: trunk advanced or reverted by a merger elsewhere, a
unit's head pushed by a builder elsewhere. Folded before the mirror has it, the decision
it wakes would read a commit this machine cannot see (a gate runner asking for trunk's
gates at the old commit, a merger merging a head it lacks). So the kernel's reader asks
:class:`RefFetch` first, and folds once the mirror holds the commit.

What makes this cheap: every writer pushes before it publishes (the merger's swap on the
remote comes before its ``trunk.advanced``; a builder pushes its branch before its claim),
so a fetch begun after a record was stored brings that record's commit if the remote
still has it. The fetch therefore notes the stream's last sequence before it starts, and
no record up to that sequence is looked at again: one fetch covers a whole replay, and a
commit the remote no longer has (a closed unit's deleted branch) costs one fetch, not one
per record.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import structlog

from bus import Record
from schemas import Event, UnitTransitioned
from schemas.merges import MergeReverted, TrunkAdvanced
from workers.errors import RepoError
from workers.remote import Mirror, mirror_of

log = structlog.get_logger()

RETRY_AFTER_S = 5.0
"""After a failed fetch, records fold without one for this long (an unreachable remote
would otherwise cost a failing fetch per record); the daemon works on what it has."""


def commits_named(event: Event) -> tuple[str, ...]:
    """The commits an event puts in front of a daemon: trunk's new commit after an advance
    or a revert, a unit's head."""
    match event:
        case TrunkAdvanced():
            return (event.merge,)
        case MergeReverted():
            return (event.revert,)
        case UnitTransitioned(commit=str(commit)):
            return (commit,)
    return ()


class RefFetch:
    """The reader's hook: :meth:`before_fold` returns once the daemon's mirror holds every
    commit the record names (or a fetch has shown the remote does not have it)."""

    def __init__(
        self,
        repo_for: Callable[[str], Path | None],
        last_seq: Callable[[], Awaitable[int]],
        *,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.repo_for = repo_for
        self.last_seq = last_seq
        self.clock = clock or (lambda: asyncio.get_running_loop().time())
        self.covered: dict[Path, int] = {}
        """Mirror folder -> the stream sequence its last fetch began after."""
        self.fetches = 0
        self._mirrors: dict[str, Mirror | None] = {}
        self._retry_at: dict[Path, float] = {}

    async def before_fold(self, record: Record) -> None:
        event = record.event
        commits = commits_named(event) if event is not None else ()
        if not commits or event is None:
            return
        mirror = self._mirror(event.project)
        if mirror is None or record.seq <= self.covered.get(mirror.path, 0):
            return
        if self.clock() < self._retry_at.get(mirror.path, 0.0):
            return
        # The first record after start fetches whatever it names: the replay that follows
        # is covered by that one fetch instead of a look per record.
        if mirror.path in self.covered and await asyncio.to_thread(_holds, mirror, commits):
            return
        await self._fetch(mirror, record, commits)

    async def _fetch(self, mirror: Mirror, record: Record, commits: tuple[str, ...]) -> None:
        through = await self.last_seq()  # before the fetch: what it is sure to cover
        try:
            await asyncio.to_thread(mirror.fetch)
        except RepoError as exc:
            self._retry_at[mirror.path] = self.clock() + RETRY_AFTER_S
            log.warning("repo.fetch_on_event_failed", mirror=str(mirror.path), error=str(exc))
            return
        self.fetches += 1
        self.covered[mirror.path] = max(through, record.seq)
        log.debug("repo.fetched_on_event", seq=record.seq, commits=list(commits))

    def _mirror(self, project: str) -> Mirror | None:
        if project not in self._mirrors:
            repo = self.repo_for(project)
            self._mirrors[project] = mirror_of(repo) if repo is not None else None
        return self._mirrors[project]


def _holds(mirror: Mirror, commits: tuple[str, ...]) -> bool:
    return all(mirror.holds(commit) for commit in commits)
