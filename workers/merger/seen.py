"""What the merger's shell reports to its decision: plain data, observed outside the log.

Two observations (``World.outside``): :data:`TRUNK`, the trunk branch as the ref sensor
last read it (:class:`TrunkSeen`, ``None`` while the branch does not exist), and
:data:`PIPELINE`, the candidates under test (:class:`PipelineView`). The decision reads
them; only the shell (``daemon.py``, ``queue.py``) writes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from projections.merges import QueueEntry
from workers import history, repository
from workers.merger.gates import TrunkVerdict
from workers.merger.gitops import MergeAttempt

TRUNK = "trunk"
PIPELINE = "pipeline"

UNIT = "Loopbus-Unit"
HEAD = "Loopbus-Head"
QUEUED = "Loopbus-Queued"
REVERTS = "Loopbus-Reverts"
CAUSE = "Loopbus-Cause"
"""The trailers the merger writes into its own commits, so that it knows them again."""

Key = tuple[str, str, str]
"""(base commit, unit, head): what a candidate is made of."""

Request = tuple[str, tuple[Key, ...], str]
"""What the pipeline was asked to stack: (trunk commit, (queued id, unit, head) per entry,
the digest of the adopted configuration that judges them)."""


@dataclass(frozen=True)
class TrunkSeen:
    """The commit the trunk branch points at, and what it says about itself."""

    commit: str
    exists: bool = True
    """False when the ref names a commit the repository does not hold."""
    tree: str | None = None
    trailers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class CandidateView:
    """One candidate: a queued head merged onto ``key[0]``, and its verdict once tested."""

    key: Key
    attempt: MergeAttempt
    ahead: tuple[str, ...]
    verdict: TrunkVerdict | None = None
    """``None`` while the test runs."""


@dataclass(frozen=True)
class PipelineView:
    """The stack the pipeline holds, in queue order (it ends at a candidate that conflicts)."""

    request: Request | None = None
    stacked: tuple[CandidateView, ...] = ()


def request_of(trunk: str, entries: Sequence[QueueEntry], config: str = "") -> Request:
    return trunk, tuple((e.queued, e.unit, e.head) for e in entries), config


def merge_message(entry: QueueEntry, trunk: str) -> str:
    """The merge commit's message; its trailers let a restarted merger recognise it."""
    return (
        f"Merge unit {entry.unit} into {trunk}\n\n"
        f"{UNIT}: {entry.unit}\n"
        f"{HEAD}: {entry.head}\n"
        f"{QUEUED}: {entry.queued}\n"
    )


def look_at(path: Path, branch: str, known: TrunkSeen | None) -> TrunkSeen | None:
    """Where ``branch`` points, with the commit's tree and trailers (read once per commit)."""
    ref = history.read_ref(path, branch)
    if ref is None:
        return None
    if known is not None and known.commit == ref:
        return known
    if not history.has_commit(path, ref):
        return TrunkSeen(ref, exists=False)
    return TrunkSeen(ref, True, repository.tree_of(path, ref), history.trailers(path, ref))
