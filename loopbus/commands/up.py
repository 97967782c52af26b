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
import stat
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from bus import LOG_STREAM, BusUnreachable, EmbeddedServer, ensure_log, port_is_free
from bus.creds import CREDS_ENV, Credential, default_file, load_credential
from bus.embedded import free_port
from bus.history import RECORD_FILE, HistoryMissing, record, require_log
from bus.private import private_dir, private_umask, tighten
from loopbus import served_url, up_repo
from loopbus.errors import INTERRUPTED, LoopbusError, UsageError
from loopbus.repo_check import RepoSetup, check_repo
from loopbus.settings import (
    DATA_DIR_ENV,
    NATS_URL_ENV,
    connection,
    default_data_dir,
)
from loopbus.supervisor import Supervisor, UpSettings, specs_for
from loopbus.web.options import check_port
from schemas import Actor
from schemas.durations import parse_duration
from schemas.errors import InvalidValue
from workers.errors import CONFIG_FILE, WorkerError
from workers.leases.capacity import cores
from workers.merger.face import adopt_on_first_start, adopted_on_log
from workers.merger.face import operator as adopter
from workers.runtime import configure_logging


def run(args: argparse.Namespace) -> int:
    args.data_dir = args.data_dir or default_data_dir()
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
    check_replicas(args.replicas, args.nats_url or os.environ.get(NATS_URL_ENV))
    check_port(args.web_port, "--web-port")
    source = up_repo.source_of(args.repo)
    args.source = source
    if args.trunk is not None and source is None:
        raise UsageError("--trunk names a branch of --repo: pass --repo PATH too")
    args.setup = None  # a URL is mirrored, and checked, once the data dir is made
    if source is not None and source.url is None:
        args.setup = check_repo(up_repo.local_copy(source, args.data_dir), args.trunk)
    if args.data_dir.is_dir() and args.data_dir.stat().st_mode & stat.S_ISVTX:
        raise UsageError(
            f"--data-dir {str(args.data_dir)!r} is a shared folder (sticky bit, like /tmp); "
            "loopbus makes its data directory 0700: pass a folder of its own"
        )
    # Everything up and its children write is their owner's alone (bus.private).
    private_umask()
    try:
        private_dir(args.data_dir)
    except OSError as exc:
        raise UsageError(
            f"--data-dir {str(args.data_dir)!r} cannot be used ({exc.strerror}); "
            "pass a directory you can write to"
        ) from exc
    if source is not None and source.url is not None:
        args.setup = check_repo(up_repo.local_copy(source, args.data_dir), args.trunk)
    configure_logging(os.environ.get("LOOPBUS_LOG_LEVEL", "warning"))
    with hold_data_dir(args.data_dir):
        return asyncio.run(_up(args))


@contextlib.contextmanager
def hold_data_dir(data_dir: Path) -> Iterator[None]:
    """One ``loopbus up`` per data directory: two nats-servers on one store corrupt it."""
    lock_path = data_dir / served_url.LOCK_FILE
    with open(lock_path, "a+") as lock:
        if not _lock(lock):
            lock.seek(0)
            holder = lock.read().strip() or "another process"
            raise UsageError(
                f"{data_dir} is in use by loopbus up (pid {holder}); stop it, or pass "
                "another --data-dir"
            )
        # An address a crashed up left is no longer true, whatever this up goes on to serve
        # (an external server, or its own once it has started).
        served_url.remove(data_dir)
        tighten(lock.fileno())  # one left by a loopbus from before the data dir was private
        lock.seek(0)
        lock.truncate()
        lock.write(str(os.getpid()))
        lock.flush()
        yield


def _lock(lock: IO[str]) -> bool:
    """Take the data directory's lock; ``False`` when another ``up`` holds it. A command
    probing whether an ``up`` runs here holds a shared lock for a moment
    (``served_url.held``), so a refusal is only believed after trying for a second."""
    deadline = time.monotonic() + 1.0
    while True:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)


