"""The ``container`` executor: each agent run in its own container, through aiodocker.

What the container holds (docs/security.md, "The container executor", says what this
hides and what it does not):

* the root filesystem of ``spec.image``, read-only, with a private tmpfs at ``/tmp``
  (``TMPDIR`` and ``HOME`` point there: the two names this adds to ``spec.env``; Docker
  adds ``HOSTNAME`` and the image's ``ENV`` for names ``spec.env`` does not set);
* the worktree bind-mounted read-write and each of ``spec.read_only`` read-only, each at
  its host path; nothing else of the host's files;
* no network at all, or, when ``spec.network`` lists ``host:port`` pairs, a network of
  its own that reaches only those (:mod:`.fence`);
* an unprivileged uid: the worktree owner's when that is not root, else
  :data:`AGENT_UID`, to which the worktree is lent for the run (:mod:`.lend`); either
  way no file in it is set-user-ID or set-group-ID after the run;
* no capabilities, ``no-new-privileges``, memory (swap included), CPU share, process,
  open-file and CPU-time limits from ``spec.limits``.

The container is labelled (:mod:`.labels`) and always deleted before :meth:`run`
returns — after an exit, a timeout, an error or a cancellation — so ``docker ps -a
--filter label=org.loopbus.agent`` lists only runs in progress, and runs whose daemon
died, which :func:`.container_sweep.sweep` finishes. Output is read from an
attach stream, kept up to :data:`OUTPUT_CAP` bytes each, and never written to the
engine's log (its log driver is ``none``): an agent cannot fill the engine's disk.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
import uuid
from collections.abc import Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import structlog

from workers.agents.fence import Fence, FenceError, resolve
from workers.agents.labels import (
    AGENT_LABEL,
    DAEMON_LABEL,
    FENCE_LABEL,
    OWNER_LABEL,
    WORKTREE_LABEL,
    daemon_id,
)
from workers.agents.lending import Owner, hand_tree, owner_of, take_back
from workers.agents.sandbox import Breach, ExecutorKind, SandboxResult, SandboxSpec
from workers.gates.executors import OUTPUT_CAP, docker_reachable

if TYPE_CHECKING:
    import aiodocker
    from aiodocker.containers import DockerContainer
    from aiodocker.stream import Stream

log = structlog.get_logger()
T = TypeVar("T")

AGENT_UID = 64_999
"""The uid (and gid) an agent runs as when the worktree belongs to root: unused on the
host, so lending the worktree to it gives no host process anything."""
CPU_KILLS = (128 + signal.SIGKILL, 128 + signal.SIGXCPU)
"""Exit codes of a command killed for CPU time. The command is the container's PID 1,
which the kernel shields from every signal sent inside its namespace that it has no
handler for (SIGKILL included), so it ignores SIGXCPU and dies only at the hard limit, by
SIGKILL; the memory killer's SIGKILL is told apart by ``State.OOMKilled``, ours only
ends a run that timed out, and one from outside in a run too short to have used its CPU
time is not counted (:func:`_could_use`). A command can exit 137 on purpose: that only
misnames its own run."""
CONTAINER_TMP = "/tmp"
PULL_TIMEOUT_S = 600.0
REMOVAL_WAIT_S = 30.0
EXIT_GRACE_S = 10.0  # how long the output stream may lag behind the container's exit


def _refusal(spec: SandboxSpec) -> str | None:
    """Why ``spec`` cannot run here at all, in one line, or ``None``."""
    if spec.image is None:
        return "no image for the container executor: set [agents] image in loopbus.toml"
    if not spec.argv:
        return "no command to run: the agent's argv is empty"
    if not spec.worktree.is_absolute() or not spec.worktree.is_dir():
        return f"worktree {spec.worktree} is not an existing absolute folder"
    if spec.worktree.is_symlink():
        # Lending it would hand out the link, and walking it would follow it.
        return f"worktree {spec.worktree} is a symbolic link: give its real path"
    for path in spec.read_only:
        if not path.is_absolute() or not path.exists():
            return f"read-only path {path} is not an existing absolute path: fix the brief"
    for path in spec.writable:
        if not path.is_absolute() or not path.is_dir():
            return f"writable path {path} is not an existing absolute folder: fix [agents] writable"
    return None


def _config(spec: SandboxSpec, user: Owner, owner: Owner, fence: Fence | None) -> dict[str, Any]:
    """The engine's create request for ``spec``, run as ``user`` in a worktree that goes
    back to ``owner``, on ``fence``'s network when there is one and on none otherwise."""
    assert spec.image is not None
    limits = spec.limits
    memory = limits.memory_mb * 1024 * 1024
    env = {**spec.env, "TMPDIR": CONTAINER_TMP, "HOME": CONTAINER_TMP}
    mounts = [_bind(spec.worktree, read_only=False)]
    mounts += [_bind(path, read_only=True) for path in spec.read_only]
    # [agents] writable: shared folders the operator named (a cache); mounted as they are,
    # so the agent's uid writes there only where the folder's modes let it.
    mounts += [_bind(path, read_only=False) for path in spec.writable]
    with_stdin = bool(spec.stdin)
    return {
        "Image": spec.image,
        # The image's own entrypoint must not run first: the agent's argv is the process.
        "Entrypoint": [spec.argv[0]],
        "Cmd": list(spec.argv[1:]),
        # A reviewer or investigator works in its read-only copy (spec.cwd), not its worktree.
        "WorkingDir": str(spec.cwd or spec.worktree),
        "Env": [f"{name}={value}" for name, value in sorted(env.items())],
        "User": f"{user.uid}:{user.gid}",
        # What container_sweep needs to finish this run if our process dies mid-run.
        "Labels": {
            AGENT_LABEL: "1",
            WORKTREE_LABEL: str(spec.worktree),
            DAEMON_LABEL: daemon_id(),
            OWNER_LABEL: f"{owner.uid}:{owner.gid}",
            FENCE_LABEL: "" if fence is None else fence.run_id,
        },
        "AttachStdin": with_stdin,
        "OpenStdin": with_stdin,
        "StdinOnce": with_stdin,  # the stdin attach closing is the command's end of input
        "AttachStdout": True,
        "AttachStderr": True,
        "Tty": False,
        "NetworkDisabled": fence is None,
        "HostConfig": {
            "Mounts": mounts,
            "Tmpfs": {CONTAINER_TMP: f"rw,exec,nosuid,nodev,size={limits.memory_mb}m,mode=1777"},
            "ReadonlyRootfs": True,
            "NetworkMode": "none" if fence is None else fence.name,
            "ExtraHosts": [] if fence is None else fence.extra_hosts(),
            "CapDrop": ["ALL"],
            "SecurityOpt": ["no-new-privileges"],
            "IpcMode": "private",
            "Memory": memory,
            "MemorySwap": memory,  # equal to Memory: no swap beyond the limit
            "NanoCpus": int(limits.cpus * 1_000_000_000),
            "PidsLimit": limits.processes,
            "Ulimits": [
                {"Name": "nofile", "Soft": limits.open_files, "Hard": limits.open_files},
                {"Name": "cpu", "Soft": limits.cpu_time_s, "Hard": limits.cpu_time_s},
            ],
            "OomScoreAdj": 1000,  # under host memory pressure the agent goes first
            "LogConfig": {"Type": "none", "Config": {}},
            "AutoRemove": False,  # we read State.OOMKilled after the exit, then delete
        },
    }


