"""The agent tables of a project's ``loopbus.toml``: ``[review]``, ``[investigator]``, ``[build]``
(and ``[agents]``, read by :mod:`.sandbox_config`), as one :class:`RepoConfig`.

The gate configuration (``workers/gates/config.py``) owns the file and the ``[project]`` /
``[[check]]`` tables; it lets these tables through and this module reads them. Both are
optional: a project without a ``command`` gets no reviews (or no investigations), and the
daemons do nothing for it. Every mistake is one :class:`ConfigError` line.

```toml
[review]
command = "python reviewer.py {reviewer}"   # any CLI; {reviewer} is the chosen principal
roster = ["r1", "r2"]
timeout = 300            # seconds, or a duration such as "5m"
subtraction = "added"    # added | context | file
oversight = "supervised" # full | supervised | manual
ceiling = 6              # hard round ceiling per unit
stall = 3                # rounds over which an open blocking set that did not shrink stalls
blocking = "medium"      # lowest severity that blocks
trunk = "main"           # the trunk branch (default: main, else HEAD)
frozen = ["docs/acceptance.md"]  # more paths a unit may never edit
wave = true              # also review each merged wave's union diff (docs/verify.md)

[investigator]
command = "python investigate.py"
timeout = 600

[build]
command = "python build.py"   # gets a brief on stdin, prints an envelope (docs/agents.md)
roster = ["b1", "b2"]         # builder principals; a unit's claims are published under one
timeout = "20m"
mode = "normal"               # normal: novel decisions wait for the operator; long: auto-pick
autonomy = ["safe", "risky"]  # the classes long mode may pick alone (never "irreversible")

[agents]                      # how every agent command runs: sandbox_config.py

[plan]                        # the planner (docs/planning.md)
command = "python plan.py"    # gets a planning brief on stdin, prints a slice plan
timeout = 600
max_tries = 3                 # refused plans re-asked with the reasons, then a finding
max_run_tries = 30            # the planner's answers a whole run may take

[recon]                       # reconnaissance before a charter's first plan
command = "python recon.py"   # prints {"facts": [{"id": ..., "text": ...}]}
timeout = 600
max_runs = 5                  # reconnaissance runs a whole run may take
```
"""

from __future__ import annotations

import hashlib
import tomllib
from pathlib import Path
from typing import Any

import msgspec

from projections.round_rules import DEFAULT_BLOCKING, DEFAULT_CEILING, DEFAULT_STALL, SEVERITY_RANK
from schemas.builds import AUTONOMY_CLASSES, BUILD_MODES, AutonomyClass, BuildMode
from schemas.ids import is_token
from schemas.reviews import OVERSIGHT_LEVELS, SUBTRACTION_MODES, Oversight, SubtractionMode
from workers.agents.sandbox_config import AgentsConfig, parse_agents
from workers.agents.tables import check_table, command_line, seconds
from workers.errors import CONFIG_FILE, ConfigError, RepoError
from workers.repository import commit_at, config_at, open_repo, trunk_commit

REVIEW_KEYS = (
    "command",
    "roster",
    "timeout",
    "subtraction",
    "oversight",
    "ceiling",
    "stall",
    "blocking",
    "trunk",
    "frozen",
    "wave",
)
INVESTIGATOR_KEYS = ("command", "timeout")
BUILD_KEYS = ("command", "roster", "timeout", "mode", "autonomy")
PLAN_KEYS = ("command", "timeout", "max_tries", "max_run_tries")
RECON_KEYS = ("command", "timeout", "max_runs")
DEFAULT_PLAN_TIMEOUT_S = 600.0
DEFAULT_PLAN_TRIES = 3
DEFAULT_RUN_TRIES = 30
"""The planner's answers a run may take, every round together: rounds restart (a slice
closed, reconnaissance re-run), this does not."""
DEFAULT_RECON_RUNS = 5
DEFAULT_RECON_TIMEOUT_S = 600.0
DEFAULT_AUTONOMY: tuple[AutonomyClass, ...] = ("safe", "risky")
"""What ``long`` mode may pick alone unless ``[build] autonomy`` says otherwise."""
DEFAULT_BUILD_TIMEOUT_S = 1200.0
DEFAULT_REVIEW_TIMEOUT_S = 300.0
DEFAULT_INVESTIGATION_TIMEOUT_S = 600.0


