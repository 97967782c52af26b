"""``loopbus.toml``: a project's gate configuration, parsed and validated.

It is read from the commit being gated, not the checkout, so a commit's gates (``pending``
included) are the ones that commit declares. Every mistake is one :class:`ConfigError` line
naming the field, the value and the fix. See ``docs/gates.md`` for the format.
"""

from __future__ import annotations

import hashlib
import shlex
import tomllib
from typing import Any

import msgspec

from schemas.project_config import PARSER_NAMES
from workers.errors import CONFIG_FILE, ConfigError, WeakensProfile
from workers.gates import config_fields
from workers.gates.meta import DEFAULT_RULE, MetaRule, parse_meta

DEFAULT_TIMEOUT_S = 600.0
RUNNER_SEMANTICS = "loopbus-gate-runner/1"
"""Part of every config digest: bump it when a parser's reading of tool output changes, so
results established under the old reading are not served from the cache."""

CHECK_KEYS = ("id", "command", "parser", "timeout", "reads", "image", "env", "pending", "meta")
PROJECT_KEYS = ("id", "capabilities", "salt", "python")
TOP_KEYS = (
    "project",
    "check",
    "capability",
    "review",
    "investigator",
    "merge",
    "build",
    "agents",
    "plan",
    "recon",
    "verify",
    "ship",
)
# [review], [investigator], [build], [agents], [plan] and [recon] are read and validated by
# workers/agents/config.py; [verify] and the SHIP keys of [ship] (floors, max_unit_lines)
# by workers/agents/verify_config.py; [merge] by workers/merger/config.py; the ship
# command of [ship] (command, timeout, env) by workers/shipper/config.py.

_digest_encoder = msgspec.json.Encoder(order="deterministic")


class CheckSpec(msgspec.Struct, frozen=True, kw_only=True):
    """One resolved check: what to run, how to read its output, and where it came from.

    ``origin`` is ``project`` or ``profile:<name>@<version>``; ``reads`` is ``("*",)`` when
    the check reads the whole tree.
    """

    id: str
    command: str
    parser: str
    timeout_s: float = DEFAULT_TIMEOUT_S
    reads: tuple[str, ...] = ("*",)
    image: str | None = None
    env: dict[str, str] = {}
    pending: tuple[str, ...] = ()
    origin: str = "project"
    meta: MetaRule = DEFAULT_RULE
    """The meta rule's thresholds; not part of the digest (it decides nothing the check
    measures)."""

    def argv(self) -> list[str]:
        """The command split into words the way a POSIX shell would (no shell runs it)."""
        return shlex.split(self.command)

    def config_sha(self, salt: str = "") -> str:
        """Digest of everything that decides what this check measures (and the salt)."""
        doc = {
            "semantics": RUNNER_SEMANTICS,
            "salt": salt,
            "id": self.id,
            "command": self.command,
            "parser": self.parser,
            "timeout_s": self.timeout_s,
            "reads": sorted(self.reads),
            "image": self.image,
            "env": self.env,
            "pending": sorted(self.pending),
            "origin": self.origin,
        }
        return hashlib.sha256(_digest_encoder.encode(doc)).hexdigest()


class ProjectConfig(msgspec.Struct, frozen=True, kw_only=True):
    """A validated ``loopbus.toml`` with the capability profiles' checks merged in
    (profile checks first, then the project's own, each in file order)."""

    project: str
    capabilities: tuple[str, ...] = ()
    salt: str = ""
    checks: tuple[CheckSpec, ...] = ()
    params: dict[str, dict[str, str]] = {}
    text: str = ""
    python: str = ""
    """``[project] python``: the interpreter checks run with (loopbus's own when empty)."""

    @property
    def cache_salt(self) -> str:
        """The project's part of every cache key's salt (the runner adds the interpreter's
        bytes and its fence: :mod:`workers.gates.host_key`)."""
        return f"{self.salt}|python={self.python}" if self.python else self.salt

    def check(self, check_id: str) -> CheckSpec:
        for spec in self.checks:
            if spec.id == check_id:
                return spec
        known = ", ".join(c.id for c in self.checks) or "none"
        raise ConfigError("check", check_id, f"no such check; this project's checks: {known}")

    def line_of(self, needle: str) -> int:
        """The 1-based line of ``loopbus.toml`` where ``needle`` first appears quoted (else 1)."""
        for quoted in (f'"{needle}"', f"'{needle}'", needle):
            for number, line in enumerate(self.text.splitlines(), start=1):
                if quoted in line:
                    return number
        return 1


