"""What every daemon shares: logging set-up, signals, health beacons, and the live fold.

A daemon is an ``async def body(ctx: DaemonContext) -> None`` handed to :func:`run_daemon`,
which connects, installs SIGTERM/SIGINT handlers that set ``ctx.stop`` (and SIGUSR1, which
logs every task's await chain: :mod:`workers.stacks`), beats a health
beacon, and closes everything in order when the body returns or the stop is requested.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import signal
import socket
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import structlog

from bus import WORKER_BUCKET, Bus, BusError, connect
from bus.creds import Credential
from bus.history import data_dir_from_env, require_log
from workers.stacks import dump_on_signal

log = structlog.get_logger()

HEALTH_INTERVAL_S = 5.0
HEALTH_STALE_S = 30.0
SHUTDOWN_GRACE_S = 5.0
INTERRUPTED = 130
"""128 + SIGINT: the exit status of a daemon stopped with Ctrl-C."""


def configure_logging(level: str = "info", *, json: bool = True) -> None:
    """Configure structlog for an entry point: JSON lines on stderr (one object a line)."""
    processors: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.format_exc_info,
    ]
    processors.append(
        structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer()
    )
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping()[level.upper()]
        ),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )


@dataclass
class DaemonContext:
    """Handed to a daemon body: its bus, its name, and the event that asks it to stop."""

    bus: Bus
    name: str
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    last_seq: int = 0  # what the health beacon reports as progress
    project_lease_s: float | None = None
    """Share projects with the daemon's other replicas under leases of this lifetime
    (``--project-lease``); ``None``: act on every project (one replica only)."""

    def note_progress(self, seq: int) -> None:
        # max: a process serving several repositories runs a kernel for each, each folding
        # its own project's records, and the beacon reports the furthest of them.
        self.last_seq = max(self.last_seq, seq)


class Beacon(msgspec.Struct):
    """A daemon's health beacon in the workers bucket."""

    name: str
    pid: int
    host: str
    at: float
    last_seq: int


def health_key(name: str, host: str | None = None) -> str:
    """The beacon of daemon ``name``: the latest of any replica, or (``host``) the one of
    the replica on that host, so each of several replicas is checked on its own."""
    if host is None:
        return f"health.{name}"
    return f"health.{name}.{re.sub(r'[^A-Za-z0-9_-]', '_', host)}"


async def run_daemon(
    name: str,
    body: Callable[[DaemonContext], Awaitable[None]],
    nats_url: str,
    creds: Credential | None = None,
    tls_ca: Path | None = None,
    *,
    project_lease_s: float | None = None,
) -> int:
    """Run ``body`` until it returns or SIGTERM/SIGINT arrives; exit code 0 on a clean stop
    (130 when the stop was Ctrl-C's SIGINT).

    A daemon never re-creates a log that evidently existed (:mod:`bus.history`);
    it creates a first one only on a server without authorization (tests, a bare
    nats-server), since with credentials only ``admin`` may."""
    structlog.contextvars.bind_contextvars(daemon=name)
    # kill -USR1: what every task waits on, in the log; from the start, so the signal
    # never finds a daemon without its handler (the default action ends the process).
    dump_on_signal(asyncio.get_running_loop())
    bus = await connect(nats_url, name=name, creds=creds, tls_ca=tls_ca)
    try:
        await require_log(bus.js, nats_url, data_dir=data_dir_from_env(), may_create=creds is None)
    except BusError:
        await bus.close()
        raise
    ctx = DaemonContext(bus=bus, name=name, project_lease_s=project_lease_s)
    loop = asyncio.get_running_loop()
    stopped_by: list[int] = []

    def stop(signum: int) -> None:
        stopped_by.append(signum)
        ctx.stop.set()

    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop, signum)
    log.info("daemon.started", url=nats_url, pid=os.getpid())
    beacon: asyncio.Future[Any] = asyncio.ensure_future(_beat(ctx))
    work: asyncio.Future[Any] = asyncio.ensure_future(body(ctx))
    stopper: asyncio.Future[Any] = asyncio.ensure_future(ctx.stop.wait())
    try:
        done, _ = await asyncio.wait({work, stopper}, return_when=asyncio.FIRST_COMPLETED)
        if work in done:
            work.result()  # re-raise a crash so the supervisor sees a non-zero exit
    finally:
        for task in (work, stopper, beacon):
            task.cancel()
        ctx.stop.set()
        # Bounded: a task that swallows its cancellation must not keep the process alive.
        await asyncio.wait({work, stopper, beacon}, timeout=SHUTDOWN_GRACE_S)
        await bus.close()
        log.info("daemon.stopped")
    # A daemon run by hand and stopped with Ctrl-C exits 130 like every loopbus command;
    # SIGTERM (the supervisor's and compose's stop) is a clean 0.
    return INTERRUPTED if stopped_by[:1] == [signal.SIGINT] else 0


async def _beat(ctx: DaemonContext) -> None:
    # The loop ends on ctx.stop rather than by cancellation alone: a cancel that lands
    # inside nats-py's kv.put can be swallowed there, which left the daemon hanging on
    # SIGTERM.
    beacons = await ctx.bus.bucket(WORKER_BUCKET)
    host = socket.gethostname()
    while not ctx.stop.is_set():
        beacon = Beacon(ctx.name, os.getpid(), host, time.time(), ctx.last_seq)
        with contextlib.suppress(BusError):  # a missed beat is what the check detects
            data = msgspec.json.encode(beacon)
            await beacons.put(health_key(ctx.name), data)
            await beacons.put(health_key(ctx.name, host), data)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(HEALTH_INTERVAL_S):
                await ctx.stop.wait()


async def check_health(
    bus: Bus, name: str, stale_s: float = HEALTH_STALE_S, *, host: str | None = None
) -> Beacon | None:
    """The daemon's beacon (of its replica on ``host``, when given) when it is fresher
    than ``stale_s``, else ``None``."""
    beacons = await bus.bucket(WORKER_BUCKET)
    try:
        entry = await beacons.get(health_key(name, host))
    except BusError:
        return None
    if entry is None:
        return None
    try:
        beacon = msgspec.json.decode(entry.value, type=Beacon)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return beacon if time.time() - beacon.at <= stale_s else None


async def cancel_all(tasks: Sequence[asyncio.Task[Any]], retry_s: float = 1.0) -> None:
    """Cancel ``tasks`` and wait until every one has ended.

    A cancel can be lost on the way: on Python 3.11, ``asyncio.wait_for`` returns the inner
    result instead of raising when the cancel lands just as its inner await completes
    (nats-py waits that way for acknowledgements), and the task then runs on. So a task
    still running after ``retry_s`` is cancelled again rather than awaited for ever.
    """
    pending = {task for task in tasks if not task.done()}
    while pending:
        for task in pending:
            task.cancel()
        _, pending = await asyncio.wait(pending, timeout=retry_s)
    for task in tasks:
        if not task.cancelled() and task.exception() is not None:
            log.warning("task.ended_with_error", task=task.get_name(), error=repr(task.exception()))


class Progress:
    """How far a daemon has folded *and acted*: lets tests and peers wait for a sequence."""

    def __init__(self) -> None:
        self.seq = 0
        self._changed = asyncio.Condition()

    async def wait(self, seq: int) -> None:
        """Return once everything through ``seq`` has been folded and acted on."""
        async with self._changed:
            await self._changed.wait_for(lambda: self.seq >= seq)

    async def mark(self, seq: int) -> None:
        async with self._changed:
            self.seq = max(self.seq, seq)
            self._changed.notify_all()
