"""The shipper: scans trunk's history for credentials; bundles closed slices; ships them.

A daemon on the kernel folding ``risk`` (which embeds ``slices``) and ``shipping``. Its
decision (:mod:`.decide`, pure) asks for three effects, carried out here:

* ``scan`` — :func:`.scan.scan` the commits new on trunk; publish one finding per
  credential (criterion ``no-secrets-in-trunk``, owner operator, critical) atomically with
  the :class:`TrunkScanned` that answers the scan. The dispatcher starts no unit while such
  a finding is open (:func:`projections.shipping.hold`).
* ``bundle`` — :func:`.bundle.make`: branch, annotated tag, PR description, ``git bundle``;
  publish :class:`SliceBundled`.
* ``ship`` — run ``[ship] command`` with the gates' command runner (a process group in the
  bundle's folder, a scrubbed environment, a hard timeout: it is a script, not an agent)
  and publish :class:`ShipCommandRan`. Its argv ends with the bundle and the description
  paths; the environment names them too (``LOOPBUS_SHIP_*``, docs/ship.md).

Answer ids derive from what they answer, so a restart publishes the same ids again.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import assert_never

import structlog

from projections import risk, shipping, slices, verify
from projections.intents import Publish, PublishBatch
from schemas import Actor, FindingRaised, utcnow
from schemas.ids import answer_id, fixed_id
from schemas.ship import SECRET_CRITERION, ShipCommandRan, SliceBundled, TrunkScanned
from schemas.targets import PlanTarget, RecordTarget
from workers.errors import WorkerError
from workers.gates.executors import RunSpec, SubprocessExecutor
from workers.kernel import Daemon, Kernel, World
from workers.shipper import bundle
from workers.shipper.decide import Options, decide
from workers.shipper.describe import description
from workers.shipper.effects import BundleSlice, ScanTrunk, ShipBundle, ShipperEffect, ShipperIntent
from workers.shipper.scan import Scan, scan

log = structlog.get_logger()

BUNDLE_CRITERION = "ship-bundle"
"""The criterion of the finding that says a slice could not be bundled, and why."""


@dataclass(frozen=True)
class ShipRepo:
    """One project's repository, its trunk, where bundles go, and its ``[ship]`` command."""

    path: Path
    out: Path
    trunk: str = "HEAD"
    command: str | None = None
    timeout_s: float = 300.0
    env: tuple[str, ...] = ()
    """Variables of the daemon's environment passed to the command (``[ship] env``)."""


