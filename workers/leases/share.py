"""Which projects one replica of a daemon acts on: the pure half of sharing projects.

Daemons that act per project (the dispatcher, the merger, units, the watchdog, ...) may
run as several replicas. Each project is held by one replica at a time, under a lease on
the log: ``lease.project.<daemon>`` in the project's subjects, taken, renewed and released
conditionally on that subject's last sequence like every work-item lease, so of two
replicas taking one project exactly one is stored. A replica decides only for the projects
it holds live.

Who *should* hold a project is rendezvous hashing over the live replicas (the members):
each project goes to the member whose hash with it is highest, so every replica computes
the same owner from the same members, adding a member moves only the projects it now wins,
and removing one moves only its own. The lease is what makes it safe: a replica takes a
project only when it is free or its lease lapsed, and hands one it holds to its new owner
by releasing it (the owner takes it on its next round). Members that see different member
lists for a moment can both want a project; the conditional taking lets one have it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Literal


@dataclass(frozen=True)
class Seen:
    """The last lease event on one project's lease subject, as this replica read it."""

    seq: int = 0
    """Its stream sequence (0: the project was never leased by this daemon)."""
    holder: str | None = None
    """The holder a taking or renewal names; ``None`` after a release (the project is free)."""
    until: datetime | None = None
    """When that lease runs out unrenewed."""

    def live(self, now: datetime) -> bool:
        return self.holder is not None and self.until is not None and now < self.until


Action = Literal["take", "renew", "release"]


@dataclass(frozen=True)
class Step:
    """One lease event to publish, conditionally on the project's lease subject at ``seq``."""

    project: str
    action: Action
    seq: int
    lapsed: str | None = None
    """For a taking: the holder whose lease ran out (the takeover names it)."""


def rank(project: str, member: str) -> bytes:
    return hashlib.sha256(f"{project}\x00{member}".encode()).digest()


def owner(project: str, members: Iterable[str]) -> str | None:
    """The member that should hold ``project`` (rendezvous hashing); ``None`` for none."""
    return max(members, key=lambda member: rank(project, member), default=None)


def plan(seen: Mapping[str, Seen], members: Iterable[str], me: str, now: datetime) -> list[Step]:
    """The lease events replica ``me`` publishes this round, for every project in ``seen``:
    renew what it holds and still owns, release what it holds and another live member now
    owns, take what it owns that is free or lapsed. A project another replica holds live
    is left alone, whoever should own it: that replica hands it over itself."""
    everyone = sorted({*members, me})
    steps: list[Step] = []
    for project in sorted(seen):
        last = seen[project]
        should = owner(project, everyone)
        if last.live(now) and last.holder == me:
            action: Action = "renew" if should == me else "release"
            steps.append(Step(project, action, last.seq))
        elif last.live(now):
            continue
        elif should == me:
            steps.append(Step(project, "take", last.seq, lapsed=last.holder))
    return steps
