"""The ``[merge]`` table of ``loopbus.toml``: which checks run only on trunk.

```toml
[merge]
trunk_only = ["integration"]
```

A trunk-only check does not run on merge candidates; it runs on trunk after trunk moved,
and a red result there reverts the merge. Every other check gates the candidate before
trunk moves. On trunk the table is read from the commit being gated, like the rest of the
file; a merge candidate is judged with trunk's file instead (:func:`candidate_gating`).
"""

from __future__ import annotations

import tomllib
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from schemas.ids import is_token
from workers.errors import CONFIG_FILE, ConfigError
from workers.gates.config import parse_config
from workers.gates.trunkconfig import ConfigChange, config_changes, judged_config, refused
from workers.history import read_ref
from workers.repository import resolve

MERGE_KEYS = ("trunk_only",)


@dataclass(frozen=True)
class MergeConfig:
    """The project id, every check id, and the ones that run on trunk only."""

    project: str
    checks: tuple[str, ...]
    trunk_only: tuple[str, ...] = ()

    @property
    def candidate_checks(self) -> tuple[str, ...]:
        """The checks a candidate runs: every check but the trunk-only ones."""
        return tuple(c for c in self.checks if c not in self.trunk_only)


def parse_merge_config(text: str) -> MergeConfig:
    """Parse a whole ``loopbus.toml`` (its checks through the gate runner's parser) and the
    ``[merge]`` table; raise :class:`~workers.errors.ConfigError` naming the field."""
    config = parse_config(text)
    doc = tomllib.loads(text)
    table = doc.get("merge", {})
    if not isinstance(table, dict):
        raise ConfigError("merge", table, 'write a [merge] table, e.g. trunk_only = ["e2e"]')
    for key in table:
        if key not in MERGE_KEYS:
            raise ConfigError(
                f"merge.{key}", table[key], f"unknown key; allowed: {', '.join(MERGE_KEYS)}"
            )
    raw = table.get("trunk_only", [])
    if not isinstance(raw, list) or not all(isinstance(c, str) for c in raw):
        raise ConfigError("merge.trunk_only", raw, 'list check ids, e.g. ["e2e"]')
    ids = tuple(c.id for c in config.checks)
    for check in raw:
        if check not in ids:
            raise ConfigError(
                "merge.trunk_only", check, f"no such check; this project's checks: {', '.join(ids)}"
            )
    trunk_only = tuple(dict.fromkeys(raw))
    if trunk_only and len(trunk_only) == len(ids):
        raise ConfigError(
            "merge.trunk_only",
            raw,
            "at least one check must gate candidates before trunk moves",
        )
    return MergeConfig(project=config.project, checks=ids, trunk_only=trunk_only)


@dataclass(frozen=True)
class CandidateGating:
    """How a merge candidate is gated: the checks it runs (``()``: all of them) and the
    edits to trunk's ``loopbus.toml`` it makes that no unit may make."""

    checks: tuple[str, ...]
    refused: tuple[ConfigChange, ...]


def candidate_gating(
    path: Path, trunk: str, commit: str, criteria: Collection[str], judge: str | None = None
) -> CandidateGating:
    """What gating candidate ``commit`` against trunk commit ``trunk`` takes.

    ``judge``: the ``loopbus.toml`` text that judges (the adopted configuration) in place
    of trunk's own file; every "trunk's" below is then that text.

    The candidate is judged with trunk's configuration plus the edits a unit may make
    (``criteria`` cleared from ``pending``, checks added; see
    :mod:`workers.gates.trunkconfig`): so it runs every check of that configuration
    but the ones *trunk's* ``[merge]`` table keeps for trunk, and every other edit it makes
    is listed in ``refused`` (it would become trunk's configuration if it landed).

    Raises :class:`~workers.errors.ConfigError` (trunk's file is missing or invalid,
    the candidate's is not TOML) or :class:`~workers.errors.RepoError`.
    """
    ours = judge if judge is not None else resolve(path, trunk).config_text
    if ours is None:
        raise ConfigError("file", None, f"trunk commit {trunk[:12]} has no {CONFIG_FILE}")
    theirs = resolve(path, commit).config_text
    trunk_only = parse_merge_config(ours).trunk_only
    changes = refused(config_changes(ours, theirs, criteria))
    if not trunk_only:
        return CandidateGating(checks=(), refused=tuple(changes))
    judged = judged_config(ours, theirs, criteria)
    checks = tuple(c.id for c in judged.checks if c.id not in trunk_only)
    return CandidateGating(checks=checks, refused=tuple(changes))


def project_of(path: Path, trunk: str) -> tuple[str | None, str]:
    """The project id trunk's ``loopbus.toml`` declares, or ``None`` and why it cannot be
    read yet (no trunk, no file, no valid id). Raises ``RepoError`` (not a repository)."""
    ref = read_ref(path, trunk)
    text = resolve(path, ref).config_text if ref is not None else None
    if text is None:
        return None, f"{trunk} has no {CONFIG_FILE} naming the project"
    try:
        project = tomllib.loads(text).get("project", {}).get("id")
    except (tomllib.TOMLDecodeError, AttributeError):
        project = None
    if not isinstance(project, str) or not is_token(project):
        return None, f"{CONFIG_FILE} on {trunk} names no valid project id"
    return project, ""
