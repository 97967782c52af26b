"""Gating a unit's commit: its scope first, then its suite with trunk's configuration.

The one place a unit commit is gated (the gate-runner daemon calls it for every commit the
units daemon accepted). The commit's diff is taken against the trunk commit the unit was
dispatched on — the ``base`` of the system's own ``unit.dispatched`` fact, or, for a unit
planned outside a dispatched slice, its merge base with trunk — and checked against the
plan (:mod:`.scope`). A breach is not gated: the ask is answered with an error suite that
ran nothing and one ``scope-breach`` finding listing every breach. Otherwise the commit is
gated as its merge onto trunk's tip (:mod:`.ontrunk`), with trunk's configuration, and must
keep every test trunk runs; a commit that does not merge onto trunk is answered with an
error suite and a ``unit-merge`` finding naming the conflicts.
"""

from __future__ import annotations

import asyncio
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from schemas.targets import RecordTarget
from workers import repository
from workers.errors import CONFIG_FILE, RepoError
from workers.gates import ontrunk
from workers.gates.runner import GateRunner, SuiteResult
from workers.gates.scope import Breach, breaches
from workers.gates.verdicts import Finding

SCOPE_CRITERION = "unit-scope"


@dataclass(frozen=True)
class UnitScope:
    """What the plan gave a unit, and where the system dispatched it."""

    files: tuple[str, ...]
    criteria: tuple[str, ...]
    all_criteria: tuple[str, ...]
    base: str | None


def frozen_globs(config: bytes | None) -> list[str]:
    """``[review] frozen`` of a ``loopbus.toml`` (trunk's: the candidate's list is not read)."""
    if config is None:
        return []
    try:
        review = tomllib.loads(config.decode("utf-8", "replace")).get("review", {})
    except tomllib.TOMLDecodeError:
        return []
    frozen = review.get("frozen", []) if isinstance(review, dict) else []
    return [g for g in frozen if isinstance(g, str)] if isinstance(frozen, list) else []


def read_scope(
    repo: Path, head: str, scope: UnitScope, trunk: str | None
) -> tuple[str, str, list[Breach]]:
    """(head commit, base commit, breaches) for ``head`` against the unit's base."""
    with repository.open_repo(repo) as opened:
        head_commit = repository.commit_at(opened, head)
        base = repository.branch_point(opened, head_commit, scope.base, trunk).decode()
        base_tree = repository.commit_at(opened, base).tree
        trees = {"base": base_tree, "head": head_commit.tree}

        def read(side: str, path: str) -> bytes | None:
            return repository.blob_at(opened, trees[side], path)

        paths = repository.files_changed(repo, base, head_commit.id.decode())
        found = breaches(
            paths,
            files=scope.files,
            own_criteria=scope.criteria,
            all_criteria=scope.all_criteria,
            frozen_globs=frozen_globs(read("base", CONFIG_FILE)),
            read=read,
        )
        return head_commit.id.decode(), base, found


async def gate_unit(
    runner: GateRunner,
    commit: str,
    *,
    unit: str,
    cause: str,
    scope: UnitScope,
    trunk: str | None,
    force: bool = False,
) -> SuiteResult:
    """Check ``commit``'s scope; gate it with its base's configuration when in scope. The
    suite is returned unpublished (its ``batches``), as :meth:`GateRunner.evaluate`'s."""
    try:
        head, base, found = await asyncio.to_thread(read_scope, runner.repo, commit, scope, trunk)
    except RepoError:
        return await runner.evaluate(commit, unit=unit, reason="unit", cause=cause)
    if found:
        return await refuse(runner, head, base, found, unit=unit, cause=cause)
    on = await asyncio.to_thread(ontrunk.merge_onto, runner.repo, head, trunk)
    if on is not None and on.gated is None:
        return await unmerged(runner, on, unit=unit, cause=cause)
    # On trunk's tip, judged by its configuration and held to every test it runs: what the
    # merge candidate will be while trunk stays put (see :mod:`.ontrunk`).
    suite = await runner.evaluate(
        head if on is None else on.gated,
        unit=unit,
        reason="unit",
        cause=cause,
        force=force,
        trunk=base if on is None else on.onto,
        criteria=scope.criteria,
    )
    return suite if on is None else ontrunk.restate(runner.signer, suite, on)


async def unmerged(
    runner: GateRunner, on: ontrunk.OnTrunk, *, unit: str, cause: str
) -> SuiteResult:
    """The ``unit-merge`` finding, the conflict fact and the error suite that answer the ask
    of a unit that does not merge onto trunk."""
    message, evidence = ontrunk.conflict_message(on, unit)
    finding = Finding(
        target=RecordTarget(id=f"commit:{on.head}"),  # resolved by a later head's suite
        severity="high",
        message=message,
        evidence=evidence,
    )
    tree = await asyncio.to_thread(repository.tree_of, runner.repo, on.head)
    suite = await runner.refuse_suite(
        on.head,
        tree,
        f"unit-merge: unit {unit}'s commit does not merge onto trunk {on.onto[:12]}",
        finding,
        unit=unit,
        cause=cause,
        criterion=ontrunk.MERGE_CRITERION,
        cls="merge-conflict",
    )
    return ontrunk.with_conflict_fact(ontrunk.restate(runner.signer, suite, on), on, unit, cause)


async def refuse(
    runner: GateRunner,
    head: str,
    base: str,
    found: Sequence[Breach],
    *,
    unit: str,
    cause: str,
) -> SuiteResult:
    """The scope-breach finding and the error suite that answers the ask."""
    shown = "; ".join(b.line() for b in found[:5]) + ("; …" if len(found) > 5 else "")
    error = f"scope-breach: {len(found)} change(s) outside what the plan gave unit {unit}"
    finding = Finding(
        target=RecordTarget(id=f"commit:{head}"),
        severity="high",
        message=f"unit {unit}'s commit {head[:12]} is not gated: {shown}",
        evidence={
            "breaches": [{"path": b.path, "kind": b.kind, "detail": b.detail} for b in found[:50]],
            "base": base,
            "head": head,
        },
    )
    tree = await asyncio.to_thread(repository.tree_of, runner.repo, head)
    return await runner.refuse_suite(
        head,
        tree,
        error,
        finding,
        unit=unit,
        cause=cause,
        criterion=SCOPE_CRITERION,
        cls="scope-breach",
    )