async def _up(args: argparse.Namespace) -> int:
    external = args.nats_url or os.environ.get(NATS_URL_ENV)
    server: EmbeddedServer | None = None
    stopped_by: list[int] = []
    data_dir: Path = args.data_dir.resolve()
    if external:
        url = external
        print(f"loopbus: {external_server(args, url)}", flush=True)
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
        served_url.write(data_dir, url)
        sync = "before every ack" if server.sync_always else "every 2 minutes"
        print(
            f"loopbus: NATS with JetStream at {url} (data in {data_dir}, synced to disk {sync})",
            flush=True,
        )
    try:
        admin, system = _credentials(args, data_dir, embedded=server is not None)
        try:
            bus = await connection(args, url, creds=admin).open_lasting("loopbus-up")
        except BusUnreachable as exc:
            if server is not None:
                raise
            # The usual cause: a terminal where LOOPBUS_NATS_URL was exported for the
            # commands that talk to a running up, then up started there too.
            why = f" ({exc.detail})" if exc.detail else ""
            raise LoopbusError(f"cannot reach NATS at {url}{why}; {unset_hint(args)}") from exc
        try:
            # Created only when nothing says a log existed here (docs/security.md).
            try:
                await require_log(bus.js, url, data_dir=data_dir)
            except HistoryMissing as exc:
                raise LoopbusError(
                    f"{exc}; if you removed it on purpose, delete {data_dir / RECORD_FILE} "
                    "and start again"
                ) from exc
            await ensure_log(bus.js, replicas=args.replicas)
            info = await bus.stream_info()
        finally:
            await bus.close()
        # Fewer copies than asked: a lone server keeps one whatever it is asked (nats-server
        # does not refuse), or a log made before. More than asked is an existing log's own.
        held = info.config.num_replicas or 1
        if held < args.replicas:
            raise UsageError(
                f"--replicas {args.replicas}: stream {LOG_STREAM} at {url} keeps {held} "
                f"replica(s) (a lone server keeps one, and up never rescales a log); pass "
                f"--replicas {held}, or scale it first with `nats stream edit {LOG_STREAM} "
                f"--replicas {args.replicas}` on a cluster of that many servers"
            )
        record(data_dir, info.created.isoformat() if info.created else "", info.state.first_seq)
        print("loopbus: log provisioned (stream LOOP, deny delete, deny purge)", flush=True)
        settings = UpSettings(
            nats_url=url,
            data_dir=data_dir,
            heartbeat_lapse=args.heartbeat_lapse,
            repo=up_repo.daemon_repo(args.source),
            mirror_dir=data_dir / up_repo.MIRRORS if args.source and args.source.url else None,
            web_host=args.web_host,
            web_port=None if args.no_web else web_port(args.web_host, args.web_port),
            creds=system.path if system is not None else None,
            server_log=server.log_file if server is not None else None,
            trunk=args.setup.trunk if args.setup else None,
            jobs=args.jobs if args.jobs is not None else cores(),
            capacity=args.capacity,
            paced=args.paced,
        )
        if args.setup is not None:
            print(describe(args.setup), flush=True)
            for warning in args.setup.warnings:
                print(f"loopbus: warning: {warning}", flush=True)
            if args.setup.unsandboxed:
                print(UNSANDBOXED, flush=True)
            await adopt_on_start(args, url, system, args.setup)
        supervisor = Supervisor(settings, specs=specs_for(settings))
        loop = asyncio.get_running_loop()

        def stop(signum: int) -> None:
            stopped_by.append(signum)
            supervisor.stopping.set()

        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop, signum)
        # kill -USR1 on up: every daemon logs what its tasks wait on (docs/operating.md)
        loop.add_signal_handler(signal.SIGUSR1, supervisor.pass_signal, signal.SIGUSR1)
        if server is not None:
            watcher = asyncio.create_task(keep_server_up(server, supervisor.stopping))
        names = ", ".join(spec.name for spec in supervisor.specs)
        print(f"loopbus: running {names}; in another terminal:", flush=True)
        print(f"  export {NATS_URL_ENV}={url}", flush=True)
        if server is not None:
            print(f"  export {DATA_DIR_ENV}={data_dir}", flush=True)
        # With no --repo there is no project yet: name none rather than one that may not exist.
        chosen = f"--project {args.setup.project}" if args.setup else "--all-projects"
        print(f"  loopbus tail {chosen}", flush=True)
        if settings.web_port is not None:
            shown = "127.0.0.1" if settings.web_host in ("0.0.0.0", "") else settings.web_host
            print(f"loopbus: operator page at http://{shown}:{settings.web_port}/", flush=True)
        if server is not None:
            _print_handouts(data_dir)
        print("loopbus: press Ctrl-C to stop", flush=True)
        await supervisor.run()
        print("loopbus: every daemon stopped", flush=True)
        if server is not None:
            watcher.cancel()
    finally:
        if server is not None:
            served_url.remove(data_dir)
            server.stop()
            print("loopbus: NATS stopped", file=sys.stderr, flush=True)
    # Stopped in order either way; Ctrl-C still reports itself as an interruption (130),
    # as every loopbus command does, while SIGTERM (a service manager's stop) is a clean 0.
    return INTERRUPTED if stopped_by[:1] == [signal.SIGINT] else 0


