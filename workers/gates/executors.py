"""Where a check's command runs: a subprocess in a private checkout, or a container.

Both executors take a :class:`RunSpec` (the words to run, the checkout, a private scratch
folder, a scrubbed environment, a timeout) and return a :class:`RunOutput` that says how
the command ended — exit code, killing signal, timeout, or "could not start" — with its
output and, where known, its cost. They never decide pass or fail; the parsers do.

* :class:`SubprocessExecutor` (the default) starts the command through ``wrap.py`` as the
  leader of a new process group, so a timeout (or a cancelled run) kills the whole tree,
  and ``wait4`` reports the tree's CPU time and peak memory.
* :class:`ContainerExecutor` runs it through aiodocker in the check's ``image`` with the
  checkout mounted at ``/work``; it is used only when a check names an image and a Docker
  engine answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from schemas.gates import Cost

WRAPPER = Path(__file__).with_name("wrap.py")
PLUGIN_DIR = Path(__file__).with_name("pytest_plugin")
KILL_GRACE_S = 2.0
OUTPUT_CAP = 64 * 1024 * 1024  # bytes of stdout/stderr kept for parsing; more is truncated

PathRole = Literal["work", "out", "plugin"]


@dataclass(frozen=True)
class RunSpec:
    """One run of one command. ``env`` is complete: nothing else is inherited."""

    argv: list[str]
    workdir: Path
    outdir: Path
    env: dict[str, str]
    timeout_s: float
    image: str | None = None
    interpreter_dir: str | None = None  # [project] python's folder: a sandbox must show it


@dataclass(frozen=True)
class RunOutput:
    """How a command ended. Exactly one of: ``start_error`` (never started), ``timed_out``
    (killed by us), ``signal`` (killed by someone else), or an ``exit_code``."""

    executor: Literal["subprocess", "container"]
    duration_s: float
    exit_code: int | None = None
    signal: int | None = None
    timed_out: bool = False
    start_error: str | None = None
    stdout: bytes = b""
    stderr: bytes = b""
    cost: Cost | None = None
    notes: list[str] = field(default_factory=list)

    def output_tail(self, limit: int = 2000) -> str:
        text = (self.stdout + b"\n" + self.stderr).decode("utf-8", errors="replace").strip()
        return text[-limit:]


class Executor(Protocol):
    """Runs a :class:`RunSpec`; ``view`` says how the command sees one of the spec's folders."""

    kind: Literal["subprocess", "container"]

    def view(self, role: PathRole, spec_dirs: tuple[Path, Path]) -> str: ...

    async def run(self, spec: RunSpec) -> RunOutput: ...


class SubprocessExecutor:
    """A process group in the checkout, the environment exactly as given, a hard timeout."""

    kind: Literal["subprocess", "container"] = "subprocess"

    def view(self, role: PathRole, spec_dirs: tuple[Path, Path]) -> str:
        workdir, outdir = spec_dirs
        return str({"work": workdir, "out": outdir, "plugin": PLUGIN_DIR}[role])

    async def run(self, spec: RunSpec) -> RunOutput:
        status_file = spec.outdir / "status.json"
        out_path, err_path = spec.outdir / "stdout", spec.outdir / "stderr"
        started = time.monotonic()
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            try:
                process = await asyncio.create_subprocess_exec(
                    sys.executable,
                    "-I",
                    "-S",
                    str(WRAPPER),
                    str(status_file),
                    *spec.argv,
                    cwd=spec.workdir,
                    env=spec.env,
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    start_new_session=True,
                )
            except OSError as exc:
                return RunOutput(
                    "subprocess", time.monotonic() - started, start_error=f"runner: {exc}"
                )
        timed_out = False
        try:
            await asyncio.wait_for(process.wait(), spec.timeout_s)
        except TimeoutError:
            timed_out = True
            await _kill_group(process)
        except asyncio.CancelledError:
            await _kill_group(process)
            raise
        finally:
            _signal_group(process.pid, signal.SIGKILL)  # leave nothing behind
        duration = time.monotonic() - started
        stdout, stderr = _read_capped(out_path), _read_capped(err_path)
        if timed_out:
            return RunOutput(
                "subprocess",
                duration,
                timed_out=True,
                stdout=stdout,
                stderr=stderr,
                notes=[f"timed out after {spec.timeout_s:g}s; the process group was killed"],
            )
        return _finished(_read_status(status_file), process.returncode, duration, stdout, stderr)


def _finished(
    status: dict[str, Any] | None,
    returncode: int | None,
    duration: float,
    stdout: bytes,
    stderr: bytes,
) -> RunOutput:
    """What a command that ended (not timed out) did, from the wrapper's status file: its
    exit code and cost, a signal, a start error, or, with no status file at all, that its
    process group was killed from outside (the wrapper had no chance to write one)."""
    if status is None:
        code = returncode or 0
        sig = -code if code < 0 else None
        return RunOutput(
            "subprocess",
            duration,
            signal=sig or signal.SIGKILL,
            stdout=stdout,
            stderr=stderr,
            notes=["the command's process group was killed from outside"],
        )
    if "start_error" in status:
        return RunOutput(
            "subprocess",
            duration,
            start_error=str(status["start_error"]),
            stdout=stdout,
            stderr=stderr,
        )
    cost = Cost(cpu_s=float(status["cpu_s"]), max_rss_kb=int(status["max_rss_kb"]))
    if status.get("signal") is not None:
        return RunOutput(
            "subprocess",
            duration,
            signal=int(status["signal"]),
            stdout=stdout,
            stderr=stderr,
            cost=cost,
        )
    return RunOutput(
        "subprocess", duration, exit_code=int(status["rc"]), stdout=stdout, stderr=stderr, cost=cost
    )


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


