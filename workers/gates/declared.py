"""The checks a project declares in its ``loopbus.toml``, and who owns each one.

Read from the working tree of ``--repo`` when a daemon is given one. A check from a central
capability profile belongs to the standards role; a project-local check is owned as
``gate:<check>``. Without a readable configuration nothing is known from here, and the
gates projection (checks that have produced results) is the only source.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import structlog
from loopbus.workers.errors import ConfigError
from loopbus.workers.gates.config import CONFIG_FILE, parse_config

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
