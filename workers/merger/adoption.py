"""Adopting the configuration that judges trunk (see :mod:`schemas.adoption`).

Three ways a ``config.adopted`` fact is made, and nothing else makes one:

* **first start** — :func:`adopt_on_first_start`: ``loopbus up`` (the operator starting
  loopbus on a project) adopts trunk's ``loopbus.toml`` before any daemon runs, when the
  log holds no adoption for the project yet; the fact is published only while its subject
  is empty, so a restart, or a second start racing the first, adds nothing. A merger
  started on its own (compose) does the same on its first start (:func:`read_adoptable`);
* **the operator** — a ``config.adopt`` claim from an operator, which the merger answers
  with the file of the commit it names (:func:`operator_adoption`) or a refusal finding
  (:func:`refusal`);
* **a merge** — :func:`merge_adoption`: a unit's candidate landed with allowed edits to the
  file (its own criteria cleared, a check added, a parameter tightened). The candidate was
  judged under the adopted configuration, which refuses every other edit, so the system
  adopts the result as part of the merge (in the same atomic batch as the advance). An
  outside push's edit is never adopted: it is reported as tampering and nothing else.

The repository reads here are blocking (run them in a thread); the fact builders are pure.
"""

from __future__ import annotations

import asyncio
import dataclasses
import getpass
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import msgspec
import structlog
from dulwich.objects import Blob

from bus import Bus, TransitionConflict, read
from projections.intents import Publish, PublishIf, Publishing
from projections.merges import AdoptClaim, Adoption
from schemas import Actor, FindingRaised
from schemas.adoption import (
    ADOPTED_SUBJECT,
    FULL_SHA,
    AdoptionWhy,
    ConfigAdopted,
    config_digest,
)
from schemas.authority import ANSWERS_CLAIM, REFUSAL_CLASS
from schemas.ids import answer_id
from schemas.limits import MAX_TEXT_CHARS
from schemas.merges import FailingTest
from schemas.targets import RecordTarget
from workers.errors import CONFIG_FILE, ConfigError, RepoError
from workers.gates.trunkconfig import config_changes
from workers.kernel.oneshot import carry_out
from workers.merger.config import parse_merge_config
from workers.merger.gates import TrunkVerdict
from workers.repository import changed_config, resolve

log = structlog.get_logger()

ADOPTER_ROLES = frozenset({"operator"})
"""Who may adopt a configuration by a claim: an operator, never an agent."""


@dataclass(frozen=True)
class Adoptable:
    """A ``loopbus.toml`` that may be adopted: where it came from and what it says."""

    commit: str
    blob: str
    text: str

    def fact(
        self,
        project: str,
        actor: Actor,
        *,
        why: AdoptionWhy,
        by: str,
        id: str | None = None,
        unit: str | None = None,
        cause: str | None = None,
        note: str = "",
    ) -> ConfigAdopted:
        fact = ConfigAdopted(
            project=project,
            actor=actor,
            commit=self.commit,
            blob=self.blob,
            digest=config_digest(self.text),
            text=self.text,
            why=why,
            by=by,
            unit=unit,
            cause=cause,
            note=note[:500],
        )
        return fact if id is None else msgspec.structs.replace(fact, id=id)


def read_adoptable(repo: Path, commit: str, project: str) -> Adoptable:
    """The ``loopbus.toml`` of ``commit`` (a sha, a short sha or a branch), checked as the
    merger will read it. Raises :class:`RepoError` (no such commit) or :class:`ConfigError`
    (missing, invalid, another project's, or too long to carry on the log)."""
    info = resolve(repo, commit)
    text = info.config_text
    if text is None:
        raise ConfigError("file", None, f"commit {info.commit[:12]} has no {CONFIG_FILE}")
    if len(text) > MAX_TEXT_CHARS:
        raise ConfigError(
            "file",
            None,
            f"{CONFIG_FILE} of {info.commit[:12]} is {len(text)} characters; an adopted "
            f"configuration is carried on the log and may be at most {MAX_TEXT_CHARS}",
        )
    merge = parse_merge_config(text)
    if merge.project != project:
        raise ConfigError(
            "project.id", merge.project, f"this is project {project!r}; adopt its own file"
        )
    blob = Blob.from_string(text.encode("utf-8")).id.decode()
    return Adoptable(commit=info.commit, blob=blob, text=text)


