"""Landing a slice's contract, or an operator's approved configuration proposal, on trunk.

The merger is trunk's only writer, so both land through it, as one system commit on top
of a trunk gated green under the adopted configuration (and, for a contract, only once
trunk has been green at all):

* a **contract** (:mod:`loopbus.schemas.contract`): each criterion's test written into its
  file, its node id added to a ``pending`` list (one entry per line), each check added;
  trailer ``Loopbus-Contract: <slice>``;
* an approved **proposal**: the proposed ``loopbus.toml``; trailer ``Loopbus-Proposal``.

Each is judged by the ratchet's rules first (:mod:`.contract`): adding is free, anything
that edits or loosens is refused with a finding naming why. Landed, the new file is
ADOPTED in the same atomic batch as the fact that records the landing
(``contract.landed.v1`` / ``config.landed.v1``), so trunk is judged by it and the commit
is never taken for tampering.

The decision side (:func:`claim_answer`, :func:`next_landing`, :func:`recorded_landing`)
is pure; the shell side (:func:`land_contract`, :func:`land_proposal`) does the git work.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec
import structlog
from dulwich.object_store import commit_tree_changes
from dulwich.objects import Blob, ObjectID
from loopbus.projections import contract_landing as fold
from loopbus.projections.contract_landing import (
    CONTRACT_EVIDENCE,
    PROPOSAL_EVIDENCE,
    Approval,
    ContractState,
    Pending,
    Proposal,
)
from loopbus.projections.contract_plan import node_parts, repository_problems, text_problems
from loopbus.projections.intents import Effect, Intent, Publish, PublishBatch
from loopbus.projections.merges import Adoption, MergesState
from loopbus.schemas import Actor, Event, FindingRaised
from loopbus.schemas.contract import (
    CONTRACT_TRAILER,
    PROPOSAL_TRAILER,
    ConfigLanded,
    ContractLanded,
)
from loopbus.schemas.ids import answer_id
from loopbus.schemas.slices import SlicePlan
from loopbus.schemas.targets import PlanTarget, RecordTarget
from loopbus.workers import repository
from loopbus.workers.errors import CONFIG_FILE, ConfigError
from loopbus.workers.gates.config import parse_config
from loopbus.workers.gates.contract import contract_files, contract_refusals, proposal_refusals
from loopbus.workers.kernel import World
from loopbus.workers.merger import gitops
from loopbus.workers.merger.adoption import Adoptable
from loopbus.workers.merger.seen import CAUSE, TrunkSeen

log = structlog.get_logger()

CONFIG_ROLES = frozenset({"operator"})
"""Who may propose or approve a configuration change: an operator, never an agent."""

Move = Callable[[str, str], Awaitable[bool]]
"""The shell's compare-and-swap of the trunk ref (old, new) -> moved."""


# -- the decision (pure) ----------------------------------------------------------------


def state_of(world: World) -> ContractState:
    """The folded contracts and proposals (empty for a world built without that fold)."""
    found: ContractState | None = world.states.get(fold.FOLD.name)
    return found if found is not None else fold.initial()


def adoption_pending(state: ContractState, merges: MergesState) -> bool:
    """Trunk was moved by a landing whose adoption is not folded yet (they are one batch,
    but folded one at a time): gating it now would judge it by the old configuration."""
    moved_by = merges.trunk.moved_by
    wanted = state.landings.get(moved_by) if moved_by is not None else None
    adopted = merges.adopted
    return wanted is not None and (adopted is None or adopted.digest != wanted)


def claim_answer(world: World, state: ContractState) -> Intent | None:
    """Refuse, at once, a proposal or approval that no repository could make good: one
    from a role other than operator, an approval of an unknown, refused or landed
    proposal."""
    for proposal in fold.unanswered_proposals(state):
        if proposal.role not in CONFIG_ROLES:
            return Publish(
                refusal(
                    world.project,
                    world.actor,
                    proposal.id,
                    "proposer-role",
                    f"only an operator proposes a configuration change, not role "
                    f"{proposal.role!r} ({proposal.principal}); an agent changes the contract "
                    "only through a plan's [contract]",
                    at=world.now,
                )
            )
    for approval in fold.unanswered_approvals(state):
        problem = approval_problem(state, approval)
        if problem is not None:
            return Publish(refusal(world.project, world.actor, approval.id, *problem, at=world.now))
    return None


