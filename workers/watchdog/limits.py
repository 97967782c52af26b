"""The watchdog's limits: the heartbeat lapse per project and the wait budget per reason.

Both are typed as durations (``90s``, ``5m``, ``2h``). A bare duration sets the default; a
``PROJECT=DURATION`` lapse or a ``REASON=DURATION`` budget overrides it for one project or
one reason.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from schemas import BLOCK_REASONS
from schemas.durations import parse_duration
from schemas.errors import InvalidValue
from schemas.ids import is_token

DEFAULT_LAPSE_S = 300.0
DEFAULT_WAIT_BUDGET_S = 1800.0


@dataclass(frozen=True)
class Limits:
    lapse_s: float = DEFAULT_LAPSE_S
    project_lapse_s: dict[str, float] = field(default_factory=dict)
    wait_budget_s: float = DEFAULT_WAIT_BUDGET_S
    reason_budget_s: dict[str, float] = field(default_factory=dict)

    def lapse_for(self, project: str) -> float:
        return self.project_lapse_s.get(project, self.lapse_s)

    def budget_for(self, reason: str) -> float:
        return self.reason_budget_s.get(reason, self.wait_budget_s)

    def shortest(self) -> float:
        overrides = [*self.project_lapse_s.values(), *self.reason_budget_s.values()]
        return min([self.lapse_s, self.wait_budget_s, *overrides])


def parse_limits(lapses: Iterable[str] = (), budgets: Iterable[str] = ()) -> Limits:
    """Limits from ``--heartbeat-lapse`` and ``--wait-budget`` values.

    Raises :class:`InvalidValue` naming the option, the value and what to write.
    """
    lapse, per_project = _split(lapses, "--heartbeat-lapse", DEFAULT_LAPSE_S, _project_key)
    budget, per_reason = _split(budgets, "--wait-budget", DEFAULT_WAIT_BUDGET_S, _reason_key)
    return Limits(lapse, per_project, budget, per_reason)


def _project_key(option: str, key: str, text: str) -> str:
    if not is_token(key):
        raise InvalidValue(option, text, f"{key!r} is not a project id; write PROJECT=DURATION")
    return key


def _reason_key(option: str, key: str, text: str) -> str:
    if key not in BLOCK_REASONS:
        raise InvalidValue(
            option, text, f"{key!r} is not a reason; one of: {', '.join(BLOCK_REASONS)}"
        )
    return key


def _split(
    values: Iterable[str], option: str, default: float, check_key: object
) -> tuple[float, dict[str, float]]:
    overall = default
    overrides: dict[str, float] = {}
    for text in values:
        key, sep, duration = text.rpartition("=")
        seconds = parse_duration(duration, option)
        if sep:
            assert callable(check_key)
            overrides[check_key(option, key, text)] = seconds
        else:
            overall = seconds
    return overall, overrides