def operator(principal: str = "") -> str:
    """Who ran ``loopbus up``: the operator's account on this host."""
    try:
        user = principal or getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return f"{user}@{socket.gethostname()}"


async def adopted_on_log(bus: Bus, project: str) -> ConfigAdopted | None:
    """The latest system adoption of ``project`` on the log (``None``: there is none)."""
    latest: ConfigAdopted | None = None
    subject = f"loop.{project}.{ADOPTED_SUBJECT}"
    async for record in read(bus, subjects=[subject]):
        event = record.event
        if isinstance(event, ConfigAdopted) and event.actor.role == "system":
            latest = event
    return latest


async def adopt_on_first_start(
    bus: Bus, repo: Path, trunk: str, project: str, actor: Actor, by: str
) -> ConfigAdopted | None:
    """Adopt trunk's ``loopbus.toml`` when ``project`` has no adoption yet; the new fact,
    or ``None`` when one was there already (a restart). Published only while the adoption
    subject is empty, so two starts racing adopt once. Raises :class:`RepoError` or
    :class:`ConfigError` when trunk's file cannot be adopted."""
    if await adopted_on_log(bus, project) is not None:
        return None
    found = await asyncio.to_thread(read_adoptable, repo, trunk, project)
    fact = found.fact(project, actor, why="first-start", by=by, note="loopbus up started")
    try:
        await carry_out(bus, [PublishIf(fact, 0)])
    except TransitionConflict:
        return None  # another start adopted first
    return fact


def operator_adoption(
    claim: AdoptClaim, found: Adoptable, project: str, actor: Actor
) -> ConfigAdopted:
    """An operator's claim, answered: ``found`` judges trunk from now on."""
    return found.fact(
        project,
        actor,
        why="operator",
        by=claim.principal,
        id=answer_id(claim.id, "adopted"),
        cause=claim.id,
        note=claim.why,
    )


def merge_adoption(
    found: Adoptable, project: str, actor: Actor, *, unit: str, advance: str
) -> ConfigAdopted:
    """A landed unit's allowed edit to the file, adopted with its merge."""
    return found.fact(
        project,
        actor,
        why="merge",
        by=actor.principal,
        id=answer_id(advance, "adopted"),
        unit=unit,
        cause=advance,
        note=f"unit {unit}'s allowed edit to {CONFIG_FILE}, judged under the adopted one",
    )


def revert_adoption(
    before: Adoption, project: str, actor: Actor, *, unit: str, advance: str
) -> ConfigAdopted:
    """A merge that adopted its unit's edit was reverted: what was in force before it is
    adopted again, with the revert (trunk's file is that one again)."""
    found = Adoptable(
        commit=before.commit,
        blob=Blob.from_string(before.text.encode("utf-8")).id.decode(),
        text=before.text,
    )
    return found.fact(
        project,
        actor,
        why="revert",
        by=actor.principal,
        id=answer_id(advance, "unadopted"),
        unit=unit,
        cause=advance,
        note=f"unit {unit}'s merge was reverted; its edit to {CONFIG_FILE} goes with it",
    )


def refusal(
    claim: AdoptClaim, project: str, actor: Actor, code: str, message: str
) -> FindingRaised:
    """A ``config.adopt`` claim the merger will not act on, and why."""
    return FindingRaised(
        id=answer_id(claim.id, "refused"),
        project=project,
        actor=actor,
        producer="trunk_gate",
        target=RecordTarget(id=claim.id),
        severity="high" if code == "adopter-role" else "medium",
        criterion=code,
        cls=REFUSAL_CLASS,
        message=f"configuration adoption refused: {message}",
        evidence={
            ANSWERS_CLAIM: claim.id,
            "claimant": f"{claim.role}:{claim.principal}",
            "commit": claim.commit,
            "code": code,
        },
        owner="operator",
    )