def approval_problem(state: ContractState, approval: Approval) -> tuple[str, str] | None:
    if approval.role not in CONFIG_ROLES:
        return (
            "approver-role",
            f"only an operator approves a configuration change, not role {approval.role!r} "
            f"({approval.principal})",
        )
    proposal = state.proposals.get(approval.proposal)
    if proposal is None:
        return (
            "unknown-proposal",
            f"no configuration proposal {approval.proposal!r} is on the log; "
            "loopbus tail --kind config.proposal lists them",
        )
    if proposal.refused is not None or proposal.role not in CONFIG_ROLES:
        return (
            "proposal-refused",
            f"proposal {proposal.id} was refused ({proposal.refused or 'not an operator'})",
        )
    if proposal.landed is not None:
        return ("already-landed", f"proposal {proposal.id} landed already as {proposal.landed}")
    return None


def next_landing(
    world: World, state: ContractState, merges: MergesState, trunk: str
) -> Effect | None:
    """On a trunk gated green now, what to land next: the oldest approved proposal, else
    the oldest contract. A contract needs a trunk that has been green at least once (it
    is: this is asked only on a green trunk)."""
    adopted = merges.adopted
    if adopted is None:
        return None
    for approval in fold.unanswered_approvals(state):
        proposal = state.proposals.get(approval.proposal)
        if proposal is None or approval_problem(state, approval) is not None:
            continue  # refused first, by claim_answer
        args = {"approval": approval, "proposal": proposal, "trunk": trunk, "adopted": adopted}
        return Effect(f"land-proposal:{approval.id}", world.project, "land-proposal", args)
    pending = fold.to_land(state)
    if pending is None:
        return None
    args = {"pending": pending, "trunk": trunk, "adopted": adopted}
    return Effect(f"land-contract:{pending.accepted}", world.project, "land-contract", args)


def recorded_landing(
    world: World, state: ContractState, merges: MergesState, seen: TrunkSeen
) -> Effect | None:
    """Trunk sits on a landing commit the merger wrote but did not record (it stopped in
    between): record it now (same facts, same ids)."""
    marks, adopted = seen.trailers, merges.adopted
    if adopted is None or merges.trunk.commit is None:
        return None
    slice_id, cause = marks.get(CONTRACT_TRAILER), marks.get(CAUSE)
    if slice_id is not None:
        pending = state.slices.get(slice_id)
        if pending is not None and pending.landed is None and pending.accepted == cause:
            args = {"pending": pending, "commit": seen.commit, "previous": merges.trunk.commit}
            return Effect(f"record-contract:{seen.commit}", world.project, "record-contract", args)
    proposal_id = marks.get(PROPOSAL_TRAILER)
    if proposal_id is not None:
        for approval in fold.unanswered_approvals(state):
            if approval.id == cause and approval.proposal == proposal_id:
                args = {
                    "approval": approval,
                    "commit": seen.commit,
                    "previous": merges.trunk.commit,
                }
                return Effect(
                    f"record-proposal:{seen.commit}", world.project, "record-proposal", args
                )
    return None


def refusal(
    project: str,
    actor: Actor,
    claim: str,
    code: str,
    message: str,
    *,
    slice_id: str | None = None,
    accepted: str | None = None,
    evidence: dict[str, Any] | None = None,
    at: datetime | None = None,
) -> FindingRaised:
    """A refused contract (``accepted`` given: owner planner) or configuration claim."""
    facts: dict[str, Any] = dict(evidence or {})
    if accepted is not None:
        facts[CONTRACT_EVIDENCE] = accepted
    else:
        facts[PROPOSAL_EVIDENCE] = claim
    finding = FindingRaised(
        id=answer_id(claim, "config-refused"),
        project=project,
        actor=actor,
        producer="trunk_gate",
        target=PlanTarget(slice=slice_id) if slice_id else RecordTarget(id=claim),
        severity="high" if code.endswith("-role") else "medium",
        criterion=code,
        cls="refused-transition",
        message=(
            f"contract of slice {slice_id} refused: {message}"
            if slice_id
            else f"configuration change refused: {message}"
        ),
        evidence=facts,
        slice=slice_id,
        owner="planner" if slice_id else "operator",
    )
    return finding if at is None else msgspec.structs.replace(finding, at=at)


# -- the shell (git) ------------------------------------------------------------------------


@dataclass(frozen=True)
class Written:
    commit: str
    tree: str
    text: str


def _read_trunk(path: Path, trunk: str) -> tuple[str | None, Callable[[str], str | None]]:
    """Trunk's ``loopbus.toml`` and a reader of its other files (blocking)."""
    read = _Cached(path, trunk, {})
    return read(CONFIG_FILE), read


