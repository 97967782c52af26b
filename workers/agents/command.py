"""What an external agent's command (reviewer, investigator, builder) did, its words, and
the bare subprocess ``[agents] sandbox = "none"`` runs it in.

Every agent command goes through :func:`workers.agents.runner.run_agent`, which
runs it in a sandbox; :func:`run_command` here is only the unsandboxed run the operator
chose with ``sandbox = "none"``. The command is split into words like a POSIX shell would
(no shell runs it), gets one document on stdin, runs in its own process group so a
timeout (or the daemon stopping) kills everything it started, and is judged by its exit
code and its stdout. Nothing it prints is trusted until the caller decodes it against its
schema.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class CommandResult:
    """What a command did: exit code (``None`` when killed or never started), output, time."""

    exit_code: int | None
    stdout: bytes
    stderr: bytes
    duration_s: float
    timed_out: bool = False
    start_error: str | None = None
    executor: str = "none"
    """Which executor ran it (``local``, ``container``; ``none``: unsandboxed, or refused)."""
    breaches: tuple[str, ...] = ()
    """Limits the executor saw the command hit (``timeout``, ``cpu`` …)."""

    def failure(self, timeout_s: float) -> str | None:
        """Why the run produced no answer at all, or ``None`` when it exited 0."""
        if self.start_error is not None:
            return f"could not start: {self.start_error}"
        if self.timed_out:
            return f"timed out after {timeout_s:g}s"
        if self.exit_code != 0:
            tail = self.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
            detail = f": {' | '.join(tail)}" if tail else ""
            return f"exited with code {self.exit_code}{detail}"
        return None


def argv_of(command: str, substitutions: Mapping[str, str]) -> list[str]:
    """The command's words with ``{name}`` placeholders filled in each word."""
    words = shlex.split(command)
    out = []
    for word in words:
        for name, value in substitutions.items():
            word = word.replace("{" + name + "}", value)
        out.append(word)
    return out


async def run_command(
    argv: list[str],
    *,
    stdin: bytes,
    cwd: Path,
    timeout_s: float,
    env: Mapping[str, str] | None = None,
    base_env: Mapping[str, str] | None = None,
) -> CommandResult:
    """Run ``argv`` in ``cwd`` with ``stdin``.

    The environment is ``base_env`` (the daemon's own when ``None``) plus ``env``; a caller
    that must not hand the daemon's environment on passes a scrubbed ``base_env``. A
    cancelled run kills the command's whole process group before the cancellation goes on.
    """
    started = time.monotonic()
    environment = dict(os.environ if base_env is None else base_env)
    environment.update(env or {})
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=str(cwd),
            env=environment,
            start_new_session=True,
        )
    except (OSError, KeyError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else str(exc)
        return CommandResult(None, b"", b"", 0.0, start_error=f"{argv[0]}: {reason}")
    try:
        stdout, stderr = await asyncio.wait_for(proc.communicate(stdin), timeout_s)
    except TimeoutError:
        _kill_group(proc.pid)
        with contextlib.suppress(Exception):
            await proc.wait()
        return CommandResult(None, b"", b"", time.monotonic() - started, timed_out=True)
    except asyncio.CancelledError:
        _kill_group(proc.pid)
        raise
    return CommandResult(proc.returncode, stdout, stderr, time.monotonic() - started)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
