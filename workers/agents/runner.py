"""The one runner every agent command goes through (builder, reviewer, investigator, and
any agent role added later).

:func:`run_agent` builds the agent's environment (:mod:`.environment`), chooses the
executor ``[agents] executor`` names, shows the command loopbus's own interpreter and
packages read-only (so the agents loopbus ships run inside the sandbox) besides what the
caller names, and runs it. ``auto`` (the default) is the container executor when a Docker
engine answers and ``[agents] image`` is set and on the engine, else the local one.

An agent never runs unsandboxed unless ``[agents] sandbox = "none"``: when no executor can
run here, the run does not start and its :class:`CommandResult` says why (the caller's
round fails with that line), it never falls back to a bare subprocess.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import structlog

from workers.agents import container_sweep
from workers.agents.command import CommandResult, run_command
from workers.agents.config import RepoConfig
from workers.agents.container import ContainerExecutor
from workers.agents.environment import (
    agent_env,
    interpreter_paths,
    loopbus_paths,
    outermost,
)
from workers.agents.local import LocalExecutor
from workers.agents.sandbox import SandboxExecutor, SandboxResult, SandboxSpec
from workers.agents.sandbox_config import AgentsConfig
from workers.agents.workspace import remove
from workers.gates.environment import interpreter_dir

log = structlog.get_logger()

_swept = False
"""Whether this process has finished the container runs of daemons that died mid-run."""
_local: dict[tuple[int, int], LocalExecutor] = {}
"""One local executor per uid range: each probes bubblewrap once."""


async def run_agent(
    config: RepoConfig,
    argv: list[str],
    *,
    stdin: bytes,
    worktree: Path,
    timeout_s: float,
    env: Mapping[str, str] | None = None,
    read_only: Sequence[Path] = (),
    cwd: Path | None = None,
) -> CommandResult:
    """Run one agent command for ``config``'s project.

    ``worktree`` is the command's own folder (read-write, its working directory unless
    ``cwd`` names one of ``read_only``); ``read_only`` what its brief names; ``env`` the
    role's own variables (added to the scrubbed environment).
    """
    project_bin = interpreter_dir(config.python) if config.python else None
    if config.python and project_bin is None:
        return _refused(
            f"[project] python = {config.python!r} is not an interpreter on this machine; "
            "install it or fix the path in loopbus.toml"
        )
    environment = agent_env(env or {}, project_bin=project_bin, passed=config.agents.env)
    agents = config.agents
    if agents.unsandboxed:
        return await _unsandboxed(argv, stdin, cwd or worktree, timeout_s, environment)
    executor, why_not = await choose(agents)
    if executor is None:
        return _refused(
            f"no sandbox for the agent here: {why_not}; an agent never runs unsandboxed "
            'unless loopbus.toml says [agents] sandbox = "none"'
        )
    spec = SandboxSpec(
        argv=argv,
        stdin=stdin,
        worktree=worktree,
        env=environment,
        timeout_s=timeout_s,
        # Once each, nested ones dropped: the project's interpreter is often loopbus's own,
        # and an engine refuses a path mounted twice.
        read_only=outermost(
            str(p)
            for p in (
                *loopbus_paths(),
                *interpreter_paths(project_bin),
                *(Path(p) for p in agents.read_only),
                *read_only,
            )
        ),
        writable=tuple(Path(p) for p in agents.writable),
        limits=agents.limits(),
        image=agents.image,
        network=agents.network,
        cwd=cwd,
    )
    result = await executor.run(spec)
    log.debug("agent.ran", executor=result.executor, exit_code=result.exit_code)
    return _command_result(result)


async def choose(agents: AgentsConfig) -> tuple[SandboxExecutor | None, str]:
    """The executor ``[agents] executor`` names that can run here, else ``None`` and why."""
    if agents.executor in ("container", "auto") and (
        agents.executor == "container" or agents.image is not None
    ):
        container, why = await _container(agents.image)
        if container is not None or agents.executor == "container":
            return container, why
        log.info("agent.executor", chosen="local", container_unavailable=why)
    local = _local.setdefault(agents.uids, LocalExecutor(uids=agents.uids))
    problem = await local.available()
    return (local, "") if problem is None else (None, f"local executor: {problem}")


async def shipped_agents_problem(executor: SandboxExecutor) -> str | None:
    """Why ``executor`` cannot run the agents loopbus ships, or ``None``: it runs
    ``python -c "import loopbus.scripted"`` with loopbus's own interpreter, as those agents
    start. The executor's own check cannot see this: with a root daemon and no bubblewrap
    the run's uid is the only fence, and an interpreter under a home folder only its owner
    may enter (a pyenv or pipx Python in ``/root``) is then out of the agent's reach."""
    with tempfile.TemporaryDirectory(prefix="loopbus-probe-") as folder:
        spec = SandboxSpec(
            argv=[sys.executable, "-c", "import loopbus.scripted"],
            stdin=b"",
            worktree=Path(folder),
            env=agent_env({}),
            timeout_s=60,
            read_only=loopbus_paths(),
        )
        result = await executor.run(spec)
    if result.exit_code == 0:
        return None
    said = result.start_error or result.stderr.decode(errors="replace").strip()
    if result.timed_out:
        said = f"it did not finish within {spec.timeout_s:g}s"
    last = said.splitlines()[-1] if said else f"exit code {result.exit_code}"
    return f"the {result.executor} executor cannot run loopbus's interpreter: {last}"


async def _container(image: str | None) -> tuple[SandboxExecutor | None, str]:
    global _swept
    executor: SandboxExecutor = ContainerExecutor()
    problem = await executor.available()
    if problem is not None:
        return None, f"container executor: {problem}"
    if not _swept:
        # A daemon killed mid-run leaves its container running and its worktree lent;
        # the first daemon here to use the engine again finishes those runs.
        _swept = True
        finished = await container_sweep.sweep()
        if finished:
            log.warning("agent.swept", containers=finished)
    if image is None:
        return None, "container executor: no image: set [agents] image in loopbus.toml"
    if not await _image_present(image):
        return None, f"container executor: image {image!r} is not on the Docker engine"
    return executor, ""


async def _image_present(image: str) -> bool:
    import aiodocker

    try:
        docker = aiodocker.Docker()
    except ValueError:
        return False
    try:
        await docker.images.inspect(image)
        return True
    except Exception:  # not found, or the engine would not say: not usable for auto
        return False
    finally:
        await docker.close()


async def _unsandboxed(
    argv: list[str], stdin: bytes, cwd: Path, timeout_s: float, env: dict[str, str]
) -> CommandResult:
    """``[agents] sandbox = "none"``: the operator's explicit choice (said in ``up``'s
    banner and by a standing finding); still the scrubbed environment."""
    tmp = Path(tempfile.mkdtemp(prefix="loopbus-agent-"))
    try:
        env = {**env, "HOME": str(tmp), "TMPDIR": str(tmp)}
        return await run_command(argv, stdin=stdin, cwd=cwd, timeout_s=timeout_s, base_env=env)
    finally:
        remove(tmp)


def _refused(reason: str) -> CommandResult:
    return CommandResult(None, b"", b"", 0.0, start_error=reason, executor="none")


def _command_result(result: SandboxResult) -> CommandResult:
    return CommandResult(
        result.exit_code,
        result.stdout,
        result.stderr,
        result.duration_s,
        timed_out=result.timed_out,
        start_error=result.start_error,
        executor=result.executor,
        breaches=result.breaches,
    )
