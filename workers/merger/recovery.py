"""Trunk at a commit the log does not have: what the merger wrote and moved trunk to
before it could record it (an advance, a revert, a restore, a landing), recorded now with
the same facts and ids; and the red case a revert of a merge answers.

Part of the merger's pure decision (:mod:`.decide`), split from it along that seam.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from projections.merge_trunk import Advance, Tested
from projections.merges import Adoption
from workers.merger import landing
from workers.merger.effects import MergerIntent, RecordAdvance, RecordOutsideRevert, RecordRevert
from workers.merger.facts import RedCase
from workers.merger.seen import CAUSE, QUEUED, REVERTS, TrunkSeen

if TYPE_CHECKING:
    from workers.merger.decide import Step


def recover(step: Step, seen: TrunkSeen) -> list[MergerIntent]:
    """Trunk is at a commit the log does not have: if the merger wrote it and moved trunk
    there before it could record it, record it now. Nothing: it is not the merger's."""
    if not seen.exists:
        return []
    contract = landing.state_of(step.world)
    landed = landing.recorded_landing(step.world, contract, step.merges, seen)
    if landed is not None:
        return [landed]
    merges, marks = step.merges, seen.trailers
    for entry in merges.queue:
        tested = entry.tested
        if (
            entry.queued == marks.get(QUEUED)
            and tested is not None
            and tested.green
            and tested.candidate == seen.commit
        ):
            adopted = step.merges.adopted
            assert adopted is not None  # trunk() asks for none before an adoption
            return [
                RecordAdvance(
                    project=step.world.project, entry=entry, tested=tested, adopted=adopted
                )
            ]
    checked = merges.trunk.checked
    if checked is None or marks.get(CAUSE) != checked.id or seen.tree is None:
        return []
    reverts, last = marks.get(REVERTS), merges.last_advance
    if last is not None and reverts == last.merge:
        case = revert_case(step, last, checked).reverted(seen.commit)
        return [
            RecordRevert(
                project=step.world.project,
                case=case,
                advance=last,
                tree=seen.tree,
                restore=undone(step, last),
            )
        ]
    if reverts is not None and reverts == merges.trunk.commit:
        return [
            RecordOutsideRevert(
                project=step.world.project,
                pushed=reverts,
                checked=checked,
                commit=seen.commit,
                tree=seen.tree,
                green=merges.trunk.green_commit,
            )
        ]
    return []


def undone(step: Step, advance: Advance) -> Adoption | None:
    """The configuration to adopt again when ``advance`` is reverted: the one in force
    before it, when its merge adopted the unit's edit (``None``: it adopted nothing)."""
    adopted = step.merges.adopted
    if adopted is None or adopted.why != "merge" or adopted.cause != advance.id:
        return None
    return step.merges.before_merge


def revert_case(step: Step, advance: Advance, checked: Tested) -> RedCase:
    """The red of a merge that reached trunk: told about the siblings it branched past."""
    return RedCase(
        who=step.author(advance.unit),
        stage="trunk",
        head=advance.commit,
        commit=advance.merge,
        tree=advance.tree,
        onto=advance.previous,
        failing=tuple(checked.failing),
        checks=tuple(checked.checks),
        cause=checked.id,
    )
