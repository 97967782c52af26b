"""The ``[merge]`` table of ``loopbus.toml``: which checks run only on trunk.

```toml
[merge]
trunk_only = ["integration"]
```

A trunk-only check does not run on merge candidates; it runs on trunk after trunk moved,
and a red result there reverts the merge. Every other check gates the candidate before
trunk moves. The table is read from the commit being gated, like the rest of the file.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from dulwich.objects import Blob, Commit, Tree
from loopbus.workers.gates.config import CONFIG_FILE, parse_config
from loopbus.workers.merger.gitops import open_repo

MERGE_KEYS = ("trunk_only",)


class MergeConfigError(ValueError):
    """Raised when the ``[merge]`` table is wrong; the message names field, value and fix."""

    def __init__(self, field: str, value: object, hint: str):
        self.field = field
        self.value = value
        self.hint = hint
        super().__init__(f"{CONFIG_FILE}: {field} = {value!r}: {hint}")


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
    ``[merge]`` table; raise :class:`MergeConfigError` or the gate runner's ``ConfigError``."""
    config = parse_config(text)
    doc = tomllib.loads(text)
    table = doc.get("merge", {})
    if not isinstance(table, dict):
        raise MergeConfigError("merge", table, 'write a [merge] table, e.g. trunk_only = ["e2e"]')
    for key in table:
        if key not in MERGE_KEYS:
            raise MergeConfigError(
                f"merge.{key}", table[key], f"unknown key; allowed: {', '.join(MERGE_KEYS)}"
            )
    raw = table.get("trunk_only", [])
    if not isinstance(raw, list) or not all(isinstance(c, str) for c in raw):
        raise MergeConfigError("merge.trunk_only", raw, 'list check ids, e.g. ["e2e"]')
    ids = tuple(c.id for c in config.checks)
    for check in raw:
        if check not in ids:
            raise MergeConfigError(
                "merge.trunk_only", check, f"no such check; this project's checks: {', '.join(ids)}"
            )
    trunk_only = tuple(dict.fromkeys(raw))
    if trunk_only and len(trunk_only) == len(ids):
        raise MergeConfigError(
            "merge.trunk_only",
            raw,
            "at least one check must gate candidates before trunk moves",
        )
    return MergeConfig(project=config.project, checks=ids, trunk_only=trunk_only)


def config_text_at(path: Path, commit: str) -> str | None:
    """``loopbus.toml`` as committed in ``commit`` (``None`` when it has none)."""
    with open_repo(path) as repo:
        obj = repo.object_store[commit.encode()]
        assert isinstance(obj, Commit)
        tree = repo.object_store[obj.tree]
        assert isinstance(tree, Tree)
        try:
            _mode, sha = tree[CONFIG_FILE.encode()]
        except KeyError:
            return None
        blob = repo.object_store[sha]
        return blob.data.decode("utf-8", errors="replace") if isinstance(blob, Blob) else None


def merge_config_at(path: Path, commit: str) -> MergeConfig:
    """The merge configuration ``commit`` declares.

    Raises :class:`MergeConfigError` (no file, a bad ``[merge]`` table) or the gate
    runner's ``ConfigError`` (a bad gate configuration).
    """
    text = config_text_at(path, commit)
    if text is None:
        raise MergeConfigError("file", None, f"commit {commit[:12]} has no {CONFIG_FILE}")
    return parse_merge_config(text)