def _could_use(spec: SandboxSpec, wall_s: float) -> bool:
    """Whether a run this long could have used its CPU-time limit: CPU time is at most
    wall time times the CPUs it may use. A SIGKILL from outside (an operator, a removal)
    in a shorter run is not a CPU breach."""
    cpus = spec.limits.cpus if spec.limits.cpus > 0 else float(os.cpu_count() or 1)
    return wall_s * cpus >= spec.limits.cpu_time_s


def _bind(path: Path, *, read_only: bool) -> dict[str, Any]:
    # Mounts (not Binds): a missing source is an error instead of a folder the engine
    # creates as root, and a path holding ':' cannot be misparsed.
    return {"Type": "bind", "Source": str(path), "Target": str(path), "ReadOnly": read_only}


@dataclass
class _Output:
    """stdout and stderr as read from the attach stream, each cut at the cap."""

    stdout: bytearray = field(default_factory=bytearray)
    stderr: bytearray = field(default_factory=bytearray)

    def add(self, stream: int, data: bytes) -> None:
        target = self.stdout if stream == 1 else self.stderr
        room = OUTPUT_CAP - len(target)
        if room > 0:
            target += data[:room]


async def _drain(stream: Stream, into: _Output) -> None:
    # Reading on past the cap keeps the container from blocking on a full pipe.
    while (message := await stream.read_out()) is not None:
        into.add(message.stream, message.data)