class _Cached:
    """Reads files of one commit, opening the repository per read (it is closed between)."""

    def __init__(self, path: Path, commit: str, cache: dict[str, str | None]):
        self.path, self.commit, self.cache = path, commit, cache

    def __call__(self, name: str) -> str | None:
        if name not in self.cache:
            with repository.open_repo(self.path) as repo:
                tree = repository.commit_at(repo, self.commit).tree
                data = repository.blob_at(repo, tree, name)
            self.cache[name] = None if data is None else data.decode("utf-8", "replace")
        return self.cache[name]


def write_commit(path: Path, parent: str, files: dict[str, str], message: str) -> tuple[str, str]:
    """A commit on top of ``parent`` with ``files`` written (blocking); (commit, tree)."""
    with repository.open_repo(path) as repo:
        base = repository.commit_at(repo, parent)
        changes: list[tuple[bytes, int | None, ObjectID | None]] = []
        for name, text in sorted(files.items()):
            blob = Blob.from_string(text.encode("utf-8"))
            repo.object_store.add_object(blob)
            changes.append((name.encode(), 0o100644, blob.id))
        tree = commit_tree_changes(repo.object_store, base.tree, changes)
        commit = gitops._write_commit(repo, tree, [base.id], message)
        return commit, tree.decode()


def _plan_of(pending: Pending) -> SlicePlan:
    return SlicePlan(slice=pending.slice, contract=pending.changes)


def prepare_contract(
    path: Path, trunk: str, pending: Pending, adopted: Adoption
) -> tuple[dict[str, str], list[str]]:
    """(files to write, refusals) for ``pending`` on ``trunk`` (blocking)."""
    config, read = _read_trunk(path, trunk)
    base = config if config is not None else adopted.text
    try:
        checks = [spec.id for spec in parse_config(adopted.text).checks]
    except ConfigError:
        checks = []
    problems = repository_problems(_plan_of(pending), checks, read)
    # Defence in depth: plan validation already refuses a criterion text holding more than
    # its one function, but whatever reached the log is checked again before it is written.
    for index, criterion in enumerate(pending.changes.criteria):
        parts = node_parts(criterion.test)
        if parts is not None:
            problems += text_problems(f"contract.criteria[{index}]", criterion.text, parts[1])
    if problems:
        return {}, problems
    try:
        written = contract_files(base, pending.changes, read)
    except ConfigError as exc:
        return {}, [" ".join(str(exc).split())]
    refused = contract_refusals(adopted.text, written.files[CONFIG_FILE])
    return written.files, refused


def contract_message(pending: Pending) -> str:
    return (
        f"Contract of slice {pending.slice}\n\n"
        f"Criteria and checks the slice's units are judged by, landed before any starts.\n\n"
        f"{CONTRACT_TRAILER}: {pending.slice}\n"
        f"{CAUSE}: {pending.accepted}\n"
    )


def proposal_message(approval: Approval, proposal: Proposal) -> str:
    return (
        f"Configuration proposal {proposal.id}\n\n"
        f"Proposed by {proposal.principal}: {proposal.why[:500]}\n"
        f"Approved by {approval.principal}: {approval.why[:500]}\n\n"
        f"{PROPOSAL_TRAILER}: {proposal.id}\n"
        f"{CAUSE}: {approval.id}\n"
    )


def contract_facts(
    world_project: str,
    actor: Actor,
    pending: Pending,
    written: Written,
    previous: str,
) -> tuple[Event, ...]:
    found = Adoptable(
        commit=written.commit,
        blob=Blob.from_string(written.text.encode("utf-8")).id.decode(),
        text=written.text,
    )
    adopted = found.fact(
        world_project,
        actor,
        why="contract",
        by=actor.principal,
        id=answer_id(pending.accepted, "contract-adopted"),
        cause=pending.accepted,
        note=f"slice {pending.slice}'s contract, landed as {written.commit[:12]}",
    )
    landed = ContractLanded(
        id=answer_id(pending.accepted, "contract-landed"),
        project=world_project,
        actor=actor,
        slice=pending.slice,
        commit=written.commit,
        tree=written.tree,
        previous=previous,
        accepted=pending.accepted,
        config=adopted.digest,
        criteria=[c.test for c in pending.changes.criteria],
        checks=[c.id for c in pending.changes.checks],
    )
    return landed, adopted


