"""Capability profiles: the central checks a project inherits by declaring what it produces.

Each shipped profile is a TOML file under ``workers/gates/profiles/``::

    [profile]
    name = "cli"              # the capability a project declares
    version = 1               # part of every check's config digest
    review_every = 50         # slices declaring it between catalogue reviews (default 50)
    dismissed_across = 3      # projects whose dismissals bring it to review (default 3)

    [params.command]          # a value the project supplies under [capability."cli"]
    help = "how to run the tool"
    # tighten = "lower"       # a numeric floor: only a smaller value may replace trunk's

    [[check]]                 # same keys as a project check; {param} is replaced
    id = "cli-help"
    command = "{command} --help"

A project may add checks next to a profile's, never replace one: a project check whose id
is a profile check's is refused (see :class:`workers.errors.WeakensProfile`).
"""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from workers.errors import ConfigError
from workers.gates.config import CheckSpec, parse_check_table

DEFAULT_REVIEW_EVERY = 50
DEFAULT_DISMISSED_ACROSS = 3
PROFILE_KEYS = ("name", "version", "review_every", "dismissed_across", "description")


@dataclass(frozen=True)
class Param:
    """A value a declaring project supplies; ``default`` ``None`` means it is required."""

    name: str
    help: str
    default: str | None = None
    tighten: str | None = None
    """``lower`` or ``higher``: which way a change makes the floor stricter (a number). A
    parameter without it may not change in a unit's commit at all."""


@dataclass(frozen=True)
class Profile:
    """One capability profile: its identity, its parameters and its checks (unresolved)."""

    name: str
    version: int
    review_every: int
    description: str
    params: dict[str, Param] = field(default_factory=dict)
    checks: tuple[dict[str, Any], ...] = ()
    dismissed_across: int = DEFAULT_DISMISSED_ACROSS
    """How many projects' dismissals of this profile's checks (each a meta-finding of
    the meta rule in that project) bring the profile to catalogue review."""

    @property
    def origin(self) -> str:
        return f"profile:{self.name}@{self.version}"

    def bind(self, table: Mapping[str, Any], where: str, source: str) -> dict[str, str]:
        """The project's values for this profile's params, defaults applied, or a ConfigError."""
        for key, value in table.items():
            if key not in self.params:
                known = ", ".join(self.params) or "none"
                raise ConfigError(
                    f"{where}.{key}",
                    value,
                    f"the {self.name} profile has no such param; its params: {known}",
                    source=source,
                )
            if not isinstance(value, str) or not value.strip():
                raise ConfigError(f"{where}.{key}", value, "give a non-empty string", source=source)
        bound: dict[str, str] = {}
        for name, param in self.params.items():
            value = table.get(name, param.default)
            if value is None:
                raise ConfigError(
                    f"{where}.{name}",
                    None,
                    f"the {self.name} profile needs it: {param.help}",
                    source=source,
                )
            bound[name] = str(value)
        return bound

    def resolve(self, params: Mapping[str, str]) -> list[CheckSpec]:
        """This profile's checks with ``{param}`` replaced by the project's values."""
        specs = []
        for fields in self.checks:
            command = str(fields["command"])
            for name, value in params.items():
                command = command.replace(f"{{{name}}}", value)
            specs.append(CheckSpec(**{**fields, "command": command}, origin=self.origin))
        return specs