async def _feed(stream: Stream, data: bytes) -> None:
    # A command that exits without reading its input closes the pipe: not our failure.
    with contextlib.suppress(ConnectionError, RuntimeError):
        await stream.write_in(data)
    await stream.close()


class ContainerExecutor:
    """Runs a :class:`SandboxSpec` in a fresh container (see this module's docstring)."""

    kind: ExecutorKind = "container"

    def __init__(self, *, agent_uid: int = AGENT_UID) -> None:
        self.agent_uid = agent_uid

    async def available(self) -> str | None:
        return await docker_reachable()

    async def run(self, spec: SandboxSpec) -> SandboxResult:
        started = time.monotonic()
        refusal = _refusal(spec)
        if refusal is not None:
            return _not_started(refusal, started)
        import aiodocker

        try:
            docker = aiodocker.Docker()
        except ValueError as exc:
            return _not_started(f"no Docker engine: {exc}", started)
        try:
            missing = await _ensure_image(docker, spec.image or "")
            if missing is not None:
                return _not_started(missing, started)
            owner = owner_of(spec.worktree)
            # A non-root owner is already unprivileged: run as it and change nothing.
            user = Owner(self.agent_uid, self.agent_uid) if owner.uid == 0 else owner
            run = _Run(docker, spec, user, owner, started)
            return await run.go()
        finally:
            await docker.close()


def _not_started(reason: str, started: float) -> SandboxResult:
    return SandboxResult(
        "container", None, b"", b"", time.monotonic() - started, start_error=reason
    )


async def _ensure_image(docker: aiodocker.Docker, image: str) -> str | None:
    """``None`` once ``image`` is on the engine (pulled once if missing), else why not."""
    from aiodocker.exceptions import DockerError

    try:
        await docker.images.inspect(image)
        return None
    except DockerError as exc:
        if exc.status != 404:
            return f"could not look up image {image!r} on the Docker engine: {exc.message}"
    try:
        await asyncio.wait_for(docker.images.pull(image), PULL_TIMEOUT_S)
        await docker.images.inspect(image)
        return None
    except (DockerError, TimeoutError) as exc:
        why = exc.message if isinstance(exc, DockerError) else f"no answer in {PULL_TIMEOUT_S:g}s"
        return (
            f"image {image!r} is not on the Docker engine and pulling it failed ({why}): "
            f"build or load it there (docker build -t {image} …, docker load) "
            "or set [agents] image in loopbus.toml to one that is"
        )


