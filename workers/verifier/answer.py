"""What the verifier's answer becomes: read (:func:`parse_envelope`) and turned into facts
(:func:`recorded`) — one ``WaveVerified`` and a blocking finding per problem it found, in
one atomic batch. Pure: no I/O, no clock.
"""

from __future__ import annotations

import re
from datetime import datetime

import msgspec

from projections.intents import PublishBatch
from schemas import Actor, FindingRaised, InvalidEvent, decode_event, encode_event
from schemas.ids import answer_id
from schemas.limits import bounded, oversize
from schemas.ratchet import GateProposed
from schemas.targets import PlanTarget
from schemas.verify import (
    VERIFY_CRITERION,
    VerifierEnvelope,
    VerifierFinding,
    VerifyBrief,
    WaveVerified,
)

MAX_FINDINGS = 50
MAX_PROPOSED = 10
"""Gates proposed from one wave's passing checks, at most."""
MAX_LIST = 100

_envelope = msgspec.json.Decoder(VerifierEnvelope)


def parse_envelope(stdout: bytes) -> VerifierEnvelope | str:
    """The verifier's envelope, or why it cannot be read (one line)."""
    text = stdout.decode("utf-8", "replace").strip()
    if not text:
        return 'the verifier printed nothing; print {"findings": [...], "scores": [...]}'
    try:
        return _envelope.decode(text)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        return f"the verifier's envelope does not validate: {exc} (docs/verify.md)"


def recorded(
    brief: VerifyBrief,
    accepted: str,
    answer: VerifierEnvelope | str,
    *,
    actor: Actor,
    now: datetime,
    propose_gates: bool = False,
) -> PublishBatch:
    """The verifier's run as facts. An ``answer`` that is a string is why nothing could be
    verified: the wave is recorded with that error (and so is unverified for SHIP). With
    ``propose_gates``, each acceptance check that passed is proposed as a gate after it."""
    base = answer_id(accepted, f"verify:{brief.wave}")
    if isinstance(answer, str):
        run = WaveVerified(
            id=base,
            project=brief.project,
            actor=actor,
            at=now,
            slice=brief.slice,
            accepted=accepted,
            wave=brief.wave,
            trunk=brief.trunk,
            error=bounded(answer),
        )
        return PublishBatch((run,))
    findings = [
        _finding(brief, accepted, base, i, found, actor, now)
        for i, found in enumerate(answer.findings[:MAX_FINDINGS])
    ]
    run = WaveVerified(
        id=base,
        project=brief.project,
        actor=actor,
        at=now,
        slice=brief.slice,
        accepted=accepted,
        wave=brief.wave,
        trunk=brief.trunk,
        scores=list(answer.scores[:MAX_LIST]),
        unreached=[bounded(u) for u in answer.unreached[:MAX_LIST]],
        checks=list(answer.checks[:MAX_LIST]),
        findings=[f.id for f in findings],
        summary=bounded(answer.summary),
    )
    proposals = proposed_gates(brief, run, actor, now) if propose_gates else []
    # The findings first: the wave counts as verified only once its findings are folded.
    batch = PublishBatch((*findings, run, *proposals))
    why = unrecordable(batch)
    if why is not None:  # recorded as the wave's error, never an effect failing for ever
        return recorded(
            brief, accepted, f"its answer cannot be recorded: {why}", actor=actor, now=now
        )
    return batch


def proposed_gates(
    brief: VerifyBrief, run: WaveVerified, actor: Actor, now: datetime
) -> list[GateProposed]:
    """The acceptance checks of ``run`` that passed, each proposed as a project-local gate.

    A proposal enters the ratchet as Drafted and owned by the operator, who alone approves
    it (and only an approval installs it in the contract): the verifier is an agent, so
    its command is shown to the operator as it wrote it, never run as a gate before that.
    The gate id names the slice, the wave and the check, so a later wave proposes anew."""
    proposals = []
    for check in [c for c in run.checks if c.passed][:MAX_PROPOSED]:
        slug = re.sub(r"[^A-Za-z0-9_-]+", "-", check.id).strip("-")[:32]
        if not slug or not check.command.strip():
            continue
        proposals.append(
            GateProposed(
                id=answer_id(run.id, f"gate:{check.id}"),
                project=brief.project,
                actor=actor,
                at=now,
                gate=f"verify-{brief.slice}-w{brief.wave}-{slug}"[:64],
                check=bounded(check.command, 1000),
                defect=bounded(f"acceptance: {check.criterion or check.id}", 200),
                investigation=run.id,
                finding=run.id,
                why=bounded(
                    f"the code-cold verifier's check {check.id} passed on trunk "
                    f"{run.trunk[:12]} (wave {brief.wave} of {brief.slice}); as a gate it "
                    "keeps holding what was verified",
                    500,
                ),
            )
        )
    return proposals


def unrecordable(batch: PublishBatch) -> str | None:
    """Why the log would refuse one of ``batch``'s events (readers decode with limits the
    constructors do not apply), or ``None``."""
    for event in batch.events:
        try:
            payload = encode_event(event)
            too_big = oversize(payload)
            if too_big is not None:
                return too_big
            decode_event(payload)
        except InvalidEvent as exc:
            return bounded(str(exc))
    return None


def _finding(
    brief: VerifyBrief,
    accepted: str,
    base: str,
    index: int,
    found: VerifierFinding,
    actor: Actor,
    now: datetime,
) -> FindingRaised:
    # A unit the verifier names is kept only when it is one of the wave's: it never saw
    # the diffs, so a name outside the wave is a guess the log should not carry as fact.
    unit = found.unit if found.unit in brief.units else None
    return FindingRaised(
        id=answer_id(base, f"finding:{index}"),
        project=brief.project,
        actor=actor,
        at=now,
        producer="trunk_gate",
        target=PlanTarget(slice=brief.slice),
        severity=found.severity,
        criterion=VERIFY_CRITERION,
        message=bounded(found.message),
        evidence={
            "accepted": accepted,
            "wave": brief.wave,
            "trunk": brief.trunk,
            "check": bounded(found.check, 200),
        },
        unit=unit,
        slice=brief.slice,
        owner="operator",
    )
