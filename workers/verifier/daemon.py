"""The verifier daemon: runs the ``[verify] command`` code-cold on each merged wave, and
(``[review] wave = true``) the wave review of its union diff (:mod:`.wave`).

It folds the slices, the verifications and the charter for every project it serves
(``--repo`` with a ``[verify] command``); the decision (:mod:`.decide`, pure) names the
wave to verify and its brief (:mod:`.brief`); this shell reads trunk's head and its boot
command, runs the command through the agent runner (sandboxed, like every agent) in a
writable throw-away checkout of trunk, the brief on stdin, and records what it said
(:mod:`.answer`). It never raises for a bad run: a command that fails or prints no envelope
is recorded as the wave's error, so the wave counts as unverified and the loop goes on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import assert_never

import msgspec
import structlog

from schemas import utcnow
from schemas.reviews import VerdictDocument
from schemas.verify import BriefBoot, VerifierEnvelope, VerifyBrief
from schemas.wave_review import Trigger
from workers.agents.command import argv_of
from workers.agents.config import RepoConfig
from workers.agents.runner import run_agent
from workers.agents.verify_config import VerifyConfig
from workers.agents.workspace import make_writable, read_only_copy, remove, workdir
from workers.gates.declared import config_at
from workers.kernel import Daemon, World
from workers.repository import resolve
from workers.verifier import wave
from workers.verifier.answer import parse_envelope, recorded
from workers.verifier.decide import FOLDS, decide
from workers.verifier.effects import (
    ReReviewUnit,
    ReviewWave,
    VerifierEffect,
    VerifierIntent,
    VerifyWave,
)
from workers.verifier.wave_shell import run_review, unit_document, wave_document

log = structlog.get_logger()


class Verifier(Daemon[VerifierEffect]):
    """Verify each merged wave code-cold, for the projects in ``configs``."""

    name = "verifier"
    folds = FOLDS

    def __init__(
        self, configs: Mapping[str, RepoConfig], verify: Mapping[str, VerifyConfig]
    ) -> None:
        self.verify = {p: verify.get(p, VerifyConfig()) for p in configs}
        served = {
            p: c
            for p, c in configs.items()
            if self.verify[p].command or (c.review.wave and c.review.command)
        }
        super().__init__(projects=tuple(served))
        self.configs = served

    def decide(self, world: World) -> Sequence[VerifierIntent]:
        config = self.configs.get(world.project)
        if config is None:
            return ()
        intents: list[VerifierIntent] = []
        if self.verify[world.project].command:
            intents.extend(decide(world))
        if config.review.wave and config.review.command:
            intents.extend(wave.decide(world))
        return intents

    async def perform(self, effect: VerifierEffect) -> Sequence[VerifierIntent]:
        match effect:
            case ReviewWave():
                return [await self._wave_review(effect)]
            case ReReviewUnit():
                return [await self._rereview(effect)]
            case VerifyWave():
                return [await self._verify(effect)]
            case _:
                assert_never(effect)

    async def _verify(self, effect: VerifyWave) -> VerifierIntent:
        config, verify = self.configs[effect.project], self.verify[effect.project]
        brief = effect.brief
        answer: VerifierEnvelope | str
        try:
            head, boot = await asyncio.to_thread(_trunk, config)
        except Exception as exc:  # an unreadable trunk is this run's error, never a crash
            answer = f"trunk cannot be read: {exc}"
        else:
            brief = msgspec.structs.replace(brief, trunk=head, boot=boot)
            answer = await self._run(config, verify, brief)
        batch = recorded(
            brief,
            effect.accepted,
            answer,
            actor=self.actor,
            now=utcnow(),
            propose_gates=verify.propose_gates,
        )
        log.info("verify.recorded", slice=brief.slice, wave=brief.wave, facts=len(batch.events))
        return batch

    async def _wave_review(self, effect: ReviewWave) -> VerifierIntent:
        config, args = self.configs[effect.project], effect
        owed = args.owed
        axes: list[str] = []
        triggers: list[Trigger] = []
        attribution: dict[str, str] = {}
        answer: VerdictDocument | str
        try:
            document, axes, triggers, attribution = await asyncio.to_thread(
                wave_document, config, owed, args.criteria
            )
        except Exception as exc:  # an unreadable diff is this review's error, never a crash
            answer = f"the wave's union diff cannot be read: {exc}"
        else:
            answer = await run_review(config, owed.head, document)
        log.info("wave.reviewed", slice=args.slice, wave=owed.wave, axes=axes)
        return wave.reviewed(
            config.project,
            args,
            axes=axes,
            triggers=triggers,
            attribution=attribution,
            answer=answer,
            blocking=config.review.blocking,
            actor=self.actor,
            now=utcnow(),
        )

    async def _rereview(self, effect: ReReviewUnit) -> VerifierIntent:
        config, args = self.configs[effect.project], effect
        answer: VerdictDocument | str
        if not args.merge:
            answer = f"unit {args.unit} has no merge on trunk to review"
        else:
            try:
                document = await asyncio.to_thread(unit_document, config, args)
            except Exception as exc:  # an unreadable diff is this re-review's error
                answer = f"the unit's diff cannot be read: {exc}"
            else:
                answer = await run_review(config, args.merge, document)
        log.info("unit.rereviewed", unit=args.unit)
        return wave.rereviewed(config.project, args, answer, actor=self.actor, now=utcnow())

    async def _run(
        self, config: RepoConfig, verify: VerifyConfig, brief: VerifyBrief
    ) -> VerifierEnvelope | str:
        assert verify.command is not None
        folder = await asyncio.to_thread(workdir, "loopbus-verifier-", mode=0o755)
        copy = folder / "trunk"
        try:
            try:
                await asyncio.to_thread(read_only_copy, config.repo, brief.trunk, copy)
                await asyncio.to_thread(make_writable, copy)
            except Exception as exc:  # whatever stopped the checkout is the run's error
                return f"no trunk checkout: {exc}"
            result = await run_agent(
                config,
                argv_of(verify.command, {"slice": brief.slice, "wave": str(brief.wave)}),
                stdin=msgspec.json.encode(brief),
                worktree=copy,
                cwd=copy,
                timeout_s=verify.timeout_s,
                env={"LOOPBUS_REPO": str(copy), "LOOPBUS_SLICE": brief.slice},
            )
            failure = result.failure(verify.timeout_s)
            if failure is not None:
                return f"the verify command failed: {failure}"
            return parse_envelope(result.stdout)
        finally:
            await asyncio.to_thread(make_writable, copy)
            await asyncio.to_thread(remove, folder)


def _trunk(config: RepoConfig) -> tuple[str, BriefBoot]:
    """Trunk's head and the command that boots it (its ``boot`` check; empty when none)."""
    info = resolve(Path(config.repo), config.review.trunk)
    command, boot = "", BriefBoot().check
    try:
        command = next((c.command for c in config_at(info).checks if c.id == boot), "")
    except Exception:  # a trunk without a valid config still gets verified, without a boot
        command = ""
    return info.commit, BriefBoot(command=command)
