"""A standing finding: raised while a condition holds, resolved once it no longer does.

Some facts about a project are states, not events: its agents run unsandboxed
(``agents-unsandboxed``), its checks run unfenced (``checks-unfenced``). Each stays visible
on the log as one open finding for as long as it holds. :func:`keep` is the one move a
daemon makes for it from a view (pure): raise the finding while the condition holds and
none with its criterion is open; resolve the open one (one at a time: the next from the
next view) once it does not. Both are published conditionally on their subject, so
daemons deciding from the same view publish once between them, and an operator who
resolves the finding while the condition still holds sees it raised again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from projections.findings import FindingsState, open_findings
from projections.intents import Publishing
from schemas import FindingRaised, FindingResolved
from workers.kernel.daemon import World


def keep(
    world: World,
    criterion: str,
    *,
    holds: bool,
    raised: Callable[[], FindingRaised],
    why_resolved: str,
) -> Sequence[Publishing]:
    """Raise ``raised()`` while ``holds`` and no ``criterion`` finding is open; resolve the
    open one with ``why_resolved`` once it does not (needs the ``findings`` fold)."""
    state: FindingsState = world.state("findings")
    standing = [f for f in open_findings(state) if f.criterion == criterion]
    if holds:
        return () if standing else [world.publish_if(raised())]
    return [
        world.publish_if(
            FindingResolved(
                project=world.project,
                actor=world.actor,
                at=world.now,
                finding=finding.id,
                why=why_resolved,
            )
        )
        for finding in standing[:1]
    ]