class ReviewConfig(msgspec.Struct, frozen=True, kw_only=True):
    command: str | None = None
    roster: tuple[str, ...] = ()
    timeout_s: float = DEFAULT_REVIEW_TIMEOUT_S
    subtraction: SubtractionMode = "added"
    oversight: Oversight = "supervised"
    ceiling: int = DEFAULT_CEILING
    stall: int = DEFAULT_STALL
    blocking: str = DEFAULT_BLOCKING
    trunk: str | None = None
    frozen: tuple[str, ...] = ()
    wave: bool = False
    """Review each merged wave's union diff too (docs/verify.md)."""


class InvestigatorConfig(msgspec.Struct, frozen=True, kw_only=True):
    command: str | None = None
    timeout_s: float = DEFAULT_INVESTIGATION_TIMEOUT_S


class BuildConfig(msgspec.Struct, frozen=True, kw_only=True):
    command: str | None = None
    roster: tuple[str, ...] = ()
    timeout_s: float = DEFAULT_BUILD_TIMEOUT_S
    mode: BuildMode = "normal"
    autonomy: tuple[AutonomyClass, ...] = DEFAULT_AUTONOMY
    """The decision classes ``long`` mode may settle alone; the rest wait on the operator."""

    def principal(self, unit: str) -> str:
        """The roster principal a unit's claims are published under (stable per unit)."""
        digest = int.from_bytes(hashlib.sha256(unit.encode()).digest()[:4], "big")
        return self.roster[digest % len(self.roster)]


class PlanConfig(msgspec.Struct, frozen=True, kw_only=True):
    """``[plan]``: the planner command, its timeout and how many refused plans it gets."""

    command: str | None = None
    timeout_s: float = DEFAULT_PLAN_TIMEOUT_S
    max_tries: int = DEFAULT_PLAN_TRIES
    max_run_tries: int = DEFAULT_RUN_TRIES


class ReconConfig(msgspec.Struct, frozen=True, kw_only=True):
    """``[recon]``: the reconnaissance command (optional) and its timeout."""

    command: str | None = None
    timeout_s: float = DEFAULT_RECON_TIMEOUT_S
    max_runs: int = DEFAULT_RECON_RUNS


class RepoConfig(msgspec.Struct, frozen=True, kw_only=True):
    """What the agent-running daemons read from one repository's ``loopbus.toml``."""

    project: str
    repo: str
    review: ReviewConfig = ReviewConfig()
    investigator: InvestigatorConfig = InvestigatorConfig()
    build: BuildConfig = BuildConfig()
    agents: AgentsConfig = AgentsConfig()
    plan: PlanConfig = PlanConfig()
    recon: ReconConfig = ReconConfig()
    python: str = ""
    """``[project] python``: the project's interpreter, first on every agent's PATH."""


def load(repo: str | Path) -> RepoConfig:
    """Read ``<repo>/loopbus.toml``; :class:`ConfigError` names the field on a mistake."""
    path = Path(repo) / CONFIG_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError("file", str(path), f"cannot read {path} ({exc.strerror})") from exc
    return parse(text, repo=str(Path(repo).resolve()))


def config_text(repo: Path, trunk: str | None) -> str | None:
    """``loopbus.toml`` as the trunk commit has it, in a git repository, bare or not: the
    commit of ``trunk``, else of ``main``, else of ``HEAD`` (the daemons' one rule). A
    plain folder's file, or a repository with no commit yet, is read from disk. ``None``
    when there is none."""
    try:
        opened = open_repo(repo)
    except RepoError:
        return _on_disk(repo)
    with opened:
        try:
            commit = commit_at(opened, trunk) if trunk else trunk_commit(opened, None)
        except RepoError as exc:
            if trunk is None:
                return _on_disk(repo)  # no commit yet
            raise ConfigError("file", None, f"{exc}; name the trunk branch") from exc
        return config_at(opened, commit.tree)