async def _kill_group(process: asyncio.subprocess.Process) -> None:
    """SIGTERM the group, give it a moment, then SIGKILL whatever is left of it."""
    _signal_group(process.pid, signal.SIGTERM)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(process.wait()), KILL_GRACE_S)
    _signal_group(process.pid, signal.SIGKILL)
    await process.wait()


def _read_capped(path: Path) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read(OUTPUT_CAP)
    except FileNotFoundError:
        return b""


def _read_status(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (FileNotFoundError, ValueError):
        return None
    return data if isinstance(data, dict) else None


# -- containers ------------------------------------------------------------------------

CONTAINER_WORK = "/work"
CONTAINER_OUT = "/loopbus/out"
CONTAINER_PLUGIN = "/loopbus/plugin"
DEFAULT_SOCKET = Path("/var/run/docker.sock")


def docker_configured() -> str | None:
    """Where a Docker engine should be (``DOCKER_HOST`` or the default socket), or ``None``."""
    if os.environ.get("DOCKER_HOST"):
        return os.environ["DOCKER_HOST"]
    if DEFAULT_SOCKET.is_socket():
        return f"unix://{DEFAULT_SOCKET}"
    return None


async def docker_reachable(timeout: float = 5.0) -> str | None:
    """``None`` when an engine answers; otherwise one line saying why not."""
    where = docker_configured()
    if where is None:
        return f"no Docker engine: DOCKER_HOST is unset and {DEFAULT_SOCKET} does not exist"
    import aiodocker

    try:
        docker = aiodocker.Docker()
    except ValueError as exc:
        return f"no Docker engine at {where}: {exc}"
    try:
        await asyncio.wait_for(docker.version(), timeout)
    except Exception as exc:  # any failure to answer means "not reachable", said in one line
        return f"Docker engine at {where} did not answer: {type(exc).__name__}: {exc}"
    finally:
        await docker.close()
    return None


class ContainerExecutor:
    """The command in ``spec.image``; the checkout at /work, as the calling user's uid."""

    kind: Literal["subprocess", "container"] = "container"

    def view(self, role: PathRole, spec_dirs: tuple[Path, Path]) -> str:
        return {"work": CONTAINER_WORK, "out": CONTAINER_OUT, "plugin": CONTAINER_PLUGIN}[role]

    async def run(self, spec: RunSpec) -> RunOutput:
        import aiodocker
        from aiodocker.exceptions import DockerError

        assert spec.image is not None
        started = time.monotonic()
        docker = aiodocker.Docker()
        container = None
        try:
            try:
                await docker.images.inspect(spec.image)
            except DockerError:
                try:
                    await docker.images.pull(spec.image)
                except DockerError as exc:
                    return RunOutput(
                        "container",
                        time.monotonic() - started,
                        start_error=f"image {spec.image} could not be pulled: {exc.message}",
                    )
            config: dict[str, Any] = {
                "Image": spec.image,
                "Cmd": list(spec.argv),
                "WorkingDir": CONTAINER_WORK,
                "Env": [f"{k}={v}" for k, v in sorted(spec.env.items())],
                "User": f"{os.getuid()}:{os.getgid()}",
                "HostConfig": {
                    "Binds": [
                        f"{spec.workdir}:{CONTAINER_WORK}:rw",
                        f"{spec.outdir}:{CONTAINER_OUT}:rw",
                        f"{PLUGIN_DIR}:{CONTAINER_PLUGIN}:ro",
                    ],
                },
            }
            try:
                container = await docker.containers.create(config)
                await container.start()
            except DockerError as exc:
                return RunOutput(
                    "container",
                    time.monotonic() - started,
                    start_error=f"container did not start: {exc.message}",
                )
            timed_out = False
            code: int | None = None
            try:
                answer = await asyncio.wait_for(container.wait(), spec.timeout_s)
                code = int(answer.get("StatusCode", -1))
            except TimeoutError:
                timed_out = True
                with contextlib.suppress(DockerError):
                    await container.kill()
            stdout = "".join(await container.log(stdout=True)).encode()
            stderr = "".join(await container.log(stderr=True)).encode()
            duration = time.monotonic() - started
            if timed_out:
                return RunOutput(
                    "container",
                    duration,
                    timed_out=True,
                    stdout=stdout,
                    stderr=stderr,
                    notes=[f"timed out after {spec.timeout_s:g}s; the container was killed"],
                )
            if code is not None and code > 128:  # killed by a signal inside the container
                return RunOutput(
                    "container", duration, signal=code - 128, stdout=stdout, stderr=stderr
                )
            return RunOutput("container", duration, exit_code=code, stdout=stdout, stderr=stderr)
        finally:
            if container is not None:
                with contextlib.suppress(DockerError):
                    await container.delete(force=True)
            await docker.close()
