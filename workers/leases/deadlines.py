"""How long a replica may hold a work item: the work's own time limits plus a margin.

Every limit here is one the work already enforces (an agent's ``timeout``, a check's
``timeout``); the lease's deadline only catches a holder that is alive but no longer
bound by them (stuck outside the command: a wait, a lock, a hung call). So a deadline
never cuts short work its own limits still allow.
"""

from __future__ import annotations

from collections.abc import Iterable

MARGIN_S = 60.0
"""Beyond the work's own limits: a worktree, a fetch, a commit, publishing the answer."""
MAX_S = 86400.0
"""The longest deadline a lease fact holds (``schemas.leases.Seconds``)."""


def within(*limits_s: float) -> float:
    """The deadline of work made of steps bounded by ``limits_s`` one after another."""
    return min(sum(limits_s) + MARGIN_S, MAX_S)


def per_project(limits: Iterable[tuple[str, float]]) -> dict[str, float]:
    """Project -> deadline, from (project, the sum of its work's limits) pairs."""
    return {project: within(limit) for project, limit in limits}
