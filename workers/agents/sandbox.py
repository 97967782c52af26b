"""What an agent's command may see and use: the contract between the agent runner and its
executors (``local`` and ``container``).

An agent command (builder, reviewer, investigator, and any agent role added later) is
untrusted code run by a daemon that holds the system credential. The runner hands an
executor one :class:`SandboxSpec`; the executor must run ``argv`` so that it sees:

* ``worktree`` read-write (it is the command's working directory), at the same path as on
  the host, so paths in what the command prints mean the same thing on both sides;
* each of ``read_only`` read-only, at the same path as on the host (what its brief names,
  and the interpreter and packages that run the agents loopbus ships);
* a private, empty temporary directory (``TMPDIR`` and ``HOME`` point into it);
* nothing else of the host's state: not the data directory (credentials, signing keys,
  daemon logs), not another unit's worktree, not the project's shared repository.

It never hands the command a NATS credential or URL: agents answer on stdout, and the
daemon publishes for them.

The executor reports how the run ended as a :class:`SandboxResult`; ``breaches`` names the
limits the executor saw the command hit (it says only what it can observe).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

ExecutorKind = Literal["local", "container", "none"]
Breach = Literal["timeout", "memory", "cpu", "processes", "open_files"]


@dataclass(frozen=True, slots=True)
class Limits:
    """Resource limits of one agent run. Each executor applies what its mechanism allows
    (docs/security.md says which)."""

    memory_mb: int = 4096
    cpu_time_s: int = 3600
    cpus: float = 1.0
    processes: int = 512
    open_files: int = 1024


@dataclass(frozen=True, slots=True)
class SandboxSpec:
    """One run of one agent command. ``env`` is complete: nothing else is inherited."""

    argv: list[str]
    stdin: bytes
    worktree: Path
    env: dict[str, str]
    timeout_s: float
    read_only: tuple[Path, ...] = ()
    limits: Limits = Limits()
    image: str | None = None  # container executor only
    network: tuple[str, ...] = ()  # host:port pairs the command may reach; () = none
    writable: tuple[Path, ...] = ()
    """More folders the command may write, at their host paths (``[agents] writable``: the
    operator's choice, such as a cache shared by every run)."""
    cwd: Path | None = None
    """The command's working directory when not ``worktree``: one of ``read_only`` (a
    reviewer runs in its read-only copy of the head, with an empty worktree of its own)."""


@dataclass(frozen=True, slots=True)
class SandboxResult:
    """How the command ended: ``exit_code`` (``None`` when killed or never started)."""

    executor: ExecutorKind
    exit_code: int | None
    stdout: bytes
    stderr: bytes
    duration_s: float
    timed_out: bool = False
    start_error: str | None = None
    breaches: tuple[Breach, ...] = field(default=())


class SandboxExecutor(Protocol):
    """Runs a :class:`SandboxSpec` as described in this module's docstring."""

    kind: ExecutorKind

    async def available(self) -> str | None:
        """``None`` when this executor can run agents here; else one line saying why not."""
        ...

    async def run(self, spec: SandboxSpec) -> SandboxResult: ...
