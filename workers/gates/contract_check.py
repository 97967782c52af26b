"""``loopbus plan check --repo``: a plan's ``[contract]`` against what trunk holds.

The same rules the merger applies when it lands the contract (workers/merger/landing_commit.py),
read from the trunk commit (never a working tree's uncommitted edit): a new check may not
reuse a check's id, a criterion may not land in an existing non-test file nor redefine a
test there, and the ``loopbus.toml`` the contract would make must only add to trunk's.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from projections.contract_plan import repository_problems
from schemas.slices import SlicePlan
from workers.agents.cli import TRUNK_ENV
from workers.errors import ConfigError, RepoError
from workers.gates.config import parse_config
from workers.gates.contract import contract_refusals, new_config
from workers.repository import blob_at, commit_at, open_repo, trunk_commit


def trunk_reader(repo: Path, at: str | None = None) -> Callable[[str], str | None]:
    """A reader of files on ``repo``'s trunk, or commit ``at`` (a plain folder: from
    disk)."""
    trunk = at or os.environ.get(TRUNK_ENV) or None

    def read(path: str) -> str | None:
        try:
            with open_repo(repo) as opened:
                commit = commit_at(opened, trunk) if trunk else trunk_commit(opened, None)
                data = blob_at(opened, commit.tree, path)
        except RepoError:
            local = repo / path
            return local.read_text(encoding="utf-8", errors="replace") if local.is_file() else None
        return None if data is None else data.decode("utf-8", "replace")

    return read


def repo_contract_problems(
    repo: Path, plan: SlicePlan, config: str, at: str | None = None
) -> list[str]:
    """What trunk's ``config`` (its ``loopbus.toml``) and files (at commit ``at``, default
    trunk) say against the plan's contract; one line each (empty: it would land)."""
    if plan.contract is None:
        return []
    checks = [spec.id for spec in parse_config(config).checks]
    problems = repository_problems(plan, checks, trunk_reader(repo, at))
    if problems:
        return problems
    try:
        return contract_refusals(config, new_config(config, plan.contract))
    except ConfigError as exc:
        return [" ".join(str(exc).split())]
