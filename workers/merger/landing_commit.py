"""The merger's landing of a contract or an approved proposal: the git work (one system
commit on trunk, trunk moved by compare-and-swap) and the facts that record it, the new
``loopbus.toml`` adopted in the same batch. What to land is decided in :mod:`.landing`;
a contract that would edit or loosen the configuration is refused here, with
:func:`.landing.refusal`, once trunk's files are read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import structlog
from dulwich.object_store import commit_tree_changes
from dulwich.objects import Blob, ObjectID

from projections.contract_landing import (
    Approval,
    Pending,
    Proposal,
)
from projections.contract_plan import node_parts, repository_problems, text_problems
from projections.intents import Publish, PublishBatch, Publishing
from projections.merges import Adoption
from schemas import Actor, Event
from schemas.contract import (
    CONTRACT_TRAILER,
    PROPOSAL_TRAILER,
    ConfigLanded,
    ContractLanded,
)
from schemas.ids import answer_id
from schemas.slices import SlicePlan
from workers import repository
from workers.errors import CONFIG_FILE, ConfigError
from workers.gates.config import parse_config
from workers.gates.contract import contract_files, contract_refusals, proposal_refusals
from workers.merger import gitops
from workers.merger.adoption import Adoptable
from workers.merger.landing import refusal
from workers.merger.seen import CAUSE

log = structlog.get_logger()

Move = Callable[[str, str], Awaitable[bool]]
"""The shell's compare-and-swap of the trunk ref (old, new) -> moved."""


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
    if pending.gate is not None:
        return (
            f"Install gate {pending.gate}\n\n"
            "A gate the project operator approved through the ratchet, added as a check.\n\n"
            f"{CONTRACT_TRAILER}: {pending.slice}\n"
            f"{CAUSE}: {pending.accepted}\n"
        )
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


def adoptable(written: Written) -> Adoptable:
    """The configuration a landing commit wrote, as the merger adopts it."""
    return Adoptable(
        commit=written.commit,
        blob=Blob.from_string(written.text.encode("utf-8")).id.decode(),
        text=written.text,
    )


def contract_facts(
    world_project: str,
    actor: Actor,
    pending: Pending,
    written: Written,
    previous: str,
) -> tuple[Event, ...]:
    adopted = adoptable(written).fact(
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
    adopted = adoptable(written).fact(
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
) -> Sequence[Publishing]:
    """Write the contract commit on ``trunk``, move trunk to it, record and adopt it; or
    refuse the contract with a finding naming why."""
    files, refused = await asyncio.to_thread(prepare_contract, path, trunk, pending, adopted)
    if refused and pending.gate is not None:
        log.warning("merger.gate_install_refused", gate=pending.gate, why=refused[0])
        message = f"approved gate {pending.gate} was not installed: " + "; ".join(refused[:5])
        gate_refused = refusal(
            project,
            actor,
            pending.accepted,
            "gate-install-refused",
            message + ". A check of that id exists already: an edit goes through the ratchet",
            accepted=pending.accepted,
            evidence={"refused": refused[:20], "gate": pending.gate},
        )
        return [Publish(gate_refused)]
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
) -> Sequence[Publishing]:
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
) -> Sequence[Publishing]:
    written = await asyncio.to_thread(_written, path, commit)
    return [PublishBatch(contract_facts(project, actor, pending, written, previous))]


async def record_proposal(
    project: str, actor: Actor, path: Path, approval: Approval, commit: str, previous: str
) -> Sequence[Publishing]:
    written = await asyncio.to_thread(_written, path, commit)
    return [PublishBatch(proposal_facts(project, actor, approval, written, previous))]
