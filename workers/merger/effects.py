"""The merger's effects: the git work and trunk runs its decision asks its shell for.

Each key names what the effect answers (a trunk commit, a claim, a tested candidate, a
queue request), so an effect asked for again while it runs, or by the next decision on
the same state, runs once. The shell (:mod:`.daemon`) performs them in one ``match``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeAlias

from projections import contract_landing as landing_fold
from projections.intents import Effect, IntentOf
from projections.merge_trunk import Advance, Tested
from projections.merges import AdoptClaim, Adoption, QueueEntry
from schemas.merges import CandidateTested
from workers.merger.facts import RedCase

# -- trunk ------------------------------------------------------------------------------------


class AdoptFirst(Effect, frozen=True, tag="merger.adopt_first.v1"):
    """Adopt the configuration of trunk commit ``ref`` (nothing is adopted yet)."""

    ref: str

    @property
    def key(self) -> str:
        return f"adopt-first:{self.ref}"


class Adopt(Effect, frozen=True, tag="merger.adopt.v1"):
    """Answer an operator's ``config.adopt`` claim (the shell reads the commit's file)."""

    claim: AdoptClaim

    @property
    def key(self) -> str:
        return f"adopt:{self.claim.id}"


class CheckTrunk(Effect, frozen=True, tag="merger.check_trunk.v1"):
    """Run every check on trunk commit ``ref`` with the adopted configuration ``judge``
    (``force``: past the cache) and record the verdict; ``reference``: a trunk the merger did
    not move is also held to that commit's tests."""

    ref: str
    unit: str | None
    head: str | None
    cause: str | None
    judge: Adoption
    reference: str | None = None
    force: bool = False

    @property
    def key(self) -> str:
        forced = ":force" if self.force else ""
        return f"check-trunk:{self.ref}:{self.cause}:{self.judge.digest[:12]}{forced}"


class Revert(Effect, frozen=True, tag="merger.revert.v1"):
    """Undo the merge ``advance`` that turned trunk ``ref`` red, and record it."""

    ref: str
    advance: Advance
    case: RedCase
    green_tree: str | None
    restore: Adoption | None = None

    @property
    def key(self) -> str:
        return f"revert:{self.ref}"


class Restore(Effect, frozen=True, tag="merger.restore.v1"):
    """Trunk ``ref`` was pushed red from outside: a commit on top back to ``green_tree``."""

    ref: str
    checked: Tested
    green_tree: str
    green: str | None

    @property
    def key(self) -> str:
        return f"restore:{self.ref}"


# -- recording what the merger did before it stopped --------------------------------------------


class RecordAdvance(Effect, frozen=True, tag="merger.record_advance.v1"):
    """Record the advance of trunk to ``tested.candidate`` (with the adoption of the unit's
    edit to ``loopbus.toml``, when it made one)."""

    entry: QueueEntry
    tested: Tested
    adopted: Adoption

    @property
    def key(self) -> str:
        return f"record-advance:{self.tested.candidate}"


class RecordRevert(Effect, frozen=True, tag="merger.record_revert.v1"):
    """Record a revert (commit ``case.reverted_by``) the merger made but did not record."""

    case: RedCase
    advance: Advance
    tree: str
    restore: Adoption | None = None

    @property
    def key(self) -> str:
        return f"record-revert:{self.case.reverted_by}"


class RecordOutsideRevert(Effect, frozen=True, tag="merger.record_outside_revert.v1"):
    """Record a restore (``commit``) of an outside push the merger made but did not record."""

    pushed: str
    checked: Tested
    commit: str
    tree: str
    green: str | None

    @property
    def key(self) -> str:
        return f"record-outside-revert:{self.commit}"


# -- the queue ----------------------------------------------------------------------------------


class Stack(Effect, frozen=True, tag="merger.stack.v1"):
    """Stack ``entries`` on trunk commit ``trunk`` (and drop every other candidate), judged
    with the adopted configuration ``judge`` (digest ``config``); each unit's ``criteria``
    go along."""

    entries: tuple[QueueEntry, ...]
    trunk: str
    criteria: Mapping[str, tuple[str, ...]]
    judge: str
    config: str

    @property
    def key(self) -> str:
        return ",".join([self.trunk, *(e.queued for e in self.entries), self.config])


class Land(Effect, frozen=True, tag="merger.land.v1"):
    """Move trunk from ``trunk`` to the candidate tested green on it; record the advance."""

    entry: QueueEntry
    tested: Tested
    trunk: str
    adopted: Adoption

    @property
    def key(self) -> str:
        return f"land:{self.tested.candidate}"


class RecordRed(Effect, frozen=True, tag="merger.record_red.v1"):
    """Record the queue head's red candidate, with the finding about its siblings."""

    tested: CandidateTested
    case: RedCase

    @property
    def key(self) -> str:
        return f"record-red:{self.tested.id}"


# -- contracts and configuration proposals --------------------------------------------------------


class LandContract(Effect, frozen=True, tag="merger.land_contract.v1"):
    """Write an accepted slice's contract onto trunk ``trunk`` and record it."""

    pending: landing_fold.Pending
    trunk: str
    adopted: Adoption

    @property
    def key(self) -> str:
        return f"land-contract:{self.pending.accepted}"


class LandProposal(Effect, frozen=True, tag="merger.land_proposal.v1"):
    """Write an approved configuration proposal onto trunk ``trunk`` and record it."""

    approval: landing_fold.Approval
    proposal: landing_fold.Proposal
    trunk: str
    adopted: Adoption

    @property
    def key(self) -> str:
        return f"land-proposal:{self.approval.id}"


class RecordContract(Effect, frozen=True, tag="merger.record_contract.v1"):
    """Record a contract landing (``commit``) the merger wrote but did not record."""

    pending: landing_fold.Pending
    commit: str
    previous: str

    @property
    def key(self) -> str:
        return f"record-contract:{self.commit}"


class RecordProposal(Effect, frozen=True, tag="merger.record_proposal.v1"):
    """Record a proposal landing (``commit``) the merger wrote but did not record."""

    approval: landing_fold.Approval
    commit: str
    previous: str

    @property
    def key(self) -> str:
        return f"record-proposal:{self.commit}"


MergerEffect = (
    AdoptFirst
    | Adopt
    | CheckTrunk
    | Revert
    | Restore
    | RecordAdvance
    | RecordRevert
    | RecordOutsideRevert
    | Stack
    | Land
    | RecordRed
    | LandContract
    | LandProposal
    | RecordContract
    | RecordProposal
)
"""Every effect the merger asks for."""

MergerIntent: TypeAlias = IntentOf[MergerEffect]
"""What the merger may ask for (``decide``, ``perform``): publishing, and its own effects."""
