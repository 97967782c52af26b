"""A unit's commit gated as its merge onto the trunk of the moment.

A unit's suite on its own commit and its merge candidate's suite (trunk + the unit) are two
runs whenever trunk moved since the unit's base: the trees differ. Gating the unit's commit
as the merge the merger would make of it onto trunk *now* makes the two the same tree while
trunk stays put, so the candidate's suite is answered from the cache (same tree, same check
definition) and a unit costs one run. When trunk moves in between, the candidate's tree is
new and it runs: nothing here is trusted across trunks.

Why that holds against a hostile unit: a result is keyed by ``(check, inputs, config_sha)``
with ``inputs`` read from the tree the check actually ran on (here, the merge's), so a
result on ``T1 + U`` answers for ``T2 + U`` only when the files the check reads are the same
bytes. The suite names the trunk it was merged onto (``onto``, signed); the merger never
reads it to skip its own run, it looks its candidate up by the candidate's own tree.

The merge is the merger's own (:func:`workers.merger.gitops.merge`: the same driver, every
path routed to it), written as objects only: no ref moves, no working tree is touched. When
trunk is already in the unit's history the merge would be the unit's own tree, so the
unit's commit itself is gated (its results name the commit the builder made). A unit that
does not merge onto trunk is not gated: the ask is answered with an error suite, a
``unit-merge`` finding naming the conflicts, and the ``merge.conflicted`` fact the builder's
conflict round starts from (:mod:`workers.builder.conflict`).

Blocking functions (dulwich) are called in a worker thread by :mod:`.unitgate`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from schemas import FindingRaised
from schemas.gates import GateSuiteCompleted
from schemas.ids import answer_id
from schemas.merges import MergeConflicted
from workers import repository
from workers.errors import RepoError
from workers.gates.results import SuiteResult
from workers.gates.signing import Signer
from workers.merger.gitops import ConflictFile, merge

MERGE_CRITERION = "unit-merge"
"""The criterion of the finding a unit that does not merge onto trunk raises."""

MAX_FILES = 20
"""Conflicting files listed in a ``unit-merge`` finding's evidence."""


@dataclass(frozen=True)
class OnTrunk:
    """``head`` as it would merge onto trunk commit ``onto``: the commit to gate (``head``
    itself when trunk is already in its history, else a merge commit no ref points at),
    or the conflicts."""

    head: str
    onto: str
    gated: str | None = None
    merge_base: str | None = None
    conflicts: list[ConflictFile] = field(default_factory=list)


def merge_onto(repo: Path, head: str, trunk: str | None) -> OnTrunk | None:
    """``head`` merged onto the current ``trunk`` (``None``: no trunk to merge onto, gate
    the head alone). Raises RepoError for a head that does not exist."""
    with repository.open_repo(repo) as opened:
        unit = repository.commit_at(opened, head)
        try:
            tip = repository.trunk_commit(opened, trunk)
        except RepoError:
            return None
        if repository.is_ancestor(opened, tip.id, unit.id):
            return OnTrunk(head=unit.id.decode(), onto=tip.id.decode(), gated=unit.id.decode())
    sha, onto = unit.id.decode(), tip.id.decode()
    message = (
        f"Gate {sha[:12]} as its merge onto trunk {onto[:12]}\n\n"
        "Written by the gate runner to test a unit; no ref points at it.\n"
    )
    attempt = merge(repo, onto, sha, message)
    if not attempt.clean:
        return OnTrunk(head=sha, onto=onto, merge_base=attempt.base, conflicts=attempt.conflicts)
    return OnTrunk(head=sha, onto=onto, gated=attempt.commit, merge_base=attempt.base)


def restate(signer: Signer, suite: SuiteResult, on: OnTrunk) -> SuiteResult:
    """``suite`` (run on ``on.gated``) as the answer about the unit's head: its fact names
    the head as ``commit``, the tested tree as ``tree`` and the trunk as ``onto``, signed
    again; the findings raised beside it name the head too (a unit's readiness and its
    builder's brief read them by the head)."""
    fact = suite.suite
    if fact is None:
        return suite
    tested = fact.commit
    restated = signer.sign(msgspec.structs.replace(fact, commit=on.head, onto=on.onto))

    def about_head(event: FindingRaised) -> FindingRaised:
        if tested is None or event.evidence.get("commit") != tested or tested == on.head:
            return event
        evidence = {**event.evidence, "commit": on.head, "tested": tested, "onto": on.onto}
        return msgspec.structs.replace(event, evidence=evidence)

    batches = list(suite.batches)
    if batches:
        last = batches[-1]
        batches[-1] = tuple(
            restated
            if event is fact
            else about_head(event)
            if isinstance(event, FindingRaised)
            else event
            for event in last
        )
    return dataclasses.replace(
        suite,
        commit=on.head,
        suite=restated,
        beside=[about_head(f) for f in suite.beside],
        batches=batches,
    )


def conflict_message(on: OnTrunk, unit: str) -> tuple[str, dict[str, object]]:
    """The ``unit-merge`` finding's message and evidence."""
    paths = [c.path for c in on.conflicts]
    shown = ", ".join(paths[:5]) + (", …" if len(paths) > 5 else "")
    message = (
        f"unit {unit}'s commit {on.head[:12]} does not merge onto trunk {on.onto[:12]} "
        f"(conflicts in {shown}); it is not gated. Its next round starts from trunk merged "
        "into it: resolve the conflicts there"
    )
    evidence: dict[str, object] = {
        "head": on.head,
        "trunk": on.onto,
        "merge_base": on.merge_base,
        "paths": paths,
        "files": [c.as_evidence() for c in on.conflicts[:MAX_FILES]],
    }
    return message, evidence


def with_conflict_fact(suite: SuiteResult, on: OnTrunk, unit: str, cause: str) -> SuiteResult:
    """The refused suite's last batch with the ``merge.conflicted`` fact before the suite, so
    the builder's fold knows the collision when the red suite triggers its next round."""
    batches = list(suite.batches)
    if not batches or suite.suite is None:
        return suite
    last = batches[-1]
    finding = next((e for e in last if isinstance(e, FindingRaised)), None)
    if finding is None:
        return suite
    fact = MergeConflicted(
        id=answer_id(cause, MERGE_CRITERION),
        project=finding.project,
        actor=finding.actor,
        unit=unit,
        head=on.head,
        base=on.onto,
        paths=[c.path for c in on.conflicts],
        finding=finding.id,
        cause=cause,
    )
    suite_fact: GateSuiteCompleted = suite.suite
    batches[-1] = (*(e for e in last if e is not suite_fact), fact, suite_fact)
    return dataclasses.replace(suite, batches=batches)
