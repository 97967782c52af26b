"""``loopbus up``: the embedded default — a nats-server, the log, and every daemon.

With ``LOOPBUS_NATS_URL`` (or ``--nats-url``) it starts no server and uses that one.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from loopbus.bus import EmbeddedServer, ensure_log, port_is_free
from loopbus.bus.embedded import DEFAULT_PORT, free_port
from loopbus.errors import INTERRUPTED, UsageError
from loopbus.repo_check import RepoSetup, check_repo
from loopbus.schemas.durations import parse_duration
from loopbus.schemas.errors import InvalidValue
from loopbus.settings import (
    DEFAULT_DATA_DIR,
    DEFAULT_HEARTBEAT_LAPSE,
    NATS_URL_ENV,
    add_connection,
    connection,
)
from loopbus.supervisor import Supervisor, UpSettings
from loopbus.workers.errors import CONFIG_FILE
from loopbus.workers.runtime import configure_logging

SYNC_CHOICES = ("interval", "always")


def register(sub: Any) -> None:
    parser = sub.add_parser("up", help="run loopbus: embedded NATS, the log, every daemon")
    add_connection(
        parser, url_help=f"use this server instead of starting one (default: ${NATS_URL_ENV})"
    )
    parser.add_argument(
        "--data-dir", type=Path, default=DEFAULT_DATA_DIR, help="where JetStream stores the log"
    )
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help="client port (default %(default)s)"
    )
    parser.add_argument(
        "--heartbeat-lapse",
        default=DEFAULT_HEARTBEAT_LAPSE,
        help="a working unit silent this long is LOST (default %(default)s)",
    )
    parser.add_argument(
        "--repo", type=Path, default=None, help="the target repository daemons work on"
    )
    parser.add_argument(
        "--trunk",
        default=None,
        help="the trunk branch every daemon uses (default: the repository's current branch)",
    )
    parser.add_argument(
        "--replicas", type=int, default=1, help="log replication (3 on a 3-node cluster)"
    )
    parser.add_argument(
        "--sync",
        choices=SYNC_CHOICES,
        default=None,
        help="when the embedded server writes the log to disk: 'interval' (nats-server's "
        "default, every 2 minutes) or 'always' (before every acknowledgement; slower, see "
        "docs/operating.md)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.sync is not None and (args.nats_url or os.environ.get(NATS_URL_ENV)):
        raise UsageError(
            f"--sync {args.sync} sets the embedded server's fsync, but loopbus up uses the "
            f"server at {args.nats_url or os.environ.get(NATS_URL_ENV)}; set sync_interval in "
            "that server's configuration instead (see docs/operating.md)"
        )
    try:
        parse_duration(args.heartbeat_lapse, "--heartbeat-lapse")
    except InvalidValue as exc:
        raise UsageError(f"--heartbeat-lapse {args.heartbeat_lapse!r}: {exc.hint}") from exc
    if not 1 <= args.port <= 65535:
        raise UsageError(f"--port {args.port} is not a TCP port (1-65535)")
    if args.repo is not None and not args.repo.is_dir():
        raise UsageError(f"--repo {str(args.repo)!r} is not a directory")
    if args.trunk is not None and args.repo is None:
        raise UsageError("--trunk names a branch of --repo: pass --repo PATH too")
    args.setup = check_repo(args.repo.resolve(), args.trunk) if args.repo is not None else None
    try:
        args.data_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(
            f"--data-dir {str(args.data_dir)!r} cannot be used ({exc.strerror}); "
            "pass a directory you can write to"
        ) from exc
    configure_logging(os.environ.get("LOOPBUS_LOG_LEVEL", "warning"))
    with hold_data_dir(args.data_dir):
        return asyncio.run(_up(args))


@contextlib.contextmanager
def hold_data_dir(data_dir: Path) -> Iterator[None]:
    """One ``loopbus up`` per data directory: two nats-servers on one store corrupt it."""
    lock_path = data_dir / "up.lock"
    with open(lock_path, "a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            holder = lock.read().strip() or "another process"
            raise UsageError(
                f"{data_dir} is in use by loopbus up (pid {holder}); stop it, or pass "
                "another --data-dir"
            ) from None
        lock.seek(0)
        lock.truncate()
        lock.write(str(os.getpid()))
        lock.flush()
        yield


async def _up(args: argparse.Namespace) -> int:
    external = args.nats_url or os.environ.get(NATS_URL_ENV)
    server: EmbeddedServer | None = None
    stopped_by: list[int] = []
    data_dir: Path = args.data_dir.resolve()
    if external:
        url = external
        print(f"loopbus: using NATS at {url} (no embedded server)", flush=True)
    else:
        port = args.port
        server = EmbeddedServer(data_dir, port=port, sync_always=args.sync == "always")
        lingering = await server.wait_for_previous()
        if lingering is not None:
            raise UsageError(
                f"a nats-server (pid {lingering}) still runs on {data_dir}; stop it "
                f"(kill {lingering}) before starting loopbus up on this data directory"
            )
        if not port_is_free(port):
            taken, port = port, free_port()
            print(
                f"loopbus: port {taken} is taken; the embedded server uses port {port} instead",
                flush=True,
            )
        server.port = port
        await server.start()
        url = server.url
        sync = "before every ack" if server.sync_always else "every 2 minutes"
        print(
            f"loopbus: NATS with JetStream at {url} (data in {data_dir}, synced to disk {sync})",
            flush=True,
        )
    try:
        bus = await connection(args, url).open_lasting("loopbus-up")
        await ensure_log(bus.js, replicas=args.replicas)
        await bus.close()
        print("loopbus: log provisioned (stream LOOP, deny delete, deny purge)", flush=True)
        settings = UpSettings(
            nats_url=url,
            data_dir=data_dir,
            heartbeat_lapse=args.heartbeat_lapse,
            repo=args.repo.resolve() if args.repo else None,
            trunk=args.setup.trunk if args.setup else None,
        )
        if args.setup is not None:
            print(describe(args.setup), flush=True)
        supervisor = Supervisor(settings)
        loop = asyncio.get_running_loop()

        def stop(signum: int) -> None:
            stopped_by.append(signum)
            supervisor.stopping.set()

        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop, signum)
        if server is not None:
            watcher = asyncio.create_task(keep_server_up(server, supervisor.stopping))
        names = ", ".join(spec.name for spec in supervisor.specs)
        print(f"loopbus: running {names}; in another terminal:", flush=True)
        print(f"  export {NATS_URL_ENV}={url}", flush=True)
        project = args.setup.project if args.setup and args.setup.project else "demo"
        print(f"  loopbus tail --project {project}", flush=True)
        print("loopbus: press Ctrl-C to stop", flush=True)
        await supervisor.run()
        print("loopbus: every daemon stopped", flush=True)
        if server is not None:
            watcher.cancel()
    finally:
        if server is not None:
            server.stop()
            print("loopbus: NATS stopped", file=sys.stderr, flush=True)
    # Stopped in order either way; Ctrl-C still reports itself as an interruption (130),
    # as every loopbus command does, while SIGTERM (a service manager's stop) is a clean 0.
    return INTERRUPTED if stopped_by[:1] == [signal.SIGINT] else 0


def describe(setup: RepoSetup) -> str:
    kind = "bare repository" if setup.bare else "repository"
    project = f"project {setup.project}" if setup.project else f"no {CONFIG_FILE} on trunk"
    return f"loopbus: {kind} {setup.path}, trunk {setup.trunk} at {setup.commit[:12]}, {project}"


async def keep_server_up(server: EmbeddedServer, stopping: asyncio.Event) -> None:
    """Restart the embedded server if it dies; the daemons reconnect and resume."""
    while not stopping.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stopping.wait(), 1.0)
        process = server.process
        if stopping.is_set() or process is None or process.poll() is None:
            continue
        print(
            f"loopbus: nats-server exited with code {process.returncode}; restarting it "
            f"(log: {server.data_dir / 'nats-server.log'})",
            file=sys.stderr,
            flush=True,
        )
        try:
            await server.start()
        except Exception as exc:  # reported, then tried again on the next tick
            print(f"loopbus: nats-server did not restart: {exc}", file=sys.stderr, flush=True)