def parse_config(text: str, *, source: str = CONFIG_FILE) -> ProjectConfig:
    """Parse and validate a ``loopbus.toml``; raise :class:`ConfigError` on the first mistake."""
    from workers.gates.profiles import load_profiles  # profiles reuse this module

    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            "file", None, f"not valid TOML ({exc}); fix the syntax", source=source
        ) from exc
    config_fields.known_keys(doc, TOP_KEYS, "", source)
    project = doc.get("project")
    if not isinstance(project, dict):
        raise ConfigError(
            "project", None, 'add a [project] table with id = "<project id>"', source=source
        )
    config_fields.known_keys(project, PROJECT_KEYS, "project.", source)
    project_id = config_fields.token(project.get("id"), "project.id", source)
    salt = project.get("salt", "")
    if not isinstance(salt, str):
        raise ConfigError(
            "project.salt", salt, "a salt is a string; change it to drop the cache", source=source
        )
    python = project.get("python", "")
    if not isinstance(python, str) or (python and not python.strip()):
        raise ConfigError(
            "project.python",
            python,
            'name the interpreter checks run with: a path ("/opt/app/.venv/bin/python") '
            'or a command on PATH ("python3.12")',
            source=source,
        )
    profiles = load_profiles()
    capabilities = config_fields.capabilities(project.get("capabilities", []), profiles, source)
    params = config_fields.params(doc.get("capability", {}), capabilities, profiles, source)

    checks: list[CheckSpec] = []
    owner: dict[str, str] = {}
    for name in capabilities:
        for spec in profiles[name].resolve(params.get(name, {})):
            if spec.id in owner:
                continue  # the same check brought by two profiles runs once
            owner[spec.id] = name
            checks.append(spec)

    tables = doc.get("check", [])
    if not isinstance(tables, list):
        raise ConfigError("check", tables, "write each check as a [[check]] table", source=source)
    for index, table in enumerate(tables):
        where = f"check[{index}]"
        fields = parse_check_table(table, where, source=source)
        check_id = fields["id"]
        if check_id in owner:
            profile = owner[check_id]
            if profile == "project":
                raise ConfigError(
                    f"{where}.id",
                    check_id,
                    "another check has this id; ids must be unique",
                    source=source,
                )
            raise WeakensProfile(f"{where}.id", check_id, profile, check_id)
        owner[check_id] = "project"
        checks.append(CheckSpec(**fields, origin="project"))
    if not checks:
        raise ConfigError(
            "check",
            None,
            "declare at least one [[check]] or a capability whose profile brings checks",
            source=source,
        )
    return ProjectConfig(
        project=project_id,
        capabilities=tuple(capabilities),
        salt=salt,
        checks=tuple(checks),
        params=params,
        text=text,
        python=python.strip(),
    )


def load_config_text(text: str) -> ProjectConfig:
    """``parse_config`` under the name the docs test looks for (``# loopbus.toml`` blocks)."""
    return parse_config(text)


def parse_check_table(
    table: Any, where: str, *, source: str, placeholders: frozenset[str] | None = None
) -> dict[str, Any]:
    """Validate one ``[[check]]`` table into :class:`CheckSpec` fields (without ``origin``).

    ``placeholders`` (profiles only) are the ``{name}`` parameters a command may use.
    """
    if not isinstance(table, dict):
        raise ConfigError(where, table, "write each check as a [[check]] table", source=source)
    config_fields.known_keys(table, CHECK_KEYS, f"{where}.", source)
    check_id = config_fields.token(table.get("id"), f"{where}.id", source)
    command = table.get("command")
    if not isinstance(command, str) or not command.strip():
        raise ConfigError(
            f"{where}.command",
            command,
            'give the command to run, e.g. command = "python -m pytest -q"',
            source=source,
        )
    config_fields.command_words(command, f"{where}.command", source, placeholders)
    parser = table.get("parser", "exit-code")
    if parser not in PARSER_NAMES:
        raise ConfigError(
            f"{where}.parser", parser, f"use one of {', '.join(PARSER_NAMES)}", source=source
        )
    timeout_s = config_fields.timeout(
        table.get("timeout", DEFAULT_TIMEOUT_S), f"{where}.timeout", source
    )
    reads = config_fields.reads(table.get("reads", ["*"]), f"{where}.reads", source)
    image = table.get("image")
    if image is not None and (not isinstance(image, str) or not image.strip()):
        raise ConfigError(
            f"{where}.image",
            image,
            'name a container image, e.g. "python:3.12-slim"',
            source=source,
        )
    env = config_fields.env(table.get("env", {}), f"{where}.env", source)
    pending = config_fields.pending(table.get("pending", []), parser, f"{where}.pending", source)
    meta = parse_meta(table.get("meta", {}), f"{where}.meta", source)
    return {
        "meta": meta,
        "id": check_id,
        "command": command,
        "parser": parser,
        "timeout_s": timeout_s,
        "reads": reads,
        "image": image,
        "env": env,
        "pending": pending,
    }
