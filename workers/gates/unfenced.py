"""The standing finding that says a project's checks run unfenced.

Checks run the agents' code (tests, a ``conftest.py``, what they import), so the gate
runner runs them in the agent sandbox (:mod:`.fenced`). Where that sandbox cannot be made
here (no bubblewrap, or a kernel that forbids its namespaces), the runner falls back to a
plain subprocess with the daemon's rights: a check could then read the data directory,
the runner's signing key and the credentials. That must stay visible on the log, not only
in a log line, for as long as it holds.

The gate-runner daemon probes the fence once at start (:meth:`GateRunner.fence_problem`)
and reports what it found (:data:`FENCE`); :func:`decide` (pure) raises the finding while
the checks run unfenced and none is open, and resolves the open one once a runner finds
the fence again. Each is published conditionally on its subject, so daemons deciding from
the same view publish it once between them; an operator who resolves it while checks
still run unfenced sees it raised again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from projections.intents import Publishing
from schemas import FindingRaised
from schemas.targets import RecordTarget
from workers.kernel import World, standing

CRITERION = "checks-unfenced"
TARGET = RecordTarget(id="gates:fence")
FENCE = "gates.fence"
"""The observation: a :class:`Fence`, what the runner's probe found."""


@dataclass(frozen=True)
class Fence:
    """Whether checks run fenced here: ``problem`` is ``None`` when they do, else why not
    (one line)."""

    problem: str | None


def decide(world: World) -> Sequence[Publishing]:
    """The standing finding's one move for ``world.project``, if any (needs the
    ``findings`` fold and the :data:`FENCE` observation; nothing before the probe)."""
    fence: Fence | None = world.outside.get(FENCE)
    if fence is None:
        return ()
    return standing.keep(
        world,
        CRITERION,
        holds=fence.problem is not None,
        raised=lambda: raised(world, fence.problem or ""),
        why_resolved="the gate runner runs checks fenced again",
    )


def raised(world: World, problem: str) -> FindingRaised:
    return FindingRaised(
        project=world.project,
        actor=world.actor,
        at=world.now,
        producer="standards",  # as agents-unsandboxed: about the machinery, not a check
        target=TARGET,
        severity="high",
        criterion=CRITERION,
        cls="meta",
        message=(
            "checks run unfenced: the gate runner cannot make the agent sandbox here "
            f"({problem}), so each check runs as a plain subprocess with the daemon's rights "
            "and could read the data directory, the runner's signing key and the "
            "credentials; install bubblewrap (apt-get install bubblewrap) or run the daemon "
            "where its namespaces are allowed"
        ),
        evidence={"fence": problem},
        owner="operator",
    )
