"""A commit's gates run in a test as ``loopbus gate run`` runs them: the gate library
evaluates the suite and publishes nothing; the kernel's one-shot carries the intents out.

``suite = await run_commit(runner, sha, reason="trunk")`` (or ``record(runner, suite)`` for
a suite evaluated otherwise, such as a unit's gate). Each fresh check's ``seq`` is set.
"""

from __future__ import annotations

from typing import Any

from workers.gates.runner import GateRunner, SuiteResult
from workers.kernel.oneshot import carry_out


async def record(runner: GateRunner, suite: SuiteResult) -> SuiteResult:
    """Put what ``suite`` records on the log, in order, as a command does."""
    return suite.stored(await carry_out(runner.bus, suite.intents))


async def run_commit(runner: GateRunner, commit: str | None = None, **how: Any) -> SuiteResult:
    """``runner.evaluate(commit, **how)``, recorded."""
    return await record(runner, await runner.evaluate(commit, **how))
