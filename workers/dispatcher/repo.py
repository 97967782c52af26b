"""What the dispatcher reads from a project's repository: trunk, its ``loopbus.toml``, a
unit's changed files, and the increment's boot check.

The configuration is read with the gate runner's parser (``loopbus.workers.gates.config``)
from the trunk commit itself, never from a working tree, so the pending criteria a plan is
checked against are the ones trunk declares. The boot check is the ``[[check]]`` whose id
is ``boot``; it is run by the gate runner (:class:`loopbus.workers.gates.runner.GateRunner`)
on the trunk commit exactly as any check is — in a fresh checkout, with the executor its
``image`` asks for, judged by its ``parser``, signed, recorded and cached — and its three
outcomes are kept apart: pass, fail, and error for anything that could not be established
(no config, no ``boot`` check, could not start, timed out, killed, unreadable output).

Every function here except :meth:`ProjectRepo.boot` blocks (dulwich); the daemon runs
them in a thread.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from dulwich.diff_tree import tree_changes
from dulwich.objects import Commit
from loopbus.schemas.slices import BootResult
from loopbus.workers.errors import WorkerError
from loopbus.workers.gates.config import ProjectConfig, parse_config
from loopbus.workers.gates.runner import GateRunner
from loopbus.workers.repository import CommitInfo, open_repo, resolve

BOOT_CHECK = "boot"
"""The id of the check in ``loopbus.toml`` that starts the software and probes it."""


class RepoUnreadable(Exception):
    """Raised when trunk, a commit or the configuration on it cannot be read."""


@dataclass(frozen=True)
class ProjectRepo:
    """One project's repository and the ref that is its trunk."""

    path: Path
    trunk: str = "HEAD"

    def trunk_commit(self) -> CommitInfo:
        try:
            return resolve(self.path, self.trunk)
        except WorkerError as exc:
            raise RepoUnreadable(str(exc)) from exc

    def config(self, info: CommitInfo) -> ProjectConfig:
        if info.config_text is None:
            raise RepoUnreadable(f"commit {info.commit[:12]} has no loopbus.toml")
        try:
            return parse_config(info.config_text)
        except WorkerError as exc:
            raise RepoUnreadable(f"loopbus.toml at {info.commit[:12]}: {exc}") from exc

    def pending(self) -> tuple[list[str], str]:
        """(pending criteria declared on trunk, where they were read)."""
        info = self.trunk_commit()
        config = self.config(info)
        return pending_criteria(config), f"loopbus.toml@{info.commit}"

    def commands(self, commit: str | None) -> dict[str, str]:
        """check id -> the command as configured at ``commit`` (empty when unreadable)."""
        try:
            info = resolve(self.path, commit) if commit else self.trunk_commit()
            return {spec.id: spec.command for spec in self.config(info).checks}
        except (WorkerError, RepoUnreadable):
            return {}

    def files_changed(self, base: str, head: str) -> list[str]:
        """Paths that differ between two commits' trees, sorted."""
        try:
            with open_repo(self.path) as repo:
                old, new = repo[base.encode()], repo[head.encode()]
                if not isinstance(old, Commit) or not isinstance(new, Commit):
                    raise RepoUnreadable(f"{base[:12]} or {head[:12]} is not a commit")
                paths: set[str] = set()
                for change in tree_changes(repo.object_store, old.tree, new.tree):
                    for side in (change.old, change.new):
                        if side is not None and side.path is not None:
                            paths.add(side.path.decode("utf-8", errors="surrogateescape"))
                return sorted(paths)
        except (KeyError, WorkerError) as exc:
            raise RepoUnreadable(f"cannot diff {base[:12]}..{head[:12]}: {exc}") from exc

    async def boot(self, runner: GateRunner | None) -> BootResult:
        """Run the boot check on the trunk commit through the gate runner; never raises.

        The run is the gate runner's like any other check's — its ``image`` picks the
        executor, its ``parser`` judges the run, the result is signed and recorded on the log
        and answered from the gate cache when trunk's inputs have not changed — so the
        close can name the signed result. What cannot be established is error, including
        having no ``runner`` (no key to sign with) for a boot check that exists.
        """
        try:
            info = await asyncio.to_thread(self.trunk_commit)
        except RepoUnreadable as exc:
            return BootResult(outcome="error", detail=str(exc))
        try:
            spec = self.config(info).check(BOOT_CHECK)
        except (RepoUnreadable, WorkerError) as exc:
            return BootResult(
                outcome="error",
                commit=info.commit,
                detail=f"no boot check to run on trunk: {exc}",
            )
        if runner is None:
            return BootResult(
                outcome="error",
                command=spec.command,
                commit=info.commit,
                detail="the dispatcher has no gate-runner key to sign the boot result with; "
                "run it with --data-dir",
            )
        suite = await runner.run_commit(info.commit, checks=[BOOT_CHECK], reason="trunk")
        if not suite.checks:
            return BootResult(
                outcome="error",
                command=spec.command,
                commit=info.commit,
                detail=f"the boot check could not be run: {suite.error}",
            )
        run = suite.check(BOOT_CHECK)
        result = run.result
        tail = ""
        if run.outcome != "pass":
            tails = [f.evidence.get("output_tail") for f in run.findings]
            tail = next((t for t in tails if isinstance(t, str) and t.strip()), "")[-1000:]
        return BootResult(
            outcome=run.outcome,
            command=spec.command,
            commit=info.commit,
            exit_code=result.exit_code,
            duration_s=round(result.duration_s, 3),
            detail="\n".join(part for part in (result.error or result.summary, tail) if part),
            result=result.id,
            cached=run.cached,
        )


def pending_criteria(config: ProjectConfig) -> list[str]:
    """Every pending criterion any check of the configuration declares, in file order."""
    return list(dict.fromkeys(c for spec in config.checks for c in spec.pending))


def read_pending_file(path: Path) -> list[str]:
    """Pending criteria of a ``loopbus.toml`` on disk (``loopbus plan check --repo``)."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise RepoUnreadable(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        return pending_criteria(parse_config(text, source=str(path)))
    except WorkerError as exc:
        raise RepoUnreadable(str(exc)) from exc
