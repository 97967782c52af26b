"""``[verify]`` and ``[ship]`` of a project's ``loopbus.toml`` (docs/verify.md).

```toml
[verify]
command = "python verify.py"  # gets a code-cold brief on stdin, prints an envelope
timeout = 600

[ship]
max_unit_lines = 400          # a unit's diff above this many changed lines does not ship
[ship.floors]                 # the lowest score per axis for a slice to ship
correctness = 8
testing_strategy = 7
plan_adherence = 8
regression_surface = 9
```

Read from the same text as the rest of the file (the gate configuration lets both tables
through); every mistake is one :class:`ConfigError` line naming the field. ``[ship]`` is
shared: ``command``, ``timeout`` and ``env`` (the draft-PR command) are read by
``workers/shipper/config.py``.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import msgspec

from projections.ship import ShipRules
from schemas.scores import AXES, DEFAULT_FLOORS
from workers.agents.config import INVESTIGATOR_KEYS, config_text
from workers.agents.tables import check_table, command_line, seconds
from workers.errors import ConfigError

VERIFY_KEYS = (*INVESTIGATOR_KEYS, "propose_gates")
"""A command and its timeout, as the investigator has, and whether passing checks are
proposed as gates."""
SHIP_KEYS = ("floors", "max_unit_lines", "command", "timeout", "env")
"""Every key of ``[ship]``: the last three are the ship command's (workers/shipper)."""
DEFAULT_VERIFY_TIMEOUT_S = 600.0
DEFAULT_MAX_UNIT_LINES = 400


class VerifyConfig(msgspec.Struct, frozen=True, kw_only=True):
    command: str | None = None
    timeout_s: float = DEFAULT_VERIFY_TIMEOUT_S
    propose_gates: bool = False
    """Each acceptance check the verifier wrote that passed on trunk is proposed as a
    project-local gate (Drafted, for the operator to approve or decline)."""


class ShipConfig(msgspec.Struct, frozen=True, kw_only=True):
    floors: dict[str, int] = msgspec.field(default_factory=lambda: dict(DEFAULT_FLOORS))
    max_unit_lines: int = DEFAULT_MAX_UNIT_LINES


def parse_verify(doc: dict[str, Any]) -> VerifyConfig:
    table = doc.get("verify", {})
    check_table(table, "verify", VERIFY_KEYS)
    propose = table.get("propose_gates", False)
    if not isinstance(propose, bool):
        raise ConfigError("verify.propose_gates", propose, "write true or false")
    return VerifyConfig(
        command=command_line(table.get("command"), "verify.command"),
        timeout_s=seconds(table.get("timeout", DEFAULT_VERIFY_TIMEOUT_S), "verify.timeout"),
        propose_gates=propose,
    )


def parse_ship(doc: dict[str, Any]) -> ShipConfig:
    table = doc.get("ship", {})
    check_table(table, "ship", SHIP_KEYS)
    floors_table = table.get("floors", {})
    check_table(floors_table, "ship.floors", AXES)
    floors = dict(DEFAULT_FLOORS)
    for axis, value in floors_table.items():
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 10:
            raise ConfigError(f"ship.floors.{axis}", value, "a whole score from 0 to 10")
        floors[axis] = value
    lines = table.get("max_unit_lines", DEFAULT_MAX_UNIT_LINES)
    if isinstance(lines, bool) or not isinstance(lines, int) or lines < 1:
        raise ConfigError("ship.max_unit_lines", lines, "a whole number of lines, 1 or more")
    return ShipConfig(floors=floors, max_unit_lines=lines)


def parse(text: str) -> tuple[VerifyConfig, ShipConfig]:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError("file", None, f"not valid TOML ({exc}); fix the syntax") from exc
    return parse_verify(doc), parse_ship(doc)


def parse_verify_text(text: str) -> VerifyConfig:
    """``[verify]`` of a ``loopbus.toml`` text."""
    return parse(text)[0]


def ship_rules(repo: Path, trunk: str | None) -> ShipRules:
    """What SHIP needs for the repository, from ``loopbus.toml`` on its trunk."""
    text = config_text(repo, trunk)
    if text is None:
        return ShipRules()
    verify, ship = parse(text)
    review = tomllib.loads(text).get("review", {})
    wave = isinstance(review, dict) and review.get("wave") is True and bool(review.get("command"))
    return ShipRules(
        verify=verify.command is not None,
        floors=ship.floors,
        max_unit_lines=ship.max_unit_lines,
        wave_review=wave,
    )


def load(repo: str | Path) -> tuple[VerifyConfig, ShipConfig]:
    """``[verify]`` and ``[ship]`` of ``<repo>/loopbus.toml`` (defaults when absent)."""
    path = Path(repo) / "loopbus.toml"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError("file", str(path), f"cannot read {path} ({exc.strerror})") from exc
    return parse(text)
