"""What ``loopbus up --repo`` checks before it starts anything: the trunk and the config.

One trunk for every daemon: ``--trunk`` when given, else the repository's current branch
(what ``HEAD`` names, in a bare repository too). The configuration is read from the trunk
commit — never from a working tree, which a bare repository does not have and which may
hold uncommitted edits — and validated by the same code the daemons use, so a mistake is
one line and exit 2 here instead of a crash loop later.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from loopbus.errors import UsageError
from schemas.project_config import BOOT_CHECK
from workers.agents import config as agent_config
from workers.errors import CONFIG_FILE, ConfigError, RepoError
from workers.gates.config import ProjectConfig, parse_config
from workers.gates.environment import interpreter_dir
from workers.merger.face import parse_merge_config
from workers.repository import commit_at, open_repo, resolve


def config_warnings(config: ProjectConfig, source: str) -> list[str]:
    """What a valid ``loopbus.toml`` lacks that the loop will need later, said now: a
    mistake found at the first slice's close costs a whole slice."""
    notes: list[str] = []
    if BOOT_CHECK not in {check.id for check in config.checks}:
        notes.append(
            f'{source} has no [[check]] with id = "{BOOT_CHECK}": every slice would close '
            "with a boot error; add a check that starts the program (see docs/gates.md)"
        )
    if config.python and interpreter_dir(config.python) is None:
        notes.append(
            f"{source}: [project] python = {config.python!r} is not an interpreter on this "
            "machine, so every check would end in error; install it or fix the path"
        )
    return notes


def uncommitted_config(path: Path, committed: str | None, trunk: str | None) -> list[str]:
    """A working tree whose ``loopbus.toml`` differs from trunk's: the daemons read trunk's,
    so an edit not committed there yet changes nothing, which is worth saying once."""
    if not config_differs(path, committed):
        return []
    where = f"trunk ({trunk})" if trunk else "trunk"
    state = "is not on" if committed is None else "differs from the one on"
    return [
        f"{path / CONFIG_FILE} {state} {where}; the daemons read trunk's, so commit the change "
        "there for it to count"
    ]


def config_differs(path: Path, committed: str | None) -> bool:
    """True when ``path`` has a working tree ``loopbus.toml`` whose text is not trunk's
    (``committed``; ``None`` when trunk has none)."""
    local = path / CONFIG_FILE
    if not local.is_file():
        return False
    try:
        text = local.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    # Line endings are git's business, not a change to the configuration.
    return committed is None or text != committed.replace("\r\n", "\n")


def commit_hint(path: Path, committed: str | None) -> str:
    """The clause an error about trunk's ``loopbus.toml`` ends with when the working tree's
    differs: the usual cause of "I fixed it and it still says so" is an edit not committed."""
    if not config_differs(path, committed):
        return ""
    return (
        f"; {CONFIG_FILE} in your working tree differs from trunk's, which loopbus reads: commit it"
    )


def validate_config(text: str, source: str, repo: Path) -> ProjectConfig:
    """Every table of ``loopbus.toml`` as the daemons will read it (gates, [build],
    [review], [investigator], [merge]); raises :class:`ConfigError`."""
    config = parse_config(text, source=source)
    agent_config.parse(text, repo=str(repo))
    parse_merge_config(text)
    return config


@dataclass(frozen=True)
class RepoSetup:
    """The repository as ``up`` will run it: its trunk, trunk's commit, and the project."""

    path: Path
    trunk: str
    commit: str
    project: str
    bare: bool
    warnings: tuple[str, ...] = ()
    unsandboxed: bool = False
    """``[agents] sandbox = "none"``: agents run without a sandbox (``up`` says so)."""


def current_branch(path: Path) -> str:
    """The branch ``HEAD`` names (``HEAD`` itself when detached)."""
    with open_repo(path) as repo:
        target = repo.refs.get_symrefs().get(b"HEAD")
        if target is None or not target.startswith(b"refs/heads/"):
            return "HEAD"
        return target.removeprefix(b"refs/heads/").decode()


def branches(path: Path) -> list[str]:
    """The repository's branches, sorted (a repository made by ``git init`` and never
    committed to has none)."""
    with open_repo(path) as repo:
        return sorted(name.decode() for name in repo.refs.keys(base=b"refs/heads/"))


def no_config(path: Path, branch: str, commit: str, bare: bool) -> str:
    """Why ``up`` refuses a trunk with no ``loopbus.toml``: every daemon reads the project
    and its checks from it, so starting would only crash-loop the gate runner."""
    head = (
        f"--repo {path}: trunk {branch} ({commit[:12]}) has no {CONFIG_FILE}, so there is no "
        "project to run"
    )
    if not bare and (path / CONFIG_FILE).is_file():
        uncommitted = f"the {CONFIG_FILE} in your working tree is not committed"
        return f"{head}; {uncommitted}: commit it on {branch}"
    return (
        f"{head}: commit one naming [project] id and its [[check]]s on {branch} (see "
        "docs/gates.md), or scaffold a new project with loopbus init DIR"
    )


def no_commit(path: Path, trunk: str | None, known: list[str]) -> str:
    """Why ``up`` found no trunk commit, and what to pass instead."""
    if not known:
        return (
            f"--repo {path} has no commit yet: make a first commit (git add -A && git "
            "commit -m 'first'; loopbus reads loopbus.toml from it), then start again"
        )
    shown = ", ".join(known[:10]) + (f" (and {len(known) - 10} more)" if len(known) > 10 else "")
    if trunk:
        return (
            f"--trunk {trunk!r} names no commit in --repo {path}; pass one of its branches: {shown}"
        )
    return (
        f"--repo {path}: its current branch names no commit; pass --trunk with one of its "
        f"branches: {shown}"
    )


def check_repo(path: Path, trunk: str | None) -> RepoSetup:
    """The repository's setup, or a one-line :class:`UsageError` saying what to fix."""
    try:
        known = branches(path)
    except RepoError as exc:  # its message names --repo and the path already
        raise UsageError(f"{exc}: give the path of a git repository") from exc
    try:
        branch = trunk or current_branch(path)
        with open_repo(path) as repo:
            bare = repo.bare
            try:
                commit = commit_at(repo, branch)
            except RepoError:
                if trunk is not None or branch == "main":
                    raise
                branch = "main"  # HEAD names a branch with no commit: the daemons' fallback
                commit = commit_at(repo, branch)
        info = resolve(path, commit.id.decode())
    except RepoError as exc:
        raise UsageError(no_commit(path, trunk, known)) from exc
    if info.config_text is None:
        raise UsageError(no_config(path, branch, info.commit, bare))
    local = [] if bare else uncommitted_config(path, info.config_text, branch)
    source = f"{CONFIG_FILE} on {branch} ({info.commit[:12]})"
    try:
        config = validate_config(info.config_text, source, path)
    except ConfigError as exc:
        message = str(exc)
        if not message.startswith(source):
            message = f"{source}: {message.removeprefix(CONFIG_FILE + ': ')}"
        hint = "" if bare else commit_hint(path, info.config_text)
        raise UsageError(f"--repo {path}: {message}{hint}") from exc
    warnings = tuple(config_warnings(config, source) + local)
    agents = agent_config.parse(info.config_text, repo=str(path)).agents
    return RepoSetup(path, branch, info.commit, config.project, bare, warnings, agents.unsandboxed)
