"""What a project declares in its ``loopbus.toml``: its checks and who owns each one, its
pending criteria, and the configuration a commit carries.

:func:`declared_checks` reads the working tree of ``--repo`` when a daemon is given one. A
check from a central capability profile belongs to the standards role; a project-local
check is owned as ``gate:<check>``. Without a readable configuration nothing is known from
here, and the gates projection (checks that have produced results) is the only source.

:func:`config_at` reads the configuration a commit carries (trunk's, for the dispatcher):
the commit, not a working tree, is what declares the pending criteria a plan is checked
against.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import structlog

from workers.errors import CONFIG_FILE, ConfigError
from workers.gates.config import ProjectConfig, parse_config
from workers.repository import CommitInfo

log = structlog.get_logger()


@dataclass(frozen=True)
class DeclaredChecks:
    """Check id -> origin (``project`` or ``profile:<name>@<version>``) for one project."""

    project: str | None = None
    origins: dict[str, str] = field(default_factory=dict)

    def for_project(self, project: str) -> dict[str, str]:
        return self.origins if project == self.project else {}

    def owner(self, project: str, check: str) -> str:
        """Who owns ``check``: ``standards`` for a profile's check, else ``gate:<check>``."""
        origin = self.for_project(project).get(check, "project")
        return "standards" if origin.startswith("profile:") else f"gate:{check}"


def declared_checks(repo: Path | None) -> DeclaredChecks:
    """The checks ``repo/loopbus.toml`` declares (nothing when there is no readable one)."""
    if repo is None:
        return DeclaredChecks()
    path = repo / CONFIG_FILE
    try:
        config = parse_config(path.read_text(), source=str(path))
    except FileNotFoundError:
        return DeclaredChecks()
    except (OSError, ConfigError) as exc:
        log.warning("checks.unreadable", path=str(path), error=str(exc))
        return DeclaredChecks()
    return DeclaredChecks(config.project, {spec.id: spec.origin for spec in config.checks})


def config_at(info: CommitInfo) -> ProjectConfig:
    """The configuration ``info``'s commit carries; :class:`ConfigError` when it carries
    none or an invalid one (the message names the commit)."""
    source = f"{CONFIG_FILE}@{info.commit[:12]}"
    if info.config_text is None:
        raise ConfigError(
            "file",
            None,
            "the commit has no such file at its root (see docs/gates.md)",
            source=source,
        )
    return parse_config(info.config_text, source=source)


def pending_criteria(config: ProjectConfig) -> list[str]:
    """Every pending criterion any check of the configuration declares, in file order."""
    return list(dict.fromkeys(c for spec in config.checks for c in spec.pending))


def read_pending_file(path: Path) -> list[str]:
    """Pending criteria of a ``loopbus.toml`` on disk (``loopbus plan check --repo``);
    :class:`ConfigError` when it cannot be read or is not a valid configuration."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(
            "file", None, f"cannot read it: {exc.strerror or exc}", source=str(path)
        ) from exc
    return pending_criteria(parse_config(text, source=str(path)))
