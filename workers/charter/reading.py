"""What the charter daemon reads from git: criterion tests' functions and ``loopbus.toml``.

Read from the commit's objects, never from a working tree an agent could have touched, and
by the daemon itself: no test code runs. The reading is handed to the decision through the
kernel's ``outside`` (see :mod:`.daemon`) and what it found is written into the facts the
decision publishes, so a replay sees what was read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from schemas.criterion_source import body_digest, split_nodeid
from workers import repository
from workers.errors import CONFIG_FILE

READING = "charter-read"
"""The effect action, and the prefix of the ``outside`` key a reading is kept under."""


@dataclass(frozen=True)
class Reading:
    """Trunk commit ``commit``: each asked test's function digest (absent: no such test)
    and its ``loopbus.toml`` (``None``: none). ``error`` says why nothing could be read."""

    commit: str
    bodies: dict[str, str] = field(default_factory=dict)
    config: str | None = None
    error: str = ""


def reading_key(project: str, commit: str) -> str:
    """``commit`` empty: trunk as the repository has it now."""
    return f"{READING}:{project}:{commit or 'trunk'}"


def read(repo: str, commit: str, tests: Sequence[str], trunk: str | None) -> Reading:
    """Read ``tests`` (pytest node ids) and the configuration at ``commit`` (empty: the
    repository's trunk branch now)."""
    try:
        with repository.open_repo(Path(repo)) as opened:
            if commit:
                found = repository.commit_at(opened, commit)
            else:
                found = repository.trunk_commit(opened, trunk)
            tree = found.tree
            bodies: dict[str, str] = {}
            texts: dict[str, str | None] = {}
            for nodeid in tests:
                path = split_nodeid(nodeid)[0]
                if path not in texts:
                    data = repository.blob_at(opened, tree, path)
                    texts[path] = None if data is None else data.decode("utf-8", "replace")
                text = texts[path]
                digest = body_digest(text, nodeid) if text is not None else None
                if digest is not None:
                    bodies[nodeid] = digest
            config = repository.blob_at(opened, tree, CONFIG_FILE)
            return Reading(
                commit=found.id.decode(),
                bodies=bodies,
                config=None if config is None else config.decode("utf-8", "replace"),
            )
    except Exception as exc:  # an unreadable repository is a reading that found nothing
        return Reading(commit=commit, error=f"{type(exc).__name__}: {exc}")