class _Run:
    """One container from create to delete, and the worktree lent for exactly that long.

    :meth:`go` always ends in :meth:`_teardown`, which runs to completion even when the
    caller is cancelled: the container is deleted and only then, when it is gone, the
    worktree goes back to ``owner`` (lent only when ``user`` is not ``owner``), with no
    set-id bits: a set-uid file left by an agent that ran as a non-root owner would be a
    set-uid program of that owner for every other user of the host.
    """

    def __init__(
        self,
        docker: aiodocker.Docker,
        spec: SandboxSpec,
        user: Owner,
        owner: Owner,
        started: float,
    ) -> None:
        self.docker, self.spec, self.user, self.owner = docker, spec, user, owner
        self.started = started
        self.output = _Output()
        self.container: DockerContainer | None = None
        self.streams: list[Stream] = []
        self.tasks: list[asyncio.Task[None]] = []
        self.fence: Fence | None = None

    async def go(self) -> SandboxResult:
        from aiodocker.exceptions import DockerError

        try:
            result = await self._contain()
        except DockerError as exc:  # the engine failed us mid-run: a result, not a crash
            left = await _unstoppable(self._teardown())
            why = f"the Docker engine failed during the run: {exc.message}"
            return _not_started(why if left is None else f"{why}; {left}", self.started)
        except BaseException:
            await _unstoppable(self._teardown())
            raise
        left = await _unstoppable(self._teardown())
        return result if left is None else _not_started(left, self.started)

    async def _contain(self) -> SandboxResult:
        from aiodocker.exceptions import DockerError

        spec = self.spec
        if spec.network:
            try:
                allowed = await resolve(spec.network)
                # Assigned before opening, so a half-built fence is still torn down.
                run_id = uuid.uuid4().hex[:12]
                labels = {AGENT_LABEL: "1", DAEMON_LABEL: daemon_id(), FENCE_LABEL: run_id}
                self.fence = Fence(self.docker, run_id, allowed, labels)
                await self.fence.open()
            except (FenceError, DockerError) as exc:
                why = exc.message if isinstance(exc, DockerError) else str(exc)
                return _not_started(f"network fence not built: {why}", self.started)
        if self.user != self.owner:
            await asyncio.to_thread(hand_tree, spec.worktree, self.user)
        try:
            self.container = container = await self.docker.containers.create(
                _config(spec, self.user, self.owner, self.fence)
            )
            # Attached before start, so not a byte of output is missed.
            out_stream = container.attach(stdout=True, stderr=True)
            self.streams.append(out_stream)
            await out_stream.__aenter__()
            self.tasks.append(asyncio.create_task(_drain(out_stream, self.output)))
            in_stream = container.attach(stdin=True) if spec.stdin else None
            if in_stream is not None:
                self.streams.append(in_stream)
                await in_stream.__aenter__()
            # Timed from before the start call: the command may run (and spend CPU) a
            # while before start() returns on a busy machine, and a clock started after
            # it would call a real CPU-limit kill too short to be one.
            running_since = time.monotonic()
            await container.start()
        except DockerError as exc:
            return _not_started(f"container did not start: {exc.message}", self.started)
        if in_stream is not None:
            self.tasks.append(asyncio.create_task(_feed(in_stream, spec.stdin)))
        try:
            answer = await asyncio.wait_for(container.wait(), spec.timeout_s)
        except TimeoutError:
            with contextlib.suppress(DockerError):
                await container.kill()
            return self._result(None, timed_out=True, breaches=["timeout"])
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self.tasks[0]), EXIT_GRACE_S)
        state = (await container.show())["State"]
        code = int(answer.get("StatusCode", state.get("ExitCode", -1)))
        breaches: list[Breach] = []
        if state.get("OOMKilled"):
            breaches.append("memory")
        elif code in CPU_KILLS and _could_use(spec, time.monotonic() - running_since):
            breaches.append("cpu")
        # Killed for a breach is "killed": no exit code of its own.
        return self._result(None if breaches else code, breaches=breaches)

    def _result(
        self, code: int | None, *, timed_out: bool = False, breaches: list[Breach]
    ) -> SandboxResult:
        return SandboxResult(
            "container",
            code,
            bytes(self.output.stdout),
            bytes(self.output.stderr),
            time.monotonic() - self.started,
            timed_out=timed_out,
            breaches=tuple(breaches),
        )

    async def _teardown(self) -> str | None:
        """Delete the container, then give the worktree back; ``None`` when both were
        done, else what is left over and how to finish it."""
        from aiodocker.exceptions import DockerError

        for task in self.tasks:
            task.cancel()
        for stream in self.streams:
            with contextlib.suppress(Exception):
                await stream.close()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        container = self.container
        if container is not None:
            try:
                await container.delete(force=True)
            except DockerError as exc:
                if exc.status != 404 and not await _gone(container):
                    # Its processes may still run as the agent's uid: walking the tree
                    # now would race them swapping folders for links. Leave it lent.
                    log.warning(
                        "agent container not deleted", container=container.id, error=exc.message
                    )
                    return (
                        f"container {container.id} could not be deleted ({exc.message}); "
                        f"{self.spec.worktree} stays owned by uid {self.user.uid}: "
                        f"run docker rm -f {container.id}, then chown the worktree back"
                    )
        if self.fence is not None:
            try:
                await self.fence.close()
            except FenceError as exc:  # what is left only narrows: say so, do not fail
                log.warning("agent network fence not fully removed", error=str(exc))
        await asyncio.to_thread(take_back, self.spec.worktree, self.owner)
        return None


async def _gone(container: DockerContainer) -> bool:
    """Whether ``container`` is gone, once a removal someone else started (the engine
    answers 409 "already in progress" to ours) has had up to a while to finish."""
    from aiodocker.exceptions import DockerError

    with contextlib.suppress(DockerError, TimeoutError):
        await asyncio.wait_for(container.wait(condition="removed"), REMOVAL_WAIT_S)
    try:
        await container.show()
    except DockerError as exc:
        return exc.status == 404
    return False


async def _unstoppable(work: Coroutine[Any, Any, T]) -> T:
    """``work``'s result, awaited to its end even through cancellations, which are then
    passed on: cleanup that stops halfway leaves a container or a lent worktree behind."""
    task = asyncio.ensure_future(work)
    cancelled = False
    while True:
        try:
            result = await asyncio.shield(task)
        except asyncio.CancelledError:
            if task.done():
                raise
            cancelled = True
            continue
        if cancelled:
            raise asyncio.CancelledError
        return result
