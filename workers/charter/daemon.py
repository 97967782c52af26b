"""The charter daemon's shell: the folds it keeps and how often it looks at the clock.

Everything it does is publishing what :func:`loopbus.workers.charter.decide.decide`
decides; time-based steps (check-in, finalizing, the wall clock's end) are decided at
least every ``tick_s`` seconds. The clock is the kernel's, so a test injects its own.
"""

from __future__ import annotations

from collections.abc import Sequence

from loopbus.projections import charter, gates, merges
from loopbus.projections.intents import Intent
from loopbus.workers.charter.decide import Options, decide
from loopbus.workers.kernel import Daemon, World

DEFAULT_TICK_S = 5.0


class CharterDaemon(Daemon):
    """Charters approved, criteria judged on trunk, run budgets kept."""

    name = "charter"
    folds = (charter.FOLD, merges.FOLD, gates.FOLD)

    def __init__(
        self,
        *,
        projects: Sequence[str] = (),
        tick_s: float = DEFAULT_TICK_S,
        options: Options | None = None,
    ) -> None:
        super().__init__(projects=projects)
        self.tick_s = tick_s
        self.options = options or Options()

    def decide(self, world: World) -> Sequence[Intent]:
        return decide(world, self.options)
