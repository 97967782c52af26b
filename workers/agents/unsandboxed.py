"""The standing finding that says a project's agents run unsandboxed.

``[agents] sandbox = "none"`` is the operator's explicit choice, and it must stay visible
on the log for as long as it holds, not only in ``loopbus up``'s banner. Every daemon that
runs agents decides it (:func:`decide`, pure): while the configuration says ``none`` and
no such finding is open, raise one; when it says ``on`` again, resolve the open one. Each
is published conditionally on its subject, so the daemons deciding from the same view
publish it once between them; an operator who resolves it while the configuration still
says ``none`` sees it raised again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from projections.intents import Publishing
from schemas import FindingRaised
from schemas.targets import RecordTarget
from workers.agents.config import RepoConfig
from workers.kernel import Kernel, World, standing

CRITERION = "agents-unsandboxed"
TARGET = RecordTarget(id="loopbus.toml:agents.sandbox")


def decide(world: World, config: RepoConfig) -> Sequence[Publishing]:
    """The standing finding's one move for ``world.project``, if any (needs the
    ``findings`` fold)."""
    return standing.keep(
        world,
        CRITERION,
        holds=config.agents.unsandboxed,
        raised=lambda: raised(world),
        why_resolved='loopbus.toml no longer says [agents] sandbox = "none"',
    )


def wake(kernel: Kernel[Any], configs: Mapping[str, RepoConfig]) -> None:
    """At start, decide for every project whose agents run unsandboxed, even one whose
    log is still empty (the kernel otherwise decides for a project once it has events)."""
    for project, config in configs.items():
        if config.agents.unsandboxed:
            kernel.observe("agents.sandbox", "none", project=project)


def raised(world: World) -> FindingRaised:
    return FindingRaised(
        project=world.project,
        actor=world.actor,
        at=world.now,
        producer="standards",
        target=TARGET,
        severity="high",
        criterion=CRITERION,
        cls="meta",
        message=(
            'agents run unsandboxed: loopbus.toml says [agents] sandbox = "none", so every '
            "agent command runs as the daemon's user with whatever it can read (credentials, "
            'signing keys, other units\' worktrees); remove the line (sandbox = "on")'
        ),
        evidence={"sandbox": "none"},
        owner="operator",
    )
