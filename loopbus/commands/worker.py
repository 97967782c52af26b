"""``loopbus worker NAME`` runs one daemon in the foreground; ``loopbus health NAME`` checks
its beacon (the compose healthcheck)."""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import sys
from pathlib import Path
from typing import Any

import msgspec

from bus.creds import default_file
from loopbus import served_url
from loopbus.completion import offer
from loopbus.errors import UsageError
from loopbus.settings import (
    CREDS_ENV,
    NATS_URL_ENV,
    add_connection,
    connection,
    creds_data_dir,
)
from loopbus.supervisor import DAEMONS
from workers.arguments import WORKER_PROG_ENV
from workers.runtime import check_health


def register(sub: Any) -> None:
    names = [spec.name for spec in DAEMONS]
    worker = sub.add_parser("worker", help="run one daemon in the foreground")
    offer(worker.add_argument("name", help=", ".join(names)), names)
    worker.add_argument("rest", nargs=argparse.REMAINDER, help="the daemon's own options")
    worker.set_defaults(handler=run_worker)
    health = sub.add_parser("health", help="exit 0 when a daemon's beacon is fresh")
    add_connection(health)
    offer(health.add_argument("name", help=", ".join(names)), names)
    health.add_argument(
        "--here",
        action="store_true",
        help="check the replica on this host (a container's own), not any replica",
    )
    health.add_argument(
        "--json", action="store_true", help="one JSON document: healthy or not, the beacon"
    )
    health.set_defaults(handler=run_health)


def _module(name: str) -> str:
    for spec in DAEMONS:
        if spec.name == name:
            return spec.module
    raise UsageError(f"no daemon named {name!r}; daemons: {', '.join(s.name for s in DAEMONS)}")


def run_worker(args: argparse.Namespace) -> int:
    module = _module(args.name)
    os.environ[WORKER_PROG_ENV] = f"loopbus worker {args.name}"  # its errors name this command
    # -P: a project's own workers/ or schemas/ in the current folder must not shadow ours.
    data_dir = _data_dir_option(args.rest) or creds_data_dir()
    given = [
        *(sys.executable, "-P", "-m", module),
        *_creds(data_dir),
        *_served_url(data_dir),
        *args.rest,
    ]
    os.execv(sys.executable, given)


def _data_dir_option(rest: list[str]) -> Path | None:
    """The daemon's own ``--data-dir`` among its options, when it takes one (the builder,
    dispatcher, gate runner, merger, shipper): its credential and server are that
    directory's, not those of the folder the command was run from. Read as the daemon's
    argparse reads it (the last one given wins, ``--data`` abbreviates it); anything
    it cannot read is left for the daemon to refuse."""
    parser = argparse.ArgumentParser(add_help=False, exit_on_error=False)
    parser.add_argument("--data-dir")
    try:
        known, _ = parser.parse_known_args(rest)
    except (argparse.ArgumentError, SystemExit):
        return None
    return Path(known.data_dir) if known.data_dir else None


def _creds(data_dir: Path) -> list[str]:
    """The credential a daemon runs with when neither ``--creds`` nor ``$LOOPBUS_CREDS``
    names one: the system credential ``loopbus up`` made (the one it gives its daemons),
    found as every command finds its role's, or in the daemon's own ``--data-dir``. Given
    before the daemon's own options, so a ``--creds`` among them wins."""
    if os.environ.get(CREDS_ENV):
        return []
    path = default_file(data_dir, "system")
    return ["--creds", str(path)] if path.exists() else []


def _served_url(data_dir: Path) -> list[str]:
    """The server of the running ``loopbus up`` whose data directory holds that credential,
    when neither ``--nats-url`` nor ``$LOOPBUS_NATS_URL`` names one (it leaves 4222 when that
    port is taken; see :mod:`loopbus.served_url`). A ``--nats-url`` of the daemon's wins."""
    if os.environ.get(NATS_URL_ENV):
        return []
    url = served_url.read(data_dir)
    return ["--nats-url", url] if url else []


def run_health(args: argparse.Namespace) -> int:
    _module(args.name)

    async def check() -> int:
        bus = await connection(args).open()
        try:
            host = socket.gethostname() if args.here else None
            beacon = await check_health(bus, args.name, host=host)
        finally:
            await bus.close()
        if args.json:
            fields = {} if beacon is None else msgspec.structs.asdict(beacon)
            document = {"healthy": beacon is not None, **fields, "name": args.name}
            sys.stdout.write(msgspec.json.encode(document).decode() + "\n")
            return 0 if beacon is not None else 1
        if beacon is None:
            where = f" from its replica on {socket.gethostname()}" if args.here else ""
            print(f"{args.name}: no fresh health beacon{where}", file=sys.stderr)
            return 1
        print(f"{args.name}: healthy (pid {beacon.pid} on {beacon.host}, seq {beacon.last_seq})")
        return 0

    return asyncio.run(check())