def parse_profile(text: str, source: str) -> Profile:
    """Parse and validate one profile file."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError("file", None, f"not valid TOML ({exc})", source=source) from exc
    head = doc.get("profile")
    if not isinstance(head, dict):
        raise ConfigError("profile", None, "add a [profile] table", source=source)
    for key in head:
        if key not in PROFILE_KEYS:
            raise ConfigError(
                f"profile.{key}",
                head[key],
                f"unknown key; allowed: {', '.join(PROFILE_KEYS)}",
                source=source,
            )
    name = head.get("name")
    if not isinstance(name, str) or not name:
        raise ConfigError("profile.name", name, "name the capability", source=source)
    version = _positive(head, "version", None, "a positive whole number", source)
    # The default is applied first and the value the profile then carries is validated, so
    # each case (absent, valid, invalid) has exactly one behaviour.
    review_every = _positive(
        head,
        "review_every",
        DEFAULT_REVIEW_EVERY,
        "a positive whole number of declaring slices between reviews (omit it for 50)",
        source,
    )
    across = _positive(
        head,
        "dismissed_across",
        DEFAULT_DISMISSED_ACROSS,
        "a positive whole number of projects whose dismissals of this profile's checks "
        "bring it to catalogue review (omit it for 3)",
        source,
    )
    params = _params(doc, source)
    checks = _checks(doc, params, source)
    for extra in set(doc) - {"profile", "params", "check"}:
        raise ConfigError(
            extra, doc[extra], "unknown table; allowed: profile, params, check", source=source
        )
    return Profile(
        name,
        version,
        review_every,
        str(head.get("description", "")),
        params,
        checks,
        dismissed_across=across,
    )


def _positive(head: dict[str, Any], key: str, default: int | None, fix: str, source: str) -> int:
    """``[profile] key`` as a positive whole number (``default`` when absent), else refused."""
    value = head.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"profile.{key}", value, fix, source=source)
    return value


def _params(doc: dict[str, Any], source: str) -> dict[str, Param]:
    """The ``[params.<name>]`` tables: each with a help text, a string default, a direction."""
    params: dict[str, Param] = {}
    raw_params = doc.get("params", {})
    if not isinstance(raw_params, dict):
        raise ConfigError("params", raw_params, "write [params.<name>] tables", source=source)
    for pname, spec in raw_params.items():
        if not isinstance(spec, dict) or not isinstance(spec.get("help"), str):
            raise ConfigError(f"params.{pname}", spec, "give each param a help text", source=source)
        default = spec.get("default")
        if default is not None and not isinstance(default, str):
            raise ConfigError(f"params.{pname}.default", default, "a string", source=source)
        tighten = spec.get("tighten")
        if tighten is not None and tighten not in ("lower", "higher"):
            raise ConfigError(
                f"params.{pname}.tighten", tighten, 'say "lower" or "higher"', source=source
            )
        params[pname] = Param(pname, spec["help"], default, tighten)
    return params


def _checks(
    doc: dict[str, Any], params: dict[str, Param], source: str
) -> tuple[dict[str, Any], ...]:
    """The profile's ``[[check]]`` tables: at least one, unique ids, no pending tests."""
    tables = doc.get("check", [])
    if not isinstance(tables, list) or not tables:
        raise ConfigError("check", tables, "a profile brings at least one [[check]]", source=source)
    checks = []
    seen: set[str] = set()
    for index, table in enumerate(tables):
        where = f"check[{index}]"
        fields = parse_check_table(table, where, source=source, placeholders=frozenset(params))
        if fields["pending"]:
            raise ConfigError(
                f"{where}.pending",
                fields["pending"],
                "pending tests are a project's, not a profile's",
                source=source,
            )
        if fields["id"] in seen:
            raise ConfigError(f"{where}.id", fields["id"], "listed twice", source=source)
        seen.add(fields["id"])
        checks.append(fields)
    return tuple(checks)


@functools.cache
def load_profiles() -> Mapping[str, Profile]:
    """Every shipped profile by capability name; checks shared by two profiles must agree."""
    found: dict[str, Profile] = {}
    owners: dict[str, tuple[str, dict[str, Any]]] = {}
    folder = resources.files("workers.gates") / "profiles"
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".toml"):
            continue
        source = f"profiles/{entry.name}"
        profile = parse_profile(entry.read_text(encoding="utf-8"), source)
        if profile.name in found:
            raise ConfigError("profile.name", profile.name, "two profiles claim it", source=source)
        for fields in profile.checks:
            previous = owners.get(fields["id"])
            if previous is not None and previous[1] != fields:
                raise ConfigError(
                    "check.id",
                    fields["id"],
                    f"also defined differently by {previous[0]}",
                    source=source,
                )
            owners[fields["id"]] = (profile.name, fields)
        found[profile.name] = profile
    return found
