"""``[ship]`` in ``loopbus.toml``: the optional command that opens a draft PR from a bundle.

```toml
[ship]
command = "scripts/open-draft-pr"
timeout = 300
env = ["GH_TOKEN"]
```

``env`` names the variables of the daemon's own environment the command may see (a forge
token, say); nothing else is passed through, so a secret the operator did not name does not
reach a script.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from typing import Any

from workers.errors import ConfigError

DEFAULT_TIMEOUT_S = 300.0
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(frozen=True)
class ShipConfig:
    command: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    env: tuple[str, ...] = ()


def parse(text: str | None) -> ShipConfig:
    """The ``[ship]`` table of a ``loopbus.toml`` text (none: no command)."""
    if text is None:
        return ShipConfig()
    table: Any = tomllib.loads(text).get("ship", {})
    if not isinstance(table, dict):
        raise ConfigError("ship", table, '[ship] is a table: command = "…", timeout = 300')
    # floors and max_unit_lines are SHIP's (workers/agents/verify_config.py reads them).
    unknown = sorted(set(table) - {"command", "timeout", "env", "floors", "max_unit_lines"})
    if unknown:
        raise ConfigError(
            f"ship.{unknown[0]}",
            table[unknown[0]],
            "known keys: command, timeout, env, floors, max_unit_lines",
        )
    command = table.get("command")
    if command is not None and (not isinstance(command, str) or not command.strip()):
        raise ConfigError("ship.command", command, "a command line, or leave it out")
    timeout = table.get("timeout", DEFAULT_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        raise ConfigError("ship.timeout", timeout, "a positive number of seconds")
    env = table.get("env", [])
    if not isinstance(env, list) or not all(isinstance(n, str) and _NAME.match(n) for n in env):
        raise ConfigError("ship.env", env, 'a list of variable names, e.g. ["GH_TOKEN"]')
    return ShipConfig(command, float(timeout), tuple(env))
