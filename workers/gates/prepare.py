"""Before a suite runs: the commit, the commit that judges it, the configuration it is
judged with and the checks to run — or why it cannot be judged at all.

Reads git only (run in a thread by the runner); the runner turns an :class:`Unjudgeable`
into an error suite.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from schemas.targets import CodeTarget
from workers import repository
from workers.errors import CONFIG_FILE, ConfigError, RepoError
from workers.gates.config import CheckSpec, ProjectConfig, parse_config
from workers.gates.trunkconfig import judged_config
from workers.gates.verdicts import Finding

Prepared = tuple[
    repository.CommitInfo, repository.CommitInfo | None, ProjectConfig, list[CheckSpec]
]
"""The commit, the commit that judges it (``None``: its own configuration does), the
configuration, and the checks to run."""


@dataclass(frozen=True)
class Unjudgeable:
    """Why a commit cannot be gated (the commit and tree when they are known)."""

    commit: str | None
    tree: str | None
    why: str
    finding: Finding | None = None
    config_error: ConfigError | None = None


def prepare(
    repo: Path,
    project: str | None,
    commit: str | None,
    trunk: str | None,
    judge: str | None,
    criteria: Sequence[str],
    checks: Sequence[str],
) -> Prepared | Unjudgeable:
    """See :meth:`workers.gates.runner.GateRunner.evaluate` for ``trunk``, ``judge``
    and ``criteria``; ``project``: the one project the runner serves (``None``: any)."""
    try:
        info = repository.resolve(repo, commit)
        base = None if trunk is None else repository.resolve(repo, trunk)
    except RepoError as exc:
        return Unjudgeable(None, None, str(exc))
    if judge is not None and base is not None:
        base = dataclasses.replace(base, config_text=judge)
    if judge is None and (
        info.config_text is None or (base is not None and base.config_text is None)
    ):
        return Unjudgeable(info.commit, info.tree, no_config(info, base))
    try:
        if judge is not None and base is None:
            config, specs = judging(project, judge, None, (), checks)
        else:
            config, specs = judging(project, info.config_text, base, criteria, checks)
    except ConfigError as exc:
        finding = config_finding(exc, info.config_text or judge or "")
        return Unjudgeable(info.commit, info.tree, str(exc), finding, exc)
    return info, base, config, list(specs)


def judging(
    project: str | None,
    own_text: str | None,
    base: repository.CommitInfo | None,
    criteria: Sequence[str],
    checks: Sequence[str],
) -> tuple[ProjectConfig, list[CheckSpec]]:
    """The configuration a commit is judged with (trunk's plus the unit's allowed edits
    when ``base`` is given, else its own) and the checks to run. Raises ConfigError."""
    if base is not None and base.config_text is not None:
        config = judged_config(base.config_text, own_text, criteria)
    else:
        assert own_text is not None  # the caller refused a commit without one
        config = parse_config(own_text)
    if project is not None and config.project != project:
        raise ConfigError("project.id", config.project, f"this runner serves project {project!r}")
    return config, ([config.check(c) for c in checks] if checks else list(config.checks))


def no_config(info: repository.CommitInfo, base: repository.CommitInfo | None) -> str:
    """Why a commit cannot be judged: trunk's or its own ``loopbus.toml`` is missing."""
    if base is not None and base.config_text is None:
        return f"trunk commit {base.commit[:12]} has no {CONFIG_FILE} to judge with"
    return f"commit {info.commit[:12]} has no {CONFIG_FILE} at its root (see docs/gates.md)"


def config_finding(exc: ConfigError, text: str) -> Finding:
    """The finding an invalid ``loopbus.toml`` raises, at the line naming the bad value."""
    line = 1
    if exc.value is not None:
        needle = str(exc.value)
        for number, content in enumerate(text.splitlines(), start=1):
            if needle and needle in content:
                line = number
                break
    return Finding(
        target=CodeTarget(path=CONFIG_FILE, start=line, end=line),
        severity="high",
        message=str(exc),
        evidence={"field": exc.field},
    )
