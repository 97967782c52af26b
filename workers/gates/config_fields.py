"""The field validators of ``loopbus.toml``'s check and project tables: each reads one
value, and raises :class:`workers.errors.ConfigError` naming the field, the value and the
fix when it is wrong, or returns it in the form :mod:`workers.gates.config` stores.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from typing import Any

from schemas.durations import parse_duration
from schemas.errors import InvalidValue
from workers.errors import ConfigError

TOKEN = re.compile(r"^[A-Za-z0-9_-]{1,64}\Z")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")


def known_keys(
    table: Mapping[str, Any], allowed: tuple[str, ...], prefix: str, source: str
) -> None:
    for key in table:
        if key not in allowed:
            raise ConfigError(
                f"{prefix}{key}",
                table[key],
                f"unknown key; allowed: {', '.join(allowed)}",
                source=source,
            )


def token(value: Any, field: str, source: str) -> str:
    if value is None:
        raise ConfigError(field, None, "required; letters, digits, '-' or '_'", source=source)
    if not isinstance(value, str) or not TOKEN.match(value):
        raise ConfigError(
            field,
            value,
            "use 1-64 letters, digits, '-' or '_' (no dots or spaces)",
            source=source,
        )
    return value


def command_words(
    command: str, field: str, source: str, placeholders: frozenset[str] | None
) -> None:
    try:
        words = shlex.split(command)
    except ValueError as exc:
        raise ConfigError(
            field, command, f"cannot split into words ({exc})", source=source
        ) from exc
    if not words:
        raise ConfigError(field, command, "the command is empty", source=source)
    if placeholders is None:
        return
    for name in re.findall(r"\{([^{}]*)\}", command):
        if name not in placeholders:
            raise ConfigError(
                field,
                command,
                f"uses {{{name}}} but the profile declares no such param",
                source=source,
            )


def timeout(value: Any, field: str, source: str) -> float:
    if isinstance(value, bool):
        raise ConfigError(field, value, "give seconds (300) or a duration ('5m')", source=source)
    if isinstance(value, int | float):
        if value <= 0:
            raise ConfigError(field, value, "a timeout must be greater than zero", source=source)
        return float(value)
    if isinstance(value, str):
        try:
            return parse_duration(value, field)
        except InvalidValue as exc:
            raise ConfigError(field, value, exc.hint, source=source) from exc
    raise ConfigError(field, value, "give seconds (300) or a duration ('5m')", source=source)


def reads(value: Any, field: str, source: str) -> tuple[str, ...]:
    if value == "*":
        return ("*",)
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(
            field,
            value,
            'list the paths or globs it reads (["src/", "*.py"]) or "*"',
            source=source,
        )
    for pattern in value:
        if pattern.startswith("/") or ".." in pattern.split("/"):
            raise ConfigError(
                field, pattern, "paths are relative to the repository root", source=source
            )
    return ("*",) if "*" in value else tuple(value)


def env(value: Any, field: str, source: str) -> dict[str, str]:
    if not isinstance(value, dict):
        raise ConfigError(
            field, value, 'write env as a table: env = { KEY = "value" }', source=source
        )
    env: dict[str, str] = {}
    for key, item in value.items():
        if not ENV_NAME.match(key):
            raise ConfigError(f"{field}.{key}", item, "not a valid variable name", source=source)
        if key.startswith("LOOPBUS_"):
            raise ConfigError(
                f"{field}.{key}", item, "LOOPBUS_* variables are the runner's own", source=source
            )
        if key.startswith("LD_"):  # the dynamic loader's: code a check's tools would load
            raise ConfigError(
                f"{field}.{key}",
                item,
                "LD_* variables are refused (they load code into every program the check "
                "starts); build the library into the tool instead",
                source=source,
            )
        if not isinstance(item, str):
            raise ConfigError(f"{field}.{key}", item, "env values are strings", source=source)
        env[key] = item
    return env


def pending(value: Any, parser: str, field: str, source: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(
            field, value, 'list pytest node ids, e.g. ["tests/test_x.py::test_y"]', source=source
        )
    if value and parser != "pytest":
        raise ConfigError(
            field,
            value,
            'pending tests need parser = "pytest" (it reads each test\'s ending)',
            source=source,
        )
    seen: set[str] = set()
    for node in value:
        path, sep, name = node.partition("::")
        if not sep or not path or not name or node.endswith("::"):
            raise ConfigError(
                field,
                node,
                "name one test as PATH::TEST (as pytest prints it), not a file",
                source=source,
            )
        if node in seen:
            raise ConfigError(field, node, "listed twice", source=source)
        seen.add(node)
    return tuple(value)


def capabilities(value: Any, profiles: Mapping[str, Any], source: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(
            "project.capabilities", value, 'list capability names, e.g. ["cli"]', source=source
        )
    for name in value:
        if name not in profiles:
            raise ConfigError(
                "project.capabilities",
                name,
                f"no such capability profile; shipped: {', '.join(sorted(profiles))}",
                source=source,
            )
    return list(dict.fromkeys(value))


def params(
    value: Any, capabilities: list[str], profiles: Mapping[str, Any], source: str
) -> dict[str, dict[str, str]]:
    if not isinstance(value, dict):
        raise ConfigError(
            "capability", value, 'write [capability."<name>"] tables of strings', source=source
        )
    for name in value:
        if name not in capabilities:
            raise ConfigError(
                f"capability.{name}",
                value[name],
                "parameters for a capability the project does not declare; "
                "add it to project.capabilities or remove the table",
                source=source,
            )
    resolved: dict[str, dict[str, str]] = {}
    for name in capabilities:
        table = value.get(name, {})
        if not isinstance(table, dict):
            raise ConfigError(
                f"capability.{name}", table, "write a table of strings", source=source
            )
        resolved[name] = profiles[name].bind(table, f'capability."{name}"', source)
    return resolved