def _on_disk(repo: Path) -> str | None:
    path = repo / CONFIG_FILE
    try:
        return path.read_text(encoding="utf-8") if path.is_file() else None
    except OSError as exc:
        raise ConfigError("file", str(path), f"cannot read {path} ({exc.strerror})") from exc


def parse(text: str, *, repo: str = ".", trunk: str | None = None) -> RepoConfig:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError("file", None, f"not valid TOML ({exc}); fix the syntax") from exc
    project = doc.get("project")
    project_id = project.get("id") if isinstance(project, dict) else None
    if not isinstance(project_id, str) or not is_token(project_id):
        raise ConfigError("project.id", project_id, 'add [project] id = "<project id>"')
    review = _review(doc.get("review", {}))
    if review.trunk is None and trunk is not None:  # the one trunk `loopbus up` names
        review = msgspec.structs.replace(review, trunk=trunk)
    return RepoConfig(
        project=project_id,
        repo=repo,
        review=review,
        investigator=_investigator(doc.get("investigator", {})),
        build=_build(doc.get("build", {})),
        agents=parse_agents(doc.get("agents", {})),
        plan=_plan(doc.get("plan", {})),
        recon=_recon(doc.get("recon", {})),
        python=_python(project),
    )


def _python(project: Any) -> str:
    # [project] python is validated by the gate configuration; here it is only read.
    python = project.get("python", "")
    return python.strip() if isinstance(python, str) else ""


def _review(table: Any) -> ReviewConfig:
    check_table(table, "review", REVIEW_KEYS)
    roster = table.get("roster", [])
    if not isinstance(roster, list) or not all(isinstance(r, str) and r.strip() for r in roster):
        raise ConfigError("review.roster", roster, 'list reviewer principals: ["r1", "r2"]')
    if len(set(roster)) != len(roster):
        raise ConfigError("review.roster", roster, "a principal is listed twice")
    for principal in roster:
        if not is_token(principal):
            raise ConfigError(
                "review.roster",
                principal,
                "a reviewer principal is one token (letters, digits, '_' or '-'): its verdicts "
                "are claims published under it",
            )
    command = command_line(table.get("command"), "review.command")
    if command is not None and not roster:
        raise ConfigError(
            "review.roster", roster, "a review command needs a roster of reviewer principals"
        )
    subtraction = table.get("subtraction", "added")
    if subtraction not in SUBTRACTION_MODES:
        raise ConfigError(
            "review.subtraction", subtraction, f"use one of {', '.join(SUBTRACTION_MODES)}"
        )
    oversight = table.get("oversight", "supervised")
    if oversight not in OVERSIGHT_LEVELS:
        raise ConfigError(
            "review.oversight", oversight, f"use one of {', '.join(OVERSIGHT_LEVELS)}"
        )
    ceiling = table.get("ceiling", DEFAULT_CEILING)
    if isinstance(ceiling, bool) or not isinstance(ceiling, int) or ceiling < 1:
        raise ConfigError("review.ceiling", ceiling, "a whole number of rounds, 1 or more")
    stall = table.get("stall", DEFAULT_STALL)
    if isinstance(stall, bool) or not isinstance(stall, int) or stall < 1:
        raise ConfigError("review.stall", stall, "a whole number of rounds, 1 or more")
    blocking = table.get("blocking", DEFAULT_BLOCKING)
    if blocking not in SEVERITY_RANK:
        raise ConfigError("review.blocking", blocking, f"use one of {', '.join(SEVERITY_RANK)}")
    trunk = table.get("trunk")
    if trunk is not None and (not isinstance(trunk, str) or not trunk.strip()):
        raise ConfigError("review.trunk", trunk, 'name the trunk branch, e.g. "main"')
    frozen = table.get("frozen", [])
    if not isinstance(frozen, list) or not all(isinstance(f, str) and f for f in frozen):
        raise ConfigError("review.frozen", frozen, 'list paths or globs: ["docs/spec.md"]')
    return ReviewConfig(
        command=command,
        roster=tuple(roster),
        timeout_s=seconds(table.get("timeout", DEFAULT_REVIEW_TIMEOUT_S), "review.timeout"),
        subtraction=subtraction,
        oversight=oversight,
        ceiling=ceiling,
        stall=stall,
        blocking=blocking,
        trunk=trunk,
        frozen=tuple(frozen),
        wave=_flag(table, "wave", "review.wave"),
    )


