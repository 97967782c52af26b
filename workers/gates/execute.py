"""Running one check: check the tree out into a private folder, run its command through an
executor, parse the output into a verdict. Every way this can go wrong ends as an error
verdict, never an exception the suite has to catch."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from workers import repository
from workers.errors import RepoError
from workers.gates.config import CheckSpec, ProjectConfig
from workers.gates.environment import interpreter_dir, pytest_env, scrubbed_env
from workers.gates.executors import Executor, RunOutput, RunSpec, docker_reachable
from workers.gates.parsers import parse
from workers.gates.results import error_verdict
from workers.gates.testinfra import InfraFile, infra_files
from workers.gates.verdicts import Verdict


async def execute(
    repo: Path,
    executor: Executor,
    container: Executor,
    config: ProjectConfig,
    spec: CheckSpec,
    info: repository.CommitInfo,
    *,
    swap: tuple[str, Sequence[str]] | None = None,
) -> tuple[Verdict, RunOutput | None]:
    """Check out, run, parse; every way this can go wrong ends as an error verdict.

    ``swap``: (a tree, paths) -- after the checkout, those paths are made what that tree
    has (trunk's test infrastructure in a candidate's checkout)."""
    if spec.image is not None:
        unreachable = await docker_reachable()
        if unreachable is not None:
            return error_verdict(
                spec,
                f"it names image {spec.image} but {unreachable}; "
                "a containerised check never falls back to the host",
            ), None
        executor = container
    scratch = Path(tempfile.mkdtemp(prefix=f"loopbus-gate-{spec.id}-")).resolve()
    try:
        work, out = scratch / "work", scratch / "out"
        for folder in (work, out, out / "home", out / "tmp"):
            folder.mkdir()
        try:
            await asyncio.to_thread(repository.checkout, repo, info.tree, work)
            if swap is not None:
                await asyncio.to_thread(repository.overlay, repo, *swap, work)
        except (RepoError, OSError, KeyError) as exc:
            return error_verdict(spec, f"could not check out tree {info.tree}: {exc}"), None
        dirs = (work, out)
        bin_dir = interpreter_dir(config.python) if config.python else None
        if config.python and bin_dir is None:
            return error_verdict(
                spec,
                f"[project] python = {config.python!r} is not an interpreter on this "
                "machine; install it or fix the path in loopbus.toml",
            ), None
        env = scrubbed_env(spec.env, out / "home", out / "tmp", bin_dir)
        if executor is container:
            env.update({"HOME": "/tmp", "TMPDIR": "/tmp"})
            env.pop("PATH", None)  # the image's own PATH
        if spec.parser == "pytest":
            env.update(pytest_env(spec.env, executor, dirs))
        output = await executor.run(
            RunSpec(spec.argv(), work, out, env, spec.timeout_s, spec.image, bin_dir)
        )
        return parse(spec, output, config, out, executor.view("work", dirs)), output
    finally:
        await asyncio.to_thread(shutil.rmtree, scratch, True)


def changed_infra(
    repo: Path, base: repository.CommitInfo, head: repository.CommitInfo
) -> list[InfraFile]:
    """The test infrastructure ``head`` changed against ``base`` (see :mod:`.testinfra`)."""
    paths = repository.files_changed(repo, base.commit, head.commit)
    with repository.open_repo(repo) as opened:
        trees = {"base": base.tree.encode(), "head": head.tree.encode()}
        return infra_files(paths, lambda side, path: repository.blob_at(opened, trees[side], path))
