"""The finding an agent run's sandbox breach becomes, for every agent role. Pure.

An executor names the limits it saw a command hit (``timeout``, ``cpu``, ``memory``,
``processes``: :attr:`~workers.agents.sandbox.SandboxResult.breaches`). That is
the executor's observation, never the agent's word, so what the command prints cannot
hide it. Each daemon that runs an agent (builder, reviewer, investigator) publishes one
``sandbox-breach`` finding per run that hit a limit, in the same batch as what the run's
answer becomes, with an id derived from what the run answered: a run repeated after a
crash publishes the same finding, and the log keeps one copy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import msgspec

from projections.intents import Publish, PublishBatch, Publishing
from schemas import Actor, Event, FindingRaised
from schemas.findings import FindingClass, Producer
from schemas.ids import answer_id
from schemas.targets import RecordTarget

CLASS: FindingClass = "sandbox-breach"
CRITERION = "agent-limits"

Role = Literal["builder", "reviewer", "investigator"]
PRODUCERS: dict[Role, Producer] = {
    "builder": "builder",
    "reviewer": "reviewer",
    "investigator": "meta_rule",  # the second-failure rule runs the investigator
}


@dataclass(frozen=True)
class AgentRun:
    """One agent run: who ran (``role``, ``principal``), what it answered (``answers``:
    the round's trigger, the review request, the investigation request), for which unit."""

    project: str
    system: Actor
    role: Role
    answers: str
    principal: str | None = None
    unit: str | None = None
    slice: str | None = None

    def who(self) -> str:
        named = f"{self.role} {self.principal}" if self.principal else self.role
        return f"{named} on unit {self.unit}" if self.unit else f"{named} for {self.answers}"


def breach_finding(
    run: AgentRun,
    breaches: Sequence[str],
    executor: str,
    *,
    attempt: int = 1,
    at: datetime | None = None,
) -> FindingRaised:
    """The finding for one run that hit ``breaches`` (``attempt``: the run's number when
    the daemon runs the same answer more than once, as the builder's retry does)."""
    named = ", ".join(breaches)
    finding = FindingRaised(
        id=answer_id(run.answers, f"{CLASS}-{attempt}"),
        project=run.project,
        actor=run.system,
        producer=PRODUCERS[run.role],
        target=RecordTarget(id=run.answers),
        severity="medium",
        criterion=CRITERION,
        cls=CLASS,
        message=(
            f"{run.who()}: the {executor} sandbox stopped its command at its limit ({named}); "
            "raise [agents] limits in loopbus.toml only if the work needs them"
        ),
        unit=run.unit,
        slice=run.slice or None,
        owner=f"builder:{run.unit}" if run.role == "builder" and run.unit else "operator",
        evidence={
            "breaches": list(breaches),
            "executor": executor,
            "attempt": attempt,
            "role": run.role,
        },
    )
    return finding if at is None else msgspec.structs.replace(finding, at=at)


def with_breach(
    intent: Publishing, run: AgentRun, breaches: Sequence[str], executor: str, at: datetime
) -> Publishing:
    """``intent`` (a publish) with the run's breach finding first in the same batch; as it
    is when the run hit no limit."""
    if not breaches:
        return intent
    finding = breach_finding(run, breaches, executor, at=at)
    events: tuple[Event, ...]
    if isinstance(intent, Publish):
        events = (intent.event,)
    elif isinstance(intent, PublishBatch):
        events = intent.events
    else:
        raise TypeError(f"a breach finding goes with a publish, not {type(intent).__name__}")
    return PublishBatch((finding, *events))
