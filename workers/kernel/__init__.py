"""The daemon kernel: the one loop every loopbus daemon runs.

A daemon is a :class:`Daemon`: the folds it keeps, the subjects it follows, a **pure**
``decide(world) -> intents`` and, for work that is not publishing, a thin shell
(``perform``). The :class:`Kernel` follows the subjects, folds, decides once caught up,
carries the intents out, and waits until it has folded its own events before deciding
again for that project. Crash policy, in one place:

* a message that does not decode is logged with its sequence and skipped (the projector
  quarantines it); the daemon never dies on it;
* a fold that raises on an event skips that event for that fold alone (the state keeps
  what the fold did before raising; ``replay`` does the same, so a view equals a replay),
  logs it, and records it once on the log as ``fold.quarantined.v1``; the daemon carries on;
* a decision that raises is logged and retried when the project next changes;
* an effect that raises is logged and not run again by this process under the same key;
* a publish that fails is retried with back-off; one that loses a race is decided again
  once the winner is folded.

See docs/extending.md for a complete daemon in a few dozen lines.
"""

from projections.intents import (
    Effect,
    Intent,
    IntentOf,
    MoveUnit,
    Publish,
    PublishBatch,
    PublishIf,
    Publishing,
)
from workers.kernel.daemon import Daemon, World
from workers.kernel.kernel import Kernel

__all__ = [
    "Daemon",
    "Effect",
    "Intent",
    "IntentOf",
    "Kernel",
    "MoveUnit",
    "Publish",
    "PublishBatch",
    "PublishIf",
    "Publishing",
    "World",
]
