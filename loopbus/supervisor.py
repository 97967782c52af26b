"""The local supervisor behind ``loopbus up``: every daemon as a child process.

A child that dies is restarted with a growing back-off (a daemon is restart-safe by
design); SIGINT/SIGTERM stop every child with SIGTERM first, SIGKILL after a grace period.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import structlog

from bus.connection import NATS_URL_ENV
from bus.creds import DEFAULT_PRINCIPALS, file_name
from bus.embedded import private_child
from bus.private import private_dir, tighten
from schemas.project_config import TRUNK_ENV

log = structlog.get_logger()


@dataclass(frozen=True)
class UpSettings:
    """What ``loopbus up`` passes down to daemons."""

    nats_url: str
    data_dir: Path
    heartbeat_lapse: str
    repo: Path | str | None = None
    """A path every daemon reads in place, or a URL each mirrors under ``mirror_dir``."""
    mirror_dir: Path | None = None
    """Set with a URL ``repo``: daemon NAME mirrors it in ``mirror_dir/NAME``."""
    web_host: str = "127.0.0.1"
    web_port: int | None = None
    """Port of the operator page; ``None``: no page."""
    creds: Path | None = None
    """The system credential every daemon connects with (``None``: a server without auth)."""
    server_log: Path | None = None
    """The embedded nats-server's log, whose refused publishes the integrity daemon reports
    (``None``: a server ``up`` does not run)."""
    trunk: str | None = None
    """The one trunk branch every daemon uses (``up --trunk``; the repository's current
    branch by default)."""
    jobs: int | None = None
    """Checks the gate runner runs at once (``up --jobs``: the machine's cores by default;
    ``None``: the runner's own default)."""
    capacity: int | None = None
    """Units the dispatcher keeps in flight (``up --capacity``; ``None``: its default)."""
    paced: bool = True
    """Fewer units in flight when agents are quicker than the gates (``up --no-pace``:
    off; :mod:`projections.pacing`)."""


def _repo(s: UpSettings) -> list[str]:
    return ["--repo", str(s.repo)] if s.repo else []


def _trunk(s: UpSettings) -> list[str]:
    return ["--trunk", s.trunk] if s.trunk else []


def _jobs(s: UpSettings) -> list[str]:
    return ["--jobs", str(s.jobs)] if s.jobs is not None else []


def _dispatch_flags(s: UpSettings) -> list[str]:
    given = ["--capacity", str(s.capacity)] if s.capacity is not None else []
    return given if s.paced else [*given, "--no-pace"]


@dataclass(frozen=True)
class DaemonSpec:
    """One supervised daemon: ``python -m <module>`` plus arguments derived from settings."""

    name: str
    module: str
    args: Callable[[UpSettings], list[str]] = lambda _s: []
    reads_only: bool = False
    """Connects with the ``reader`` credential beside the system one (the operator page),
    so a bug in it cannot write to the log."""


DAEMONS: tuple[DaemonSpec, ...] = (
    DaemonSpec("projector", "workers.projector"),
    DaemonSpec(
        "dispatcher",
        "workers.dispatcher",
        lambda s: ["--data-dir", str(s.data_dir), *_repo(s), *_trunk(s), *_dispatch_flags(s)],
    ),
    DaemonSpec("standards", "workers.standards"),
    DaemonSpec(
        "shipper",
        "workers.shipper",
        lambda s: ["--data-dir", str(s.data_dir), *_repo(s), *_trunk(s)],
    ),
    DaemonSpec(
        "integrity",
        "workers.integrity",
        lambda s: ["--server-log", str(s.server_log)] if s.server_log else [],
    ),
    DaemonSpec("ratchet", "workers.ratchet", lambda s: ["--repo", str(s.repo)] if s.repo else []),
    DaemonSpec("lessons", "workers.lessons", lambda s: [*_repo(s), *_trunk(s)]),
    DaemonSpec("units", "workers.units", lambda s: ["--repo", str(s.repo)] if s.repo else []),
    DaemonSpec(
        "watchdog",
        "workers.watchdog",
        lambda s: (
            ["--heartbeat-lapse", s.heartbeat_lapse] + (["--repo", str(s.repo)] if s.repo else [])
        ),
    ),
    DaemonSpec(
        "gate-runner",
        "workers.gate_runner",
        lambda s: ["--data-dir", str(s.data_dir), *_repo(s), *_trunk(s), *_jobs(s)],
    ),
    DaemonSpec("reviewer", "workers.reviewer", lambda s: ["--repo", str(s.repo)] if s.repo else []),
    DaemonSpec(
        "investigator",
        "workers.investigator",
        lambda s: ["--repo", str(s.repo)] if s.repo else [],
    ),
    DaemonSpec("planner", "workers.planner", lambda s: ["--repo", str(s.repo)] if s.repo else []),
    # Verifies each merged wave code-cold (idle without a [verify] command).
    DaemonSpec("verifier", "workers.verifier", lambda s: ["--repo", str(s.repo)] if s.repo else []),
    DaemonSpec(
        "builder",
        "workers.builder",
        lambda s: ["--data-dir", str(s.data_dir)] + (["--repo", str(s.repo)] if s.repo else []),
    ),
    DaemonSpec(
        "merger",
        "workers.merger",
        lambda s: ["--data-dir", str(s.data_dir), *_repo(s), *_trunk(s)],
    ),
    # Approves charters, pins and judges the run's criteria on trunk (reading the criterion
    # tests from the repository), keeps the run's budgets.
    DaemonSpec("charter", "workers.charter", lambda s: ["--repo", str(s.repo)] if s.repo else []),
)
"""Every daemon ``loopbus up`` runs; a new daemon adds its spec here."""

PAGE = DaemonSpec(
    "page",
    "loopbus.web",
    lambda s: ["--host", s.web_host, "--port", str(s.web_port)],
    reads_only=True,
)
"""The operator page: supervised like a daemon (restarted if it dies), read-only."""


def specs_for(settings: UpSettings) -> tuple[DaemonSpec, ...]:
    """What ``loopbus up`` runs with ``settings``: every daemon, and the page when asked."""
    return DAEMONS + ((PAGE,) if settings.web_port is not None else ())


@dataclass
class Child:
    spec: DaemonSpec
    process: asyncio.subprocess.Process | None = None
    restarts: int = 0
    started_at: float = 0.0
    backoff: float = 0.5


def daemon_child() -> None:
    """``preexec_fn`` for a daemon: :func:`private_child`, and ``SIGUSR1`` ignored until the
    daemon installs its own handler (``workers.stacks``). ``up`` passes the signal on to
    every running daemon, and one still starting (its interpreter importing) would
    otherwise be ended by it: an ignored signal stays ignored across ``exec``."""
    private_child()
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)


