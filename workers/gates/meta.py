"""A gate's meta rule: what it proxies for, its two failure modes, and its tiered thresholds.

Declared next to the check in ``loopbus.toml`` (``[check.meta]``) and validated like every
other field. A tier fires when, over at least ``over`` findings of the gate, the share
dismissed as false positives is above ``above``; ``action`` says what follows: ``review``
raises a meta-finding proposing a retune and puts the gate under review (it keeps
blocking), ``advisory`` puts it under review and stops it blocking until the review is
settled. A check that declares no tiers gets :data:`DEFAULT_TIERS`::

    [check.meta]
    proxies = "the public API keeps its documented types"
    false_positive = "flags a generic alias the checker cannot see through"
    false_negative = "misses a type erased by a cast"
    tiers = [{ above = 0.10, over = 20, action = "review" },
             { above = 0.25, over = 20, action = "advisory" }]
"""

from __future__ import annotations

import itertools
from typing import Any, Literal

import msgspec

from workers.errors import ConfigError

TierAction = Literal["review", "advisory"]
META_KEYS = ("proxies", "false_positive", "false_negative", "tiers")
TIER_KEYS = ("above", "over", "action")


class Tier(msgspec.Struct, frozen=True, kw_only=True):
    above: float
    over: int
    action: TierAction

    @property
    def name(self) -> str:
        return f"{self.action}-above-{self.above:g}-over-{self.over}"


class MetaRule(msgspec.Struct, frozen=True, kw_only=True):
    proxies: str = ""
    false_positive: str = ""
    false_negative: str = ""
    tiers: tuple[Tier, ...] = ()


DEFAULT_TIERS: tuple[Tier, ...] = (
    Tier(above=0.10, over=20, action="review"),
    Tier(above=0.25, over=20, action="advisory"),
)
DEFAULT_RULE = MetaRule(tiers=DEFAULT_TIERS)


def parse_meta(table: Any, where: str, source: str) -> MetaRule:
    """Validate a ``[check.meta]`` table; the default tiers are applied first, then the
    tiers the table carries are validated (so each case has one behaviour)."""
    if not isinstance(table, dict):
        raise ConfigError(where, table, "write [check.meta] as a table", source=source)
    for key in table:
        if key not in META_KEYS:
            raise ConfigError(
                f"{where}.{key}",
                table[key],
                f"unknown key; allowed: {', '.join(META_KEYS)}",
                source=source,
            )
    texts = {}
    for key in ("proxies", "false_positive", "false_negative"):
        value = table.get(key, "")
        if not isinstance(value, str):
            raise ConfigError(f"{where}.{key}", value, "a sentence (a string)", source=source)
        texts[key] = value
    raw = table.get("tiers", [msgspec.to_builtins(t) for t in DEFAULT_TIERS])
    if not isinstance(raw, list) or not raw:
        raise ConfigError(
            f"{where}.tiers",
            raw,
            "a list of { above, over, action } tables (omit it for the default 10%/25% over 20)",
            source=source,
        )
    tiers = [_tier(item, f"{where}.tiers[{i}]", source) for i, item in enumerate(raw)]
    for lower, higher in itertools.pairwise(tiers):
        if higher.above <= lower.above:
            raise ConfigError(
                f"{where}.tiers",
                raw,
                "list tiers from the lowest rate up, each above the one before",
                source=source,
            )
    return MetaRule(**texts, tiers=tuple(tiers))


def _tier(item: Any, where: str, source: str) -> Tier:
    if not isinstance(item, dict):
        raise ConfigError(where, item, "a table { above, over, action }", source=source)
    for key in item:
        if key not in TIER_KEYS:
            raise ConfigError(
                f"{where}.{key}",
                item[key],
                f"unknown key; allowed: {', '.join(TIER_KEYS)}",
                source=source,
            )
    above = item.get("above")
    if isinstance(above, bool) or not isinstance(above, int | float) or not 0 <= above < 1:
        raise ConfigError(
            f"{where}.above", above, "a false-positive share in 0..1, e.g. 0.10", source=source
        )
    over = item.get("over")
    if isinstance(over, bool) or not isinstance(over, int) or over < 1:
        raise ConfigError(
            f"{where}.over", over, "a positive whole number of findings", source=source
        )
    action = item.get("action")
    if action not in ("review", "advisory"):
        raise ConfigError(f"{where}.action", action, "review or advisory", source=source)
    return Tier(above=float(above), over=over, action=action)


def reached(rule: MetaRule, raised: int, false_positive: int) -> Tier | None:
    """The highest tier the counts reach (``None``: none)."""
    top = None
    for tier in rule.tiers:
        if raised >= tier.over and false_positive / raised > tier.above:
            top = tier
    return top