def proposal_facts(
    project: str, actor: Actor, approval: Approval, written: Written, previous: str
) -> tuple[Event, ...]:
    found = Adoptable(
        commit=written.commit,
        blob=Blob.from_string(written.text.encode("utf-8")).id.decode(),
        text=written.text,
    )
    adopted = found.fact(
        project,
        actor,
        why="proposal",
        by=approval.principal,
        id=answer_id(approval.id, "proposal-adopted"),
        cause=approval.id,
        note=approval.why,
    )
    landed = ConfigLanded(
        id=answer_id(approval.id, "proposal-landed"),
        project=project,
        actor=actor,
        proposal=approval.proposal,
        approval=approval.id,
        commit=written.commit,
        tree=written.tree,
        previous=previous,
        config=adopted.digest,
    )
    return landed, adopted


async def land_contract(
    project: str,
    actor: Actor,
    path: Path,
    move: Move,
    pending: Pending,
    trunk: str,
    adopted: Adoption,
) -> Sequence[Intent]:
    """Write the contract commit on ``trunk``, move trunk to it, record and adopt it; or
    refuse the contract with a finding naming why."""
    files, refused = await asyncio.to_thread(prepare_contract, path, trunk, pending, adopted)
    if refused:
        log.warning("merger.contract_refused", slice=pending.slice, why=refused[0])
        finding = refusal(
            project,
            actor,
            pending.accepted,
            "contract-edits-config"
            if any("edited" in r or "removed" in r for r in refused)
            else "contract-invalid",
            "; ".join(refused[:5])
            + ". A contract only adds (criteria, checks, capabilities); editing or "
            "loosening goes through the ratchet with its measurement (loopbus gate move)"
            f". The dispatcher discards slice {pending.slice}'s plan and the planner is "
            "asked again with these reasons (one refused try)",
            slice_id=pending.slice,
            accepted=pending.accepted,
            evidence={"refused": refused[:20]},
        )
        return [Publish(finding)]
    commit, tree = await asyncio.to_thread(
        write_commit, path, trunk, files, contract_message(pending)
    )
    if not await move(trunk, commit):
        log.warning("merger.trunk_moved_under_contract", expected=trunk)
        return ()
    log.info("merger.contract_landed", slice=pending.slice, commit=commit)
    written = Written(commit, tree, files[CONFIG_FILE])
    return [PublishBatch(contract_facts(project, actor, pending, written, trunk))]


async def land_proposal(
    project: str,
    actor: Actor,
    path: Path,
    move: Move,
    approval: Approval,
    proposal: Proposal,
    trunk: str,
    adopted: Adoption,
) -> Sequence[Intent]:
    """Write the proposed ``loopbus.toml`` on ``trunk``, move trunk, record and adopt it;
    or refuse the approval with a finding naming why."""
    refused = proposal_refusals(adopted.text, proposal.text)
    if refused:
        message = "; ".join(refused[:5]) + (
            ". A proposal may change [build], [review] and [plan] and add checks; editing "
            "or loosening a check goes through the ratchet (loopbus gate move)"
        )
        finding = refusal(
            project,
            actor,
            approval.id,
            "proposal-edits-config",
            message,
            evidence={"refused": refused[:20]},
        )
        return [Publish(finding)]
    commit, tree = await asyncio.to_thread(
        write_commit,
        path,
        trunk,
        {CONFIG_FILE: proposal.text},
        proposal_message(approval, proposal),
    )
    if not await move(trunk, commit):
        log.warning("merger.trunk_moved_under_proposal", expected=trunk)
        return ()
    log.info("merger.proposal_landed", proposal=proposal.id, commit=commit)
    written = Written(commit, tree, proposal.text)
    return [PublishBatch(proposal_facts(project, actor, approval, written, trunk))]


def _written(path: Path, commit: str) -> Written:
    info = repository.resolve(path, commit)
    text = info.config_text or ""
    return Written(commit, repository.tree_of(path, commit), text)


async def record_contract(
    project: str, actor: Actor, path: Path, pending: Pending, commit: str, previous: str
) -> Sequence[Intent]:
    written = await asyncio.to_thread(_written, path, commit)
    return [PublishBatch(contract_facts(project, actor, pending, written, previous))]


async def record_proposal(
    project: str, actor: Actor, path: Path, approval: Approval, commit: str, previous: str
) -> Sequence[Intent]:
    written = await asyncio.to_thread(_written, path, commit)
    return [PublishBatch(proposal_facts(project, actor, approval, written, previous))]
