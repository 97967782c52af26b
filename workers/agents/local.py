"""The ``local`` executor: an agent command run on this host, fenced by the kernel.

When the daemon is root (the usual case: ``loopbus up`` as a service), each run gets:

* a uid of its own from ``[agents] uids``, not used by another live run (a lock file per
  uid in a root-only folder, and no process of that uid alive), no supplementary groups;
* an empty capability bounding set and ``no_new_privs`` (nothing it executes can gain a
  privilege back: no set-uid program, no file capability);
* resource limits: ``RLIMIT_AS`` (memory), ``RLIMIT_CPU`` (past the soft limit SIGXCPU,
  past the hard one SIGKILL), ``RLIMIT_NOFILE`` and ``RLIMIT_NPROC`` (the per-run uid
  makes the process limit the run's own, so a fork bomb stops at it);
* its own session and process group; a timeout or a cancellation kills the group and then
  every process of the run's uid (a child that left the group with ``setsid`` included);
* the worktree lent to that uid for the run (its root made 0700, so another run's uid
  cannot list it) and taken back after every process of the run is gone
  (:mod:`.lending`), so the daemon can commit it;
* a private temporary directory (``HOME`` and ``TMPDIR``), owned by that uid, 0700.

Where bubblewrap (``bwrap``) runs here (a probe succeeds), the run is also wrapped in new
pid, ipc, uts and mount namespaces (and a network namespace with no interface but its
own loopback when ``spec.network`` is empty): the command's filesystem holds only
``/usr`` (and the ``/bin``, ``/sbin``, ``/lib*`` links or folders), the whole ``/etc``
read-only (host configuration: name resolution, certificates, users; loopbus keeps nothing
there, and files unreadable to an ordinary uid stay so), a private ``/proc``, a minimal
``/dev``, an empty private ``/tmp``, the read-only paths, the private temporary directory
and the worktree, each at its host path. The data directory, credentials, signing keys,
other units' worktrees and the project's shared repository do not exist inside. bwrap runs
as root (it may then bind paths under a 0700 home, as a pyenv or pipx interpreter in
``/root`` is), and a small step inside drops to the run's uid before the command starts.

Without bubblewrap (or with ``namespaces=False``) the uid is the fence: the command sees the
host's filesystem as an ordinary user would, so the data directory (0700) and other runs'
worktrees are closed to it, but world-readable host files are not (docs/security.md).

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
import fcntl
import json
import os
import pwd
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from loopbus.workers.agents.environment import outermost
from loopbus.workers.agents.lending import Owner, hand_tree, owner_of, take_back
from loopbus.workers.agents.sandbox import Breach, ExecutorKind, SandboxResult, SandboxSpec
from loopbus.workers.gates.executors import OUTPUT_CAP

T = TypeVar("T")

DEFAULT_UIDS = (60000, 60999)
LOCK_DIR = Path("/run/loopbus-agents")
"""Where a root daemon keeps one lock file per uid in use (0700, root's)."""
EXIT_POLL_S = 0.05
SWEEPS = 5  # kill(-1) passes over a run's uid; a fork racing one pass is caught by the next
SYSTEM_DIRS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")

LAUNCHER = Path(sys.executable).resolve()
"""loopbus's own interpreter, by its real path: it runs :data:`LAUNCH` and :data:`KILL_ALL`."""

LAUNCH = """\
import ctypes, json, os, resource, sys
uid, memory, cpu, files, processes = (int(word) for word in sys.argv[1:6])
env = json.loads(sys.argv[6])
argv = sys.argv[7:]
resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
resource.setrlimit(resource.RLIMIT_NOFILE, (files, files))
resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))
libc = ctypes.CDLL(None, use_errno=True)
if uid >= 0:
    for cap in range(64):
        libc.prctl(24, cap, 0, 0, 0)  # PR_CAPBSET_DROP; EINVAL past the kernel's last cap
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
    sys.stderr.write("loopbus: cannot set no_new_privs\\n")
    os._exit(126)
try:
    os.execvpe(argv[0], argv, env)
except OSError as exc:
    sys.stderr.write(f"{argv[0]}: {exc.strerror}\\n")
    os._exit(127)
"""
"""The first program of every run, started as the daemon's user by loopbus's own
interpreter (``-I -S``: nothing of the environment or site-packages): the limits, then (a
root daemon) the run's uid, no groups, an empty capability bounding set (dropped first: that
needs CAP_SETPCAP), then ``no_new_privs``, then the command, with the run's environment
(an argument: bubblewrap and this launcher start as the daemon's user, so nothing the
environment names — ``LD_PRELOAD`` of a check's ``env`` — may reach them). A fresh process, not a
``preexec_fn``: forking a threaded daemon and running Python (``dlopen``, imports) in the
child before exec can deadlock it."""

KILL_ALL = """\
import os, sys
uid = int(sys.argv[1])
os.setgroups([])
os.setresgid(uid, uid, uid)
os.setresuid(uid, uid, uid)
try:
    os.kill(-1, 9)  # every process of uid, in any session or pid namespace, but this one
except OSError:
    pass
"""


class LocalExecutor:
    """Runs a :class:`SandboxSpec` on this host (see this module's docstring).

    ``namespaces``: ``None`` uses bubblewrap when it runs here, ``False`` never (the
    uid-only fence; root only), ``True`` requires it.
    """

    kind: ExecutorKind = "local"

    def __init__(
        self,
        *,
        uids: tuple[int, int] = DEFAULT_UIDS,
        namespaces: bool | None = None,
        bwrap: str | None = None,
        lock_dir: Path = LOCK_DIR,
    ) -> None:
        self.uids = uids
        self.namespaces = namespaces
        self.bwrap = bwrap if bwrap is not None else shutil.which("bwrap")
        self.lock_dir = lock_dir
        self._probed: str | bool | None = False  # False: not probed yet

    @property
    def as_root(self) -> bool:
        return os.geteuid() == 0

    async def available(self) -> str | None:
        if self.as_root:
            problem = _check_lock_dir(self.lock_dir)
            if problem is not None:
                return problem
            if self.namespaces:
                return await self._bwrap_problem()
            return None
        if self.namespaces is False:
            return (
                "the local executor without namespaces needs a root daemon (it runs each "
                "agent as a uid of its own); run the daemons as root or install bubblewrap"
            )
        return await self._bwrap_problem()

    async def _bwrap_problem(self) -> str | None:
        """``None`` when bubblewrap can build a sandbox here; else why not (probed once)."""
        if self._probed is not False:
            return self._probed  # type: ignore[return-value]
        if self.bwrap is None:
            self._probed = (
                "bubblewrap (bwrap) is not installed: install it (apt-get install "
                "bubblewrap) or run agents in containers ([agents] image)"
            )
            return self._probed
        argv = [*self._bwrap_base(network=False), "--", "true"]
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
            )
            _, err = await asyncio.wait_for(proc.communicate(), 30)
        except (OSError, TimeoutError) as exc:
            self._probed = f"bubblewrap at {self.bwrap} did not run: {exc}"
            return self._probed
        if proc.returncode != 0:
            why = err.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no message"]
            self._probed = (
                f"bubblewrap at {self.bwrap} cannot make a sandbox here ({why[0]}); "
                "the kernel may forbid user namespaces"
            )
            return self._probed
        self._probed = None
        return None

    def _bwrap_base(self, *, network: bool) -> list[str]:
        assert self.bwrap is not None
        args = [
            self.bwrap,
            "--die-with-parent",
            "--new-session",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--hostname",
            "loopbus-agent",
        ]
        if not self.as_root:
            args.append("--unshare-user")
        if not network:
            args.append("--unshare-net")
        args += ["--ro-bind", "/usr", "/usr"]
        for name in SYSTEM_DIRS:
            path = Path("/", name)
            if path.is_symlink():
                args += ["--symlink", os.readlink(path), str(path)]
            elif path.is_dir():
                args += ["--ro-bind", str(path), str(path)]
        args += ["--ro-bind", "/etc", "/etc", "--proc", "/proc", "--dev", "/dev"]
        args += ["--tmpfs", "/tmp"]
        return args

    async def run(self, spec: SandboxSpec) -> SandboxResult:
        started = time.monotonic()
        if not spec.argv:
            return _not_started("no command to run: the agent's argv is empty", started)
        problem = await self.available()
        if problem is not None:
            return _not_started(problem, started)
        wrapped = self.namespaces is not False and await self._bwrap_problem() is None
        try:
            run = await asyncio.to_thread(_Run.prepare, self, spec, wrapped)
        except (OSError, NoFreeUid) as exc:
            return _not_started(f"could not prepare the sandbox: {exc}", started)
        try:
            return await run.go(started)
        finally:
            await _unstoppable(asyncio.to_thread(run.finish))