async def adopt_on_start(
    args: argparse.Namespace, url: str, system: Credential | None, setup: RepoSetup
) -> None:
    """The operator starting loopbus on a project adopts trunk's ``loopbus.toml`` (the
    commit just described) as the configuration that judges trunk, unless the log holds an
    adoption already: before any daemon starts, so nothing pushed meanwhile is adopted."""
    bus = await connection(args, url, creds=system).open()
    try:
        fact = await adopt_on_first_start(
            bus,
            setup.path,
            setup.commit,
            setup.project,
            Actor(role="system", principal="up"),
            by=adopter(),
        )
        current = fact or await adopted_on_log(bus, setup.project)
    except WorkerError as exc:
        raise LoopbusError(
            f"the configuration of {setup.project} cannot be adopted: {exc}"
        ) from exc
    finally:
        await bus.close()
    if fact is not None:
        print(
            f"loopbus: adopted {CONFIG_FILE} of {setup.commit[:12]} as the configuration that "
            f"judges {setup.project}'s trunk (first start, by {fact.by})",
            flush=True,
        )
    elif current is not None:
        print(
            f"loopbus: trunk is judged by the {CONFIG_FILE} adopted from "
            f"{current.commit[:12]} ({current.why}, by {current.by}); change it with "
            "loopbus config adopt",
            flush=True,
        )


def check_replicas(replicas: int, external: str | None) -> None:
    """``--replicas`` refused as ``provision`` refuses it, before anything starts: fewer
    than one, or more than the one embedded server can keep (nats-server would silently
    keep one copy, and the operator believe there were more)."""
    if replicas < 1:
        raise UsageError(f"--replicas {replicas}: give 1 or more (3 on a 3-node cluster)")
    if replicas > 1 and not external:
        raise UsageError(
            f"--replicas {replicas}: the embedded server is one server, which keeps one copy "
            "of the log; drop --replicas, or run a cluster of that many servers and pass its "
            "URL with --nats-url (see docs/deploy.md)"
        )


def external_server(args: argparse.Namespace, url: str) -> str:
    """What ``up`` says when told to use a server instead of starting one: which, who said
    so, and how to have its own instead."""
    return (
        f"using the NATS server at {url} that {_named_by(args)} names (no embedded server); "
        f"to start loopbus's own, {_drop(args)}"
    )


def unset_hint(args: argparse.Namespace) -> str:
    """The line's end when that server does not answer."""
    return (
        f"up uses the server {_named_by(args)} names instead of starting one: start that "
        f"server, or {_drop(args)} for up to start its own"
    )


def _drop(args: argparse.Namespace) -> str:
    return "drop --nats-url" if args.nats_url else f"unset {NATS_URL_ENV}"


def _named_by(args: argparse.Namespace) -> str:
    return "--nats-url" if args.nats_url else f"${NATS_URL_ENV}"


def web_port(host: str, port: int) -> int:
    """``port`` if the page can listen there, else a free one (said on the terminal)."""
    import socket

    with socket.socket() as probe:
        try:
            probe.bind((host, port))
            return port
        except OSError:
            pass
    with socket.socket() as probe:
        try:
            probe.bind((host, 0))
        except OSError as exc:
            raise UsageError(
                f"--web-host {host!r} cannot be listened on ({exc}); give an address of this "
                "machine, e.g. 127.0.0.1 or 0.0.0.0"
            ) from exc
        free = int(probe.getsockname()[1])
    print(f"loopbus: web port {port} is taken; the page uses port {free} instead", flush=True)
    return free


def _credentials(
    args: argparse.Namespace, data_dir: Path, *, embedded: bool
) -> tuple[Credential | None, Credential | None]:
    """(admin, system): the embedded server's own, made on its first start and kept; for
    another server, ``--creds``/``$LOOPBUS_CREDS`` (admin) and the data directory's system
    credential when there is one (none: a server without authorization)."""
    if embedded:
        return (
            load_credential(default_file(data_dir, "admin")),
            load_credential(default_file(data_dir, "system")),
        )
    named = args.creds or os.environ.get(CREDS_ENV)
    admin = load_credential(Path(named)) if named else None
    system_file = default_file(data_dir, "system")
    return admin, load_credential(system_file) if system_file.exists() else None


def _print_handouts(data_dir: Path) -> None:
    """Which file goes to whom: each process gets only its own credential."""
    print(
        f"loopbus: credentials (hand each process only its own, as --creds FILE or ${CREDS_ENV}):",
        flush=True,
    )
    print(
        f"  agents (builders, reviewers, planners): {default_file(data_dir, 'agent')}", flush=True
    )
    print(
        f"  an operator (approve, decide):          {default_file(data_dir, 'operator')}",
        flush=True,
    )
    print(
        f"  read-only (tail, replay, status):       {default_file(data_dir, 'reader')}", flush=True
    )
    print("  one more agent: loopbus creds add --role agent --principal NAME", flush=True)


UNSANDBOXED = (
    'loopbus: warning: agents run UNSANDBOXED: loopbus.toml says [agents] sandbox = "none", '
    "so every agent command runs as the daemons' user, credentials and signing keys in "
    "reach (a standing finding says so on the log)"
)


def describe(setup: RepoSetup) -> str:
    kind = "bare repository" if setup.bare else "repository"
    where = f"{kind} {setup.path}, trunk {setup.trunk} at {setup.commit[:12]}"
    return f"loopbus: {where}, project {setup.project}"


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
