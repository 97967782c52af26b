"""The ``local`` executor: an agent command run on this host, fenced by the kernel.

When the daemon is root (the usual case: ``loopbus up`` as a service), each run gets:

* a uid of its own from ``[agents] uids``, not used by another live run (:mod:`.uids`),
  no supplementary groups;
* an empty capability bounding set and ``no_new_privs`` (nothing it executes can gain a
  privilege back: no set-uid program, no file capability);
* a control group of its own (:mod:`.cgroups`) holding its memory and process limits,
  whose counters say afterwards whether the kernel stopped the run at either: a process
  OOM-killed is a ``memory`` breach, a fork refused at the limit a ``processes`` one;
* resource limits: ``RLIMIT_CPU`` (past the soft limit SIGXCPU, past the hard one
  SIGKILL) and ``RLIMIT_NOFILE``; where no control group can be made (said once in the
  log), ``RLIMIT_AS`` (memory) and ``RLIMIT_NPROC`` (the per-run uid makes the process
  limit the run's own) instead, and then a memory or process breach fails inside the
  command and goes unreported;
* its own session and process group; a timeout or a cancellation kills the group and then
  every process of the run's uid (a child that left the group with ``setsid`` included);
* the worktree lent to that uid for the run (its root made 0700, so another run's uid
  cannot list it) and taken back after every process of the run is gone
  (:mod:`.lending`), so the daemon can commit it;
* a private temporary directory (``HOME`` and ``TMPDIR``), owned by that uid, 0700.

Where bubblewrap (``bwrap``) runs here (a probe succeeds), the run is also wrapped in new
namespaces that hide the rest of the filesystem (:mod:`.bwrap` has the layout): the data
directory, credentials, signing keys, other units' worktrees and the project's shared
repository do not exist inside. bwrap runs as root (it may then bind paths under a 0700
home, as a pyenv or pipx interpreter in ``/root`` is), and a small step inside drops to
the run's uid before the command starts.

Without bubblewrap (or with ``namespaces=False``) the uid is the fence: the command sees the
host's filesystem as an ordinary user would, so the data directory (0700) and other runs'
worktrees are closed to it, but world-readable host files are not (docs/security.md). A
program that uid cannot reach is told as such, with the fix (:mod:`.launch`, the first
program of every run).

When the daemon is not root, bubblewrap is required: an unprivileged user namespace is then
the only fence (the command runs as the daemon's own uid inside it, and the process limit
counts that user's processes). :meth:`LocalExecutor.available` says why it cannot run.

The network list: with an empty ``spec.network`` (the default) the command has no network
at all (bubblewrap path). This executor cannot filter by host and port: a non-empty list
gives the command the host's network as it is (docs/security.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from pathlib import Path

import structlog

from workers.agents import cgroups, streams, uids
from workers.agents.bwrap import Bubblewrap
from workers.agents.cgroups import RunGroup
from workers.agents.launch import BUBBLEWRAP_FAILS, LAUNCH, NO_BUBBLEWRAP
from workers.agents.lending import Owner, hand_tree, owner_of, take_back
from workers.agents.sandbox import Breach, ExecutorKind, SandboxResult, SandboxSpec
from workers.agents.uids import DEFAULT_UIDS, LAUNCHER, LOCK_DIR, Lease, NoFreeUid

log = structlog.get_logger()

UNSET = -1
"""A limit the launcher leaves alone (the run's control group holds it)."""

JOIN = (
    'while [ "$1" != -- ]; do echo $$ > "$1" || { echo "loopbus: cannot join the '
    'run\'s control group ($1)" >&2; exit 125; }; shift; done; shift; exec "$@"'
)
"""The step before everything else of a run (``/bin/sh``, as the daemon's user): it puts
its own pid in the run's control groups, then becomes the run, so every process of the run
(bubblewrap's included) is counted from its first instruction."""

_told: set[str] = set()
"""Why no control group could be made, each said once per process."""


class LocalExecutor:
    """Runs a :class:`SandboxSpec` on this host (see this module's docstring).

    ``namespaces``: ``None`` uses bubblewrap when it runs here, ``False`` never (the
    uid-only fence; root only), ``True`` requires it. ``cgroups``: ``False`` never makes a
    control group (the rlimits alone, as where none can be made).
    """

    kind: ExecutorKind = "local"

    def __init__(
        self,
        *,
        uids: tuple[int, int] = DEFAULT_UIDS,
        namespaces: bool | None = None,
        bwrap: str | None = None,
        lock_dir: Path = LOCK_DIR,
        cgroups: bool = True,
    ) -> None:
        self.uids = uids
        self.namespaces = namespaces
        self.bubblewrap = Bubblewrap(
            bwrap if bwrap is not None else shutil.which("bwrap"), as_root=self.as_root
        )
        self.lock_dir = lock_dir
        self.cgroups = cgroups

    @property
    def as_root(self) -> bool:
        return os.geteuid() == 0

    async def available(self) -> str | None:
        if self.as_root:
            problem = uids.check_lock_dir(self.lock_dir)
            if problem is not None:
                return problem
            if self.namespaces:
                return await self.bubblewrap.problem()
            return None
        if self.namespaces is False:
            return (
                "the local executor without namespaces needs a root daemon (it runs each "
                "agent as a uid of its own); run the daemons as root or install bubblewrap"
            )
        return await self.bubblewrap.problem()

    async def wraps(self) -> bool:
        """Whether a run is wrapped in bubblewrap's namespaces (it runs here and is wanted)."""
        return self.namespaces is not False and await self.bubblewrap.problem() is None

    async def uid_only(self) -> bool:
        """Whether a run's own uid is its only fence: a root daemon that does not wrap it in
        bubblewrap (``namespaces=False``, or bubblewrap absent or failing here). The run
        then sees the host's files as an ordinary user would."""
        return self.as_root and self.namespaces is not True and not await self.wraps()

    async def fix(self) -> str:
        """What a uid-only run's refusal names as the fix for a folder closed to its uid,
        before "or put it where any user can read it": install bubblewrap where it is not
        installed, nothing about it where it is installed but fails here (it would change
        nothing) nor where it is not wanted (``namespaces=False``)."""
        if self.namespaces is False:
            return ""
        if self.bubblewrap.path is None:
            return NO_BUBBLEWRAP
        return BUBBLEWRAP_FAILS if await self.bubblewrap.problem() is not None else ""

    async def run(self, spec: SandboxSpec) -> SandboxResult:
        started = time.monotonic()
        if not spec.argv:
            return _not_started("no command to run: the agent's argv is empty", started)
        problem = await self.available()
        if problem is not None:
            return _not_started(problem, started)
        wrapped = await self.wraps()
        fix = "" if wrapped else await self.fix()
        try:
            run = await asyncio.to_thread(_Run.prepare, self, spec, wrapped, fix)
        except (OSError, NoFreeUid) as exc:
            return _not_started(f"could not prepare the sandbox: {exc}", started)
        try:
            return await run.go(started)
        finally:
            await streams.unstoppable(asyncio.to_thread(run.finish))

    def group(self, spec: SandboxSpec, uid: int | None) -> RunGroup | None:
        """The run's control group, or ``None`` (why, said once) when none can be made."""
        if not self.cgroups:
            return None
        name = f"loopbus-run-{uid if uid is not None else os.getpid()}-{secrets.token_hex(4)}"
        limits = spec.limits
        made = cgroups.make(name, limits.memory_mb * 1024 * 1024, limits.processes)
        if isinstance(made, RunGroup):
            return made
        if made not in _told:
            _told.add(made)
            log.warning(
                "agent.limits_unobserved",
                reason=made,
                effect="memory and process limits are rlimits only: a breach fails inside "
                "the command and is not reported",
            )
        return None


@dataclass
class _Run:
    executor: LocalExecutor
    spec: SandboxSpec
    wrapped: bool
    fix: str
    tmp: Path
    lease: Lease | None
    lent: Owner | None
    worktree_mode: int
    group: RunGroup | None = None

    @classmethod
    def prepare(cls, executor: LocalExecutor, spec: SandboxSpec, wrapped: bool, fix: str) -> _Run:
        """The uid, the private temporary directory, the worktree lent to the uid and the
        control group (blocking: file system); ``fix`` is :meth:`LocalExecutor.fix`."""
        lease = uids.lease(executor.uids, executor.lock_dir) if executor.as_root else None
        tmp = Path(tempfile.mkdtemp(prefix="loopbus-agent-"))
        lent: Owner | None = None
        mode = spec.worktree.stat().st_mode & 0o7777
        try:
            if lease is not None:
                os.chown(tmp, lease.uid, lease.uid)
                lent = owner_of(spec.worktree)
                hand_tree(spec.worktree, Owner(lease.uid, lease.uid))
                spec.worktree.chmod(0o700)
        except BaseException:
            if lent is not None:
                take_back(spec.worktree, lent)
            shutil.rmtree(tmp, ignore_errors=True)
            if lease is not None:
                uids.release(lease)
            raise
        group = executor.group(spec, lease.uid if lease is not None else None)
        return cls(executor, spec, wrapped, fix, tmp, lease, lent, mode, group)

    def argv(self) -> list[str]:
        spec = self.spec
        limits = spec.limits
        held = self.group is not None  # the group holds memory and processes
        launch = [
            str(LAUNCHER),
            "-I",
            "-S",
            "-c",
            LAUNCH,
            str(self.lease.uid if self.lease is not None else -1),
            str(UNSET if held else limits.memory_mb * 1024 * 1024),
            str(limits.cpu_time_s),
            str(limits.open_files),
            str(UNSET if held else limits.processes),
            str(int(self.wrapped)),
            self.fix,
            json.dumps({**spec.env, "HOME": str(self.tmp), "TMPDIR": str(self.tmp)}),
            *spec.argv,
        ]
        if self.wrapped:
            launch = self.executor.bubblewrap.wrap(spec, self.tmp, launch)
        if self.group is None:
            return launch
        join = [str(p) for p in self.group.procs()]
        return ["/bin/sh", "-c", JOIN, "sh", *join, "--", *launch]

    async def go(self, started: float) -> SandboxResult:
        spec = self.spec
        # bubblewrap and the launcher run as the daemon's user: only a fixed environment
        # reaches them (the run's own is applied by the launcher once it has dropped).
        env = {"PATH": os.defpath, "LANG": "C.UTF-8"}
        try:
            proc = await asyncio.create_subprocess_exec(
                *self.argv(),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=str(spec.cwd or spec.worktree),
                env=env,
                start_new_session=True,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            return _not_started(f"{spec.argv[0]}: {reason}", started)
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        out = asyncio.ensure_future(streams.drain(proc.stdout))
        err = asyncio.ensure_future(streams.drain(proc.stderr))
        feed = asyncio.ensure_future(streams.feed(proc.stdin, spec.stdin))
        try:
            await asyncio.wait_for(self._until_done(proc, out, err), spec.timeout_s)
        except TimeoutError:
            await asyncio.to_thread(self.kill, proc.pid)
            with contextlib.suppress(Exception):
                await proc.wait()
            for task in (out, err, feed):
                task.cancel()
            return SandboxResult(
                "local",
                None,
                b"",
                b"",
                time.monotonic() - started,
                timed_out=True,
                breaches=("timeout", *self._observed()),
            )
        except BaseException:
            self.kill(proc.pid)
            for task in (out, err, feed):
                task.cancel()
            raise
        feed.cancel()
        duration = time.monotonic() - started
        code = proc.returncode
        return SandboxResult(
            "local",
            code,
            out.result(),
            err.result(),
            duration,
            breaches=self._breaches(code, duration),
        )

    async def _until_done(
        self, proc: asyncio.subprocess.Process, out: Awaitable[bytes], err: Awaitable[bytes]
    ) -> None:
        pipes = asyncio.ensure_future(streams.both(out, err))
        exited = asyncio.ensure_future(streams.exited(proc))
        try:
            await asyncio.wait([pipes, exited], return_when=asyncio.FIRST_COMPLETED)
            if not pipes.done():
                # The command is over but its output is still held open: whatever it left
                # running (in the background, in another session) goes with it.
                await asyncio.to_thread(self.kill, proc.pid)
            await pipes
            await proc.wait()
        finally:
            exited.cancel()

    def _observed(self) -> tuple[Breach, ...]:
        """What the run's control group counted (nothing without one)."""
        return self.group.breaches() if self.group is not None else ()

    def _breaches(self, code: int | None, duration: float) -> tuple[Breach, ...]:
        observed = self._observed()
        if code is None:
            return observed
        signalled = -code if code < 0 else code - 128 if self.wrapped and code > 128 else 0
        if signalled == signal.SIGXCPU:
            return ("cpu", *observed)
        could_spend = duration * (os.cpu_count() or 1)
        if (
            signalled == signal.SIGKILL
            and could_spend >= self.spec.limits.cpu_time_s
            and "memory" not in observed  # the OOM killer's SIGKILL, not the CPU limit's
        ):
            return ("cpu", *observed)  # the hard limit; an earlier SIGKILL cannot be it
        return observed

    def kill(self, pid: int) -> None:
        """Kill the command's process group, then every process of the run's uid."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        if self.lease is not None:
            uids.sweep(self.lease.uid)

    def finish(self) -> None:
        """After the run (blocking): nothing of its uid alive, the worktree back with its
        owner, the private temporary directory gone, the control group removed, the uid
        free for another run."""
        if self.lease is not None:
            uids.sweep(self.lease.uid)
        if self.group is not None:
            left = self.group.remove()
            if left:
                log.warning("agent.cgroup_left", folders=[str(p) for p in left])
        if self.lent is not None:
            take_back(self.spec.worktree, self.lent)
            self.spec.worktree.chmod(self.worktree_mode)
        shutil.rmtree(self.tmp, ignore_errors=True)
        if self.lease is not None:
            uids.release(self.lease)


def _not_started(reason: str, started: float) -> SandboxResult:
    return SandboxResult("local", None, b"", b"", time.monotonic() - started, start_error=reason)
