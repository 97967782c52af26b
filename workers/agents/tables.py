"""What every table of ``loopbus.toml`` the agent daemons read checks alike: the table's
keys, a command line, a timeout. Each mistake is one :class:`ConfigError` line naming the
field, the value and the fix."""

from __future__ import annotations

import shlex
from typing import Any

from schemas.durations import parse_duration
from schemas.errors import InvalidValue
from workers.errors import ConfigError


def check_table(table: Any, name: str, allowed: tuple[str, ...]) -> None:
    if not isinstance(table, dict):
        raise ConfigError(name, table, f"write it as a [{name}] table")
    for key in table:
        if key not in allowed:
            raise ConfigError(
                f"{name}.{key}", table[key], f"unknown key; allowed: {', '.join(allowed)}"
            )


def command_line(value: Any, field: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(field, value, 'give the command to run, e.g. "python review.py"')
    try:
        shlex.split(value)
    except ValueError as exc:
        raise ConfigError(field, value, f"cannot split into words ({exc})") from exc
    return value


def seconds(value: Any, field: str) -> float:
    if isinstance(value, bool):
        raise ConfigError(field, value, "give seconds (300) or a duration ('5m')")
    if isinstance(value, int | float):
        if value <= 0:
            raise ConfigError(field, value, "a timeout must be greater than zero")
        return float(value)
    if isinstance(value, str):
        try:
            return parse_duration(value, field)
        except InvalidValue as exc:
            raise ConfigError(field, value, exc.hint) from exc
    raise ConfigError(field, value, "give seconds (300) or a duration ('5m')")