@dataclass
class Supervisor:
    settings: UpSettings
    specs: tuple[DaemonSpec, ...] = DAEMONS
    grace_s: float = 10.0
    children: list[Child] = field(default_factory=list)
    stopping: asyncio.Event = field(default_factory=asyncio.Event)

    def command(self, spec: DaemonSpec) -> list[str]:
        # -P: the daemon's packages (workers, schemas, ...) come from the install, never from
        # a folder of the same name in the directory loopbus was started from.
        return [
            sys.executable,
            "-P",
            "-m",
            spec.module,
            "--nats-url",
            self.settings.nats_url,
            *self._creds(spec),
            *self._mirror(spec, spec.args(self.settings)),
        ]

    def _mirror(self, spec: DaemonSpec, args: list[str]) -> list[str]:
        """``args``, plus a mirror folder of the daemon's own when it reads a URL repo."""
        root = self.settings.mirror_dir
        if root is None or "--repo" not in args:
            return args
        return [*args, "--mirror-dir", str(root / spec.name)]

    def _creds(self, spec: DaemonSpec) -> list[str]:
        creds = self.settings.creds
        if creds is None:
            return []
        if spec.reads_only:  # the reader's default file sits beside the system's
            creds = creds.parent / file_name("reader", DEFAULT_PRINCIPALS["reader"])
        return ["--creds", str(creds)]

    def child_env(self) -> dict[str, str]:
        """What every daemon is told besides its arguments: the server, and the trunk (the
        reviewer and builder read it when ``loopbus.toml`` names none)."""
        env = {NATS_URL_ENV: self.settings.nats_url}
        if self.settings.trunk:
            env[TRUNK_ENV] = self.settings.trunk
        return env

    async def _spawn(self, child: Child) -> None:
        logs = self.settings.data_dir / "logs"
        private_dir(logs)
        with open(logs / f"{child.spec.name}.log", "ab") as sink:
            tighten(sink.fileno())  # a log from before the data directory was private
            child.process = await asyncio.create_subprocess_exec(
                *self.command(child.spec),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=sink,
                stderr=sink,
                env=os.environ
                | self.child_env()
                # Where the daemons find up's record of the log (bus.history).
                | {"LOOPBUS_DATA_DIR": str(self.settings.data_dir)},
                start_new_session=True,  # a terminal's Ctrl-C reaches us; we stop them in order
                # If we are killed outright they stop too; what they write is born 0600.
                preexec_fn=daemon_child,
            )
        child.started_at = time.monotonic()
        log.info("daemon.spawned", daemon=child.spec.name, pid=child.process.pid)

    async def _watch(self, child: Child) -> None:
        while not self.stopping.is_set():
            await self._spawn(child)
            assert child.process is not None
            code = await child.process.wait()
            if self.stopping.is_set():
                return
            if time.monotonic() - child.started_at > 30:
                child.backoff = 0.5  # it ran a while: a fresh failure, not a crash loop
            log.warning(
                "daemon.exited", daemon=child.spec.name, code=code, restart_in=child.backoff
            )
            print(
                f"loopbus: {child.spec.name} exited with code {code}; restarting in "
                f"{child.backoff:.1f}s (log: {self.settings.data_dir / 'logs'})",
                file=sys.stderr,
            )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), child.backoff)
            child.backoff = min(child.backoff * 2, 30.0)
            child.restarts += 1

    async def run(self) -> None:
        """Run every daemon until :attr:`stopping` is set, then stop them all."""
        self.children = [Child(spec) for spec in self.specs]
        watchers = [asyncio.create_task(self._watch(child)) for child in self.children]
        await self.stopping.wait()
        await self.stop_children()
        for watcher in watchers:
            watcher.cancel()
        await asyncio.gather(*watchers, return_exceptions=True)

    def pass_signal(self, signum: int) -> None:
        """Send ``signum`` to every running daemon (``SIGUSR1``: each logs what its tasks
        wait on, see ``workers/stacks.py``)."""
        for child in self.children:
            if child.process is not None and child.process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    child.process.send_signal(signum)

    async def stop_children(self) -> None:
        running = [c for c in self.children if c.process and c.process.returncode is None]
        for child in running:
            assert child.process is not None
            with contextlib.suppress(ProcessLookupError):
                child.process.send_signal(signal.SIGTERM)
        for child in running:
            assert child.process is not None
            try:
                await asyncio.wait_for(child.process.wait(), self.grace_s)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    child.process.kill()
                await child.process.wait()
            log.info("daemon.stopped", daemon=child.spec.name, code=child.process.returncode)
