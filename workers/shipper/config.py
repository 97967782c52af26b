"""``[ship]`` in ``loopbus.toml``: the optional command that opens a draft PR from a bundle.

```toml
[ship]
command = "scripts/open-draft-pr"
timeout = 300
```
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from typing import Any

from loopbus.workers.errors import ConfigError

DEFAULT_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class ShipConfig:
    command: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S


def parse(text: str | None) -> ShipConfig:
    """The ``[ship]`` table of a ``loopbus.toml`` text (none: no command)."""
    if text is None:
        return ShipConfig()
    table: Any = tomllib.loads(text).get("ship", {})
    if not isinstance(table, dict):
        raise ConfigError("ship", table, '[ship] is a table: command = "…", timeout = 300')
    unknown = sorted(set(table) - {"command", "timeout"})
    if unknown:
        raise ConfigError(f"ship.{unknown[0]}", table[unknown[0]], "known keys: command, timeout")
    command = table.get("command")
    if command is not None and (not isinstance(command, str) or not command.strip()):
        raise ConfigError("ship.command", command, "a command line, or leave it out")
    timeout = table.get("timeout", DEFAULT_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        raise ConfigError("ship.timeout", timeout, "a positive number of seconds")
    return ShipConfig(command, float(timeout))