def _flag(table: Any, key: str, field: str) -> bool:
    value = table.get(key, False)
    if not isinstance(value, bool):
        raise ConfigError(field, value, "true or false")
    return value


def _investigator(table: Any) -> InvestigatorConfig:
    check_table(table, "investigator", INVESTIGATOR_KEYS)
    return InvestigatorConfig(
        command=command_line(table.get("command"), "investigator.command"),
        timeout_s=seconds(
            table.get("timeout", DEFAULT_INVESTIGATION_TIMEOUT_S), "investigator.timeout"
        ),
    )


def _count(table: Any, key: str, field: str, default: int, what: str) -> int:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(field, value, f"a whole number of {what}, 1 or more")
    return value


def _plan(table: Any) -> PlanConfig:
    check_table(table, "plan", PLAN_KEYS)
    return PlanConfig(
        command=command_line(table.get("command"), "plan.command"),
        timeout_s=seconds(table.get("timeout", DEFAULT_PLAN_TIMEOUT_S), "plan.timeout"),
        max_tries=_count(table, "max_tries", "plan.max_tries", DEFAULT_PLAN_TRIES, "tries"),
        max_run_tries=_count(
            table, "max_run_tries", "plan.max_run_tries", DEFAULT_RUN_TRIES, "tries"
        ),
    )


def _recon(table: Any) -> ReconConfig:
    check_table(table, "recon", RECON_KEYS)
    return ReconConfig(
        command=command_line(table.get("command"), "recon.command"),
        timeout_s=seconds(table.get("timeout", DEFAULT_RECON_TIMEOUT_S), "recon.timeout"),
        max_runs=_count(table, "max_runs", "recon.max_runs", DEFAULT_RECON_RUNS, "runs"),
    )


def _build(table: Any) -> BuildConfig:
    check_table(table, "build", BUILD_KEYS)
    roster = table.get("roster", [])
    if not isinstance(roster, list) or not all(isinstance(r, str) for r in roster):
        raise ConfigError("build.roster", roster, 'list builder principals: ["b1", "b2"]')
    if len(set(roster)) != len(roster):
        raise ConfigError("build.roster", roster, "a principal is listed twice")
    for principal in roster:
        if not is_token(principal):
            raise ConfigError(
                "build.roster",
                principal,
                "a builder principal is one token (letters, digits, '_' or '-'): its claims "
                "are published under it",
            )
    command = command_line(table.get("command"), "build.command")
    if command is not None and not roster:
        raise ConfigError(
            "build.roster", roster, "a build command needs a roster of builder principals"
        )
    mode = table.get("mode", "normal")
    if mode not in BUILD_MODES:
        raise ConfigError("build.mode", mode, f"use one of {', '.join(BUILD_MODES)}")
    return BuildConfig(
        command=command,
        roster=tuple(roster),
        timeout_s=seconds(table.get("timeout", DEFAULT_BUILD_TIMEOUT_S), "build.timeout"),
        mode=mode,
        autonomy=_autonomy(table.get("autonomy", list(DEFAULT_AUTONOMY))),
    )


def _autonomy(value: Any) -> tuple[AutonomyClass, ...]:
    """``[build] autonomy``: classes of the closed set, and never ``irreversible``."""
    allowed = [c for c in AUTONOMY_CLASSES if c != "irreversible"]
    if not isinstance(value, list):
        raise ConfigError("build.autonomy", value, f"list classes, e.g. {allowed[:2]}")
    for item in value:
        if item == "irreversible":
            raise ConfigError(
                "build.autonomy",
                item,
                "an irreversible choice (deleting data, migrating, production) always waits "
                "for the operator; remove it",
            )
        if item not in allowed:
            raise ConfigError("build.autonomy", item, f"use classes of: {', '.join(allowed)}")
    return tuple(c for c in allowed if c in value)
