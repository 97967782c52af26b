"""A gate run's lease deadline, from the checks' own timeouts in ``loopbus.toml``.

A suite runs each check at most twice (on the candidate, and again on trunk's side when
it changes test infrastructure), and its checks may queue one after another for the
runner's slots; so the bound is twice the sum of their timeouts, plus the margin. Read
from trunk's configuration as the runner sees trunk move; a ``loopbus.toml`` that does not
parse leaves the last deadline (the suite itself reports the broken file).
"""

from __future__ import annotations

from workers.errors import ConfigError
from workers.gates.config import parse_config
from workers.leases.deadlines import within


def suite_deadline(config_text: str | None) -> float | None:
    """Seconds a gate run under ``config_text`` may hold its lease (``None``: unknown)."""
    if config_text is None:
        return None
    try:
        config = parse_config(config_text)
    except ConfigError:
        return None
    return within(*(2 * spec.timeout_s for spec in config.checks))