class Shipper(Daemon[ShipperEffect]):
    name = "shipper"
    folds = (slices.FOLD, risk.FOLD, shipping.FOLD, verify.FOLD)

    def __init__(self, repos: Mapping[str, ShipRepo], *, actor: Actor | None = None) -> None:
        super().__init__(projects=tuple(repos), actor=actor)
        self.repos = dict(repos)

    async def start(self, kernel: Kernel[ShipperEffect]) -> None:
        # Decide at start for every project, even one whose log is empty: trunk's history
        # is scanned before anything moves it.
        for project in self.repos:
            kernel.observe("shipper.started", True, project=project)

    def decide(self, world: World) -> Sequence[ShipperIntent]:
        repo = self.repos.get(world.project)
        if repo is None:
            return ()
        return decide(world, Options(command=repo.command))

    async def perform(self, effect: ShipperEffect) -> Sequence[ShipperIntent]:
        repo = self.repos[effect.project]
        match effect:
            case ScanTrunk(tips=tips, seed=seed, moves=moves):
                found = await asyncio.to_thread(scan, repo.path, repo.trunk, tips)
                seed = seed or fixed_id(0, f"{effect.project}:first-scan")
                return [self._scanned(effect.project, repo, found, moves, seed)]
            case BundleSlice():
                return [await self._bundle(effect, repo)]
            case ShipBundle(bundled=bundled):
                return [await self._ship(effect.project, repo, bundled)]
            case _:
                assert_never(effect)

    def _scanned(
        self, project: str, repo: ShipRepo, found: Scan, moves: int, seed: str
    ) -> ShipperIntent:
        now = utcnow()
        findings = [
            FindingRaised(
                id=fixed_id(0, f"{project}:secret:{leak.commit}:{leak.path}:{leak.pattern}"),
                project=project,
                actor=self.actor,
                at=now,
                producer="standards",
                target=RecordTarget(id=leak.commit),
                severity="critical",
                criterion=SECRET_CRITERION,
                message=f"a credential ({leak.pattern}) was added to {leak.path} by commit "
                f"{leak.commit[:12]}, reachable from trunk: it is in every clone's history "
                "even if a later commit deleted it",
                evidence={"commit": leak.commit, "path": leak.path, "pattern": leak.pattern},
                owner="operator",
            )
            for leak in found.leaks
        ]
        scanned = TrunkScanned(
            id=answer_id(seed, f"trunk-scanned:{moves}"),
            project=project,
            actor=self.actor,
            at=now,
            trunk=repo.trunk,
            tip=found.tip,
            commits=found.commits,
            moves=moves,
            findings=[f.id for f in findings],
        )
        log.info("trunk.scanned", project=project, commits=found.commits, leaks=len(findings))
        return PublishBatch((*findings, scanned))

    async def _bundle(self, effect: BundleSlice, repo: ShipRepo) -> ShipperIntent:
        slice_id = effect.slice
        checks = await asyncio.to_thread(_configured_reads, repo)
        text = description(effect.views, effect.risk, effect.shipping, slice_id, checks)
        try:
            made = await asyncio.to_thread(
                bundle.make, repo.path, repo.trunk, slice_id, text, repo.out
            )
        except WorkerError as exc:
            # A ref of the slice's name already elsewhere (an agent can make branches in
            # the repository): never ship it, and say so where the operator looks.
            log.warning("slice.not_bundled", project=effect.project, slice=slice_id, error=str(exc))
            return self._refused(effect.project, slice_id, effect.cause, str(exc))
        log.info("slice.bundled", project=effect.project, slice=slice_id, bundle=str(made.bundle))
        return Publish(
            SliceBundled(
                id=answer_id(effect.cause, "ship-bundled"),
                project=effect.project,
                actor=self.actor,
                at=utcnow(),
                slice=slice_id,
                commit=made.commit,
                branch=made.branch,
                tag=made.tag,
                bundle=str(made.bundle),
                sha256=made.sha256,
                description=str(made.description),
                cause=effect.cause,
            )
        )

    def _refused(self, project: str, slice_id: str, cause: str, why: str) -> ShipperIntent:
        return Publish(
            FindingRaised(
                id=answer_id(cause, "ship-refused"),
                project=project,
                actor=self.actor,
                at=utcnow(),
                producer="standards",
                target=PlanTarget(slice=slice_id),
                severity="high",
                criterion=BUNDLE_CRITERION,
                message=f"slice {slice_id} was not bundled: {why}",
                slice=slice_id,
                owner="operator",
            )
        )

    async def _ship(self, project: str, repo: ShipRepo, bundled: SliceBundled) -> ShipperIntent:
        assert repo.command is not None
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": os.environ.get("HOME", "/"),
            "LOOPBUS_PROJECT": project,
            "LOOPBUS_SHIP_SLICE": bundled.slice,
            "LOOPBUS_SHIP_COMMIT": bundled.commit,
            "LOOPBUS_SHIP_BRANCH": bundled.branch,
            "LOOPBUS_SHIP_TAG": bundled.tag,
            "LOOPBUS_SHIP_BUNDLE": bundled.bundle,
            "LOOPBUS_SHIP_SHA256": bundled.sha256,
            "LOOPBUS_SHIP_DESCRIPTION": bundled.description,
        }
        env |= {name: os.environ[name] for name in repo.env if name in os.environ}
        argv = [*shlex.split(repo.command), bundled.bundle, bundled.description]
        with tempfile.TemporaryDirectory(prefix="loopbus-ship-") as scratch:
            ran = await SubprocessExecutor().run(
                RunSpec(
                    argv=argv,
                    workdir=Path(bundled.bundle).parent,
                    outdir=Path(scratch),
                    env=env,
                    timeout_s=repo.timeout_s,
                )
            )
        if ran.start_error or ran.timed_out or ran.signal is not None:
            outcome, why = "error", ran.start_error or "; ".join(ran.notes) or "killed"
        else:
            outcome, why = ("pass" if ran.exit_code == 0 else "fail"), ""
        log.info("ship.ran", project=project, slice=bundled.slice, outcome=outcome)
        return Publish(
            ShipCommandRan(
                id=answer_id(bundled.id, "ship-command-ran"),
                project=project,
                actor=self.actor,
                at=utcnow(),
                slice=bundled.slice,
                command=repo.command,
                outcome=outcome,  # type: ignore[arg-type]
                exit_code=ran.exit_code,
                output=(why + "\n" + ran.output_tail(2000)).strip(),
                cause=bundled.id,
            )
        )


def _configured_reads(repo: ShipRepo) -> Mapping[str, Sequence[str]] | None:
    from workers import repository
    from workers.gates.declared import config_at

    try:
        config = config_at(repository.resolve(repo.path, repo.trunk))
    except WorkerError:
        return None
    return {spec.id: spec.reads for spec in config.checks}