class NoFreeUid(Exception):
    """Raised when every uid of ``[agents] uids`` is held by a live run."""


@dataclass
class _Lease:
    uid: int
    fd: int


@dataclass
class _Run:
    executor: LocalExecutor
    spec: SandboxSpec
    wrapped: bool
    tmp: Path
    lease: _Lease | None
    lent: Owner | None
    worktree_mode: int

    @classmethod
    def prepare(cls, executor: LocalExecutor, spec: SandboxSpec, wrapped: bool) -> _Run:
        """The uid, the private temporary directory and the worktree lent to the uid
        (blocking: file system)."""
        lease = _lease(executor.uids, executor.lock_dir) if executor.as_root else None
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
                _release(lease)
            raise
        return cls(executor, spec, wrapped, tmp, lease, lent, mode)

    def argv(self) -> list[str]:
        spec = self.spec
        limits = spec.limits
        launch = [
            str(LAUNCHER),
            "-I",
            "-S",
            "-c",
            LAUNCH,
            str(self.lease.uid if self.lease is not None else -1),
            str(limits.memory_mb * 1024 * 1024),
            str(limits.cpu_time_s),
            str(limits.open_files),
            str(limits.processes),
            json.dumps({**spec.env, "HOME": str(self.tmp), "TMPDIR": str(self.tmp)}),
        ]
        if not self.wrapped:
            return [*launch, *spec.argv]
        executor = self.executor
        args = executor._bwrap_base(network=bool(spec.network))
        own = outermost([sys.base_prefix, sys.base_exec_prefix, str(LAUNCHER.parent.parent)])
        inside = [p for p in spec.read_only if _within(p, spec.worktree)]
        outside = [p for p in (*own, *spec.read_only) if p not in inside]
        made: set[str] = set()
        for path in outside:
            args += [*_parents(path, made), "--ro-bind", str(path), str(path)]
        for path in (*spec.writable, self.tmp, spec.worktree):
            args += [*_parents(path, made), "--bind", str(path), str(path)]
        for path in inside:
            args += ["--ro-bind", str(path), str(path)]
        args += ["--chdir", str(spec.cwd or spec.worktree), "--", *launch, *spec.argv]
        return args

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
        out = asyncio.ensure_future(_drain(proc.stdout))
        err = asyncio.ensure_future(_drain(proc.stderr))
        feed = asyncio.ensure_future(_feed(proc.stdin, spec.stdin))
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
                breaches=("timeout",),
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
        pipes = asyncio.ensure_future(_both(out, err))
        exited = asyncio.ensure_future(_exited(proc))
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

    def _breaches(self, code: int | None, duration: float) -> tuple[Breach, ...]:
        if code is None:
            return ()
        signalled = -code if code < 0 else code - 128 if self.wrapped and code > 128 else 0
        if signalled == signal.SIGXCPU:
            return ("cpu",)
        could_spend = duration * (os.cpu_count() or 1)
        if signalled == signal.SIGKILL and could_spend >= self.spec.limits.cpu_time_s:
            return ("cpu",)  # the hard limit; an earlier SIGKILL cannot be the CPU limit
        return ()

    def kill(self, pid: int) -> None:
        """Kill the command's process group, then every process of the run's uid."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        if self.lease is not None:
            _sweep(self.lease.uid)

    def finish(self) -> None:
        """After the run (blocking): nothing of its uid alive, the worktree back with its
        owner, the private temporary directory gone, the uid free for another run."""
        if self.lease is not None:
            _sweep(self.lease.uid)
        if self.lent is not None:
            take_back(self.spec.worktree, self.lent)
            self.spec.worktree.chmod(self.worktree_mode)
        shutil.rmtree(self.tmp, ignore_errors=True)
        if self.lease is not None:
            _release(self.lease)


async def _both(out: Awaitable[bytes], err: Awaitable[bytes]) -> None:
    await asyncio.gather(out, err)


async def _exited(proc: asyncio.subprocess.Process) -> None:
    """Until the command's own process has exited (``proc.wait()`` also waits for its
    output pipes, which a child it left behind may hold open forever)."""
    while proc.returncode is None:
        await asyncio.sleep(EXIT_POLL_S)


def _not_started(reason: str, started: float) -> SandboxResult:
    return SandboxResult("local", None, b"", b"", time.monotonic() - started, start_error=reason)


def _within(path: Path, folder: Path) -> bool:
    return path == folder or path.is_relative_to(folder)


def _parents(path: Path, made: set[str]) -> list[str]:
    """``--dir`` for every ancestor of ``path`` not made yet: bubblewrap would otherwise
    copy the host's modes (``/root`` 0700), and the run's uid could not reach the path."""
    args: list[str] = []
    for parent in reversed(path.parents):
        text = str(parent)
        if text in ("/", "/tmp") or text in made:
            continue
        made.add(text)
        args += ["--dir", text]
    return args


async def _drain(stream: asyncio.StreamReader) -> bytes:
    """Everything the stream says, up to ``OUTPUT_CAP`` bytes kept (the rest is read and
    dropped, so a command that prints without end cannot fill the daemon's memory)."""
    kept = bytearray()
    while chunk := await stream.read(1 << 16):
        if len(kept) < OUTPUT_CAP:
            kept += chunk[: OUTPUT_CAP - len(kept)]
    return bytes(kept)


async def _feed(stdin: asyncio.StreamWriter, data: bytes) -> None:
    try:
        stdin.write(data)
        await stdin.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass  # the command did not read all of it: its answer says what it made of that
    finally:
        stdin.close()


async def _unstoppable(work: Awaitable[T]) -> T:
    """Await ``work`` to its end even when cancelled meanwhile (then cancel after)."""
    task = asyncio.ensure_future(work)
    cancelled = False
    while True:
        try:
            result = await asyncio.shield(task)
            break
        except asyncio.CancelledError:
            if task.done():
                raise
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError
    return result


# -- uids ------------------------------------------------------------------------------------


def _check_lock_dir(folder: Path) -> str | None:
    """``None`` when ``folder`` is ours alone (made 0700 if missing); else why not. Another
    user able to write there could hold every uid, or swap a lock for a link."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = os.lstat(folder)
    except OSError as exc:
        return f"cannot use {folder} for the agents' uid locks ({exc.strerror})"
    if not os.path.isdir(folder) or os.path.islink(folder) or info.st_uid != os.geteuid():
        return f"{folder} is not a folder of this user's: remove it (it holds agent uid locks)"
    if info.st_mode & 0o077:
        return f"{folder} is open to other users ({oct(info.st_mode & 0o777)}): chmod 700 it"
    return None


def _lease(uids: tuple[int, int], lock_dir: Path) -> _Lease:
    """A uid of the range that no other live run holds, no process runs as, and no user
    of this host has."""
    low, high = uids
    busy = _uids_alive()
    start = random.randint(low, high)  # spread: a uid just freed is not the next one taken
    for offset in range(high - low + 1):
        uid = low + (start - low + offset) % (high - low + 1)
        if uid in busy or _has_account(uid):
            continue
        fd = os.open(lock_dir / f"{uid}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        if uid in _uids_alive():  # a run that just ended may still be sweeping it
            _release(_Lease(uid, fd))
            continue
        return _Lease(uid, fd)
    raise NoFreeUid(f"every uid of [agents] uids = {low}-{high} is in use: widen the range")


def _has_account(uid: int) -> bool:
    """A uid a user of this host has: its files would be the run's, and its processes
    killed with the run's."""
    try:
        pwd.getpwuid(uid)
    except KeyError:
        return False
    return True


def _release(lease: _Lease) -> None:
    with contextlib.suppress(OSError):
        fcntl.flock(lease.fd, fcntl.LOCK_UN)
    with contextlib.suppress(OSError):
        os.close(lease.fd)


def _uids_alive() -> set[int]:
    """The uids that own a live process right now (from /proc; a zombie is not alive: in
    a container whose init reaps nothing, a killed run's processes stay zombies)."""
    alive: set[int] = set()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError):
            with open(os.path.join(entry.path, "stat"), "rb") as handle:
                state = handle.read().rsplit(b")", 1)[1].split()[0]
            if state not in (b"Z", b"X"):
                alive.add(entry.stat().st_uid)
    return alive


def _alive(uid: int) -> bool:
    return uid in _uids_alive()


def _sweep(uid: int) -> None:
    """Kill every process of ``uid``: ``kill(-1, SIGKILL)`` sent as that uid reaches
    exactly its processes (in any session or pid namespace), never another user's."""
    for _ in range(SWEEPS):
        if not _alive(uid):
            return
        # Started as root, it becomes ``uid`` only to kill: nothing needs to be executable
        # by ``uid`` (an interpreter under /root is not).
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(
                [str(LAUNCHER), "-I", "-S", "-c", KILL_ALL, str(uid)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=30,
                check=False,
            )
