"""What the ratchet daemon knows from outside the log: the configured checks of each
project (with their origin and meta rule), the shipped profiles' review cadence and
dismissal threshold, the catalogue project and the catalogue operators.

The catalogue operator is modelled as an operator principal listed here (the daemon's
``--catalogue-operator``): the one operator seat that speaks for every project a profile
charges. Profile moves and reviews live on the catalogue project's log.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from schemas.ratchet import CATALOGUE
from workers.gates.config import ProjectConfig
from workers.gates.declared import declared_checks
from workers.gates.meta import DEFAULT_RULE, MetaRule
from workers.gates.profiles import load_profiles


@dataclass(frozen=True)
class ConfiguredCheck:
    origin: str
    rule: MetaRule = DEFAULT_RULE


@dataclass(frozen=True)
class Policy:
    catalogue: str = CATALOGUE
    catalogue_operators: frozenset[str] = frozenset()
    checks: dict[str, dict[str, ConfiguredCheck]] = field(default_factory=dict)
    """project -> check id -> how it is configured."""
    review_every: dict[str, int] = field(default_factory=dict)
    """profile -> its N (declaring slices between reviews)."""
    dismissed_across: dict[str, int] = field(default_factory=dict)
    """profile -> how many projects' meta-findings on its checks bring it to review."""

    def configured(self, project: str) -> dict[str, ConfiguredCheck]:
        return self.checks.get(project, {})

    def profile_of(self, project: str, check: str) -> str | None:
        found = self.configured(project).get(check)
        if found is None or not found.origin.startswith("profile:"):
            return None
        return found.origin.removeprefix("profile:").partition("@")[0]


def shipped_cadence() -> dict[str, int]:
    return {name: profile.review_every for name, profile in load_profiles().items()}


def shipped_thresholds() -> dict[str, int]:
    return {name: profile.dismissed_across for name, profile in load_profiles().items()}


def from_config(config: ProjectConfig) -> dict[str, ConfiguredCheck]:
    return {spec.id: ConfiguredCheck(spec.origin, spec.meta) for spec in config.checks}


def policy_for(repo: Path | None, catalogue: str, catalogue_operators: list[str]) -> Policy:
    """The policy the daemon runs with: the checks of ``repo``'s ``loopbus.toml`` (when
    given), the shipped profiles' cadence and the catalogue's operators."""
    checks: dict[str, dict[str, ConfiguredCheck]] = {}
    declared = declared_checks(repo)
    if declared.project is not None and repo is not None:
        from workers.gates.config import parse_config

        config = parse_config((repo / "loopbus.toml").read_text())
        checks[config.project] = from_config(config)
    return Policy(
        catalogue=catalogue,
        catalogue_operators=frozenset(catalogue_operators),
        checks=checks,
        review_every=shipped_cadence(),
        dismissed_across=shipped_thresholds(),
    )