def claim_refusal(claim: AdoptClaim) -> tuple[str, str] | None:
    """(code, message) when the claim cannot be acted on whatever the repository holds."""
    if claim.role not in ADOPTER_ROLES:
        return (
            "adopter-role",
            f"only an operator adopts the configuration that judges trunk, not role "
            f"{claim.role!r} ({claim.principal}); an agent changes the gates only through a "
            "unit's reviewed change",
        )
    if not FULL_SHA.match(claim.commit):
        return (
            "commit-not-a-sha",
            f"commit {claim.commit[:80]!r} is not a full commit sha; name the commit whose "
            "file you reviewed in full (git rev-parse), so nothing pushed meanwhile is adopted",
        )
    return None


def tampering(repo: Path, reference: str | None, ref: str, adopted: Adoption) -> list[str]:
    """What an outside commit ``ref`` changes of the gate configuration (empty: nothing).

    ``loopbus.toml``: when it says something else than the adopted configuration and is
    not the file ``reference`` (the last green trunk, else the adopted commit) already
    had — a push's own edit, which is never adopted. The other gate-configuration files
    (``conftest.py``, ``pytest.ini``, the pytest parts of ``pyproject.toml``, ``setup.cfg``,
    ``tox.ini``): any change since ``reference``."""
    touched: list[str] = []
    own = resolve(repo, ref).config_text
    before: str | None = None
    if reference is not None and reference != ref:
        try:
            before = resolve(repo, reference).config_text
            touched = [p for p in changed_config(repo, reference, ref) if p != CONFIG_FILE]
        except RepoError:
            before = None  # the reference is gone: the adopted text alone judges the file
    if own != before and _differs(adopted.text, own):
        touched.insert(0, f"{CONFIG_FILE} (not the adopted configuration, {adopted.digest[:12]})")
    return touched


def _differs(adopted: str, own: str | None) -> bool:
    if own is None:
        return True
    try:
        return bool(config_changes(adopted, own, ()))
    except ConfigError:
        return True  # a file that does not even parse is not the adopted one


def tampered(verdict: TrunkVerdict, touched: list[str]) -> TrunkVerdict:
    """A push that changes the gate configuration is red whatever its gates said."""
    changed = FailingTest(
        test="gate-configuration",
        check="gate-configuration",
        message=f"the push changes the gate configuration ({', '.join(touched[:10])}); it "
        "was judged with the adopted configuration and its own edit is not adopted: trunk's "
        "gates change only by an operator's adoption or a unit's reviewed change",
    )
    return dataclasses.replace(verdict, outcome="fail", failing=[changed, *verdict.failing])


async def adopt_first(repo: Path, project: str, actor: Actor, ref: str) -> Sequence[Publishing]:
    """No adoption on the log (a merger started without ``loopbus up``): trunk's file,
    as on a first start; published only while the adoption subject is empty."""
    try:
        found = await asyncio.to_thread(read_adoptable, repo, ref, project)
    except ConfigError as exc:
        log.warning("merger.nothing_to_adopt", trunk=ref, error=str(exc))
        return ()  # nothing judges trunk yet: asked again on the next poll
    fact = found.fact(project, actor, why="first-start", by=actor.principal)
    log.info("merger.config_adopted", why="first-start", digest=fact.digest)
    return [PublishIf(fact, 0)]


async def adopt(repo: Path, project: str, actor: Actor, claim: AdoptClaim) -> Sequence[Publishing]:
    """An operator's ``config.adopt``: the file of the commit it names, or a refusal
    saying why it cannot be adopted."""
    try:
        found = await asyncio.to_thread(read_adoptable, repo, claim.commit, project)
    except (RepoError, ConfigError) as exc:
        code = "unknown-commit" if isinstance(exc, RepoError) else "invalid-config"
        return [Publish(refusal(claim, project, actor, code, str(exc)))]
    fact = operator_adoption(claim, found, project, actor)
    log.info("merger.config_adopted", why="operator", by=claim.principal, digest=fact.digest)
    return [Publish(fact)]
