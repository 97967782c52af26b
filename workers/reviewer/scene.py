"""What the reviewer decides from: one project's world, its config, and the unit diffs the
shell has read (an observation, since a diff is not on the log). Pure: no I/O."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from projections import convergence as conv
from projections import reviews as rv
from projections.charter import RunView
from projections.findings import FindingsState
from projections.gates import GatesState
from projections.units import UnitsState
from schemas import Actor
from workers.agents.config import RepoConfig
from workers.kernel import World
from workers.reviewer.diff import Diff
from workers.reviewer.effects import ReadChange

CHANGES = "changes"
"""The observation the shell reports diffs under: ``{(project, head, hint): Change | str}``
(a string says why the diff could not be read)."""


@dataclass(frozen=True, slots=True)
class Change:
    """A unit head's diff against its base, who touched its commits, and the config file
    on both sides (what the halt guards read)."""

    head: str
    base: str
    diff: Diff
    identities: frozenset[tuple[str, str]]
    config_before: bytes | None
    config_after: bytes | None
    tree: str = ""
    """The git tree of ``head`` (what convergence compares rounds on)."""


@dataclass(frozen=True)
class Scene:
    """What one decision reads: the world of one project and the project's config."""

    world: World
    config: RepoConfig

    @property
    def project(self) -> str:
        return self.world.project

    @property
    def actor(self) -> Actor:
        return self.world.actor

    @property
    def now(self) -> datetime:
        return self.world.now

    @property
    def units(self) -> UnitsState:
        state: UnitsState = self.world.state("units")
        return state

    @property
    def reviews(self) -> rv.ReviewsState:
        state: rv.ReviewsState = self.world.state("reviews")
        return state

    @property
    def gates(self) -> GatesState:
        state: GatesState = self.world.state("gates")
        return state

    @property
    def convergence(self) -> conv.ConvergenceState:
        state: conv.ConvergenceState = self.world.state("convergence")
        return state

    @property
    def findings(self) -> FindingsState:
        state: FindingsState = self.world.state("findings")
        return state

    def charter_tests(self, slice_id: str) -> list[str]:
        """The charter's test criteria, frozen for a unit of ``slice_id`` unless that slice
        is a skeleton (whose tests the operator reviews before anything is built): the
        gate runner's rule (``workers/gate_runner/decide.scope_of``), read here so the
        reviewer halts such an edit before a review is spent on it."""
        run: RunView = self.world.state("charter")
        if run.charter is None or slice_id in run.skeletons:
            return []
        return [c.test for c in run.charter.criteria if c.test]

    def change(self, head: str, hint: str | None) -> Change | str | ReadChange | None:
        """The diff of ``head`` (``hint``: the base it was dispatched against or reviewed
        on): a :class:`Change`, why it cannot be read, the effect that reads it, or
        ``None`` when reading it crashed in this process (the step is given up)."""
        changes: Mapping[tuple[str, str, str], Change | str] = self.world.outside.get(CHANGES, {})
        found = changes.get((self.project, head, hint or ""))
        if found is not None:
            return found
        effect = read_change(self.project, head, hint)
        return None if effect.key in self.world.failed else effect


def read_change(project: str, head: str, hint: str | None) -> ReadChange:
    """Ask the shell to read the diff of ``head`` (``hint``: its base as the log knows it)."""
    return ReadChange(project=project, head=head, hint=hint)
