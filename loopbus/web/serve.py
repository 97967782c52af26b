"""Serve the operator page until SIGINT/SIGTERM (``loopbus up`` runs this as a child)."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from collections.abc import Sequence

from bus import BusError
from loopbus.errors import UsageError
from loopbus.settings import Connection, add_connection, connection
from loopbus.web import http
from loopbus.web.app import PageApp
from loopbus.web.options import add_web_options, check_port
from schemas.ids import is_token


async def serve(conn: Connection, host: str, port: int, project: str | None) -> int:
    """Run the page on ``host:port`` against the bus ``conn`` reaches."""
    bus = await conn.open_lasting("loopbus-page")
    app = PageApp(bus, default_project=project)
    try:
        server = await http.start(app, host, port)
    except OSError as exc:
        await bus.close()
        print(f"loopbus page: cannot listen on {host}:{port}: {exc.strerror}", file=sys.stderr)
        return 1
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stopping.set)
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else host
    print(f"loopbus page: http://{shown}:{port}/ (read-only)", flush=True)
    try:
        await stopping.wait()
    finally:
        server.close()
        await app.close()
        await bus.close()
    return 0


def parser() -> argparse.ArgumentParser:
    result = argparse.ArgumentParser(prog="python -m loopbus.web", description=__doc__)
    add_connection(result)
    add_web_options(result)
    result.add_argument("--project", default=None, help="the project the page opens on")
    return result


def run(args: argparse.Namespace) -> int:
    check_port(args.port, "--port")
    if args.project is not None and not is_token(args.project):
        raise UsageError(f"--project {args.project!r} is not a valid project id")
    try:
        return asyncio.run(serve(connection(args), args.host, args.port, args.project))
    except BusError as exc:
        print(f"loopbus page: {exc}", file=sys.stderr)
        return 1


def main(argv: Sequence[str] | None = None) -> int:
    from workers.runtime import configure_logging

    configure_logging(os.environ.get("LOOPBUS_LOG_LEVEL", "warning"))
    try:
        return run(parser().parse_args(argv))
    except UsageError as exc:
        print(f"loopbus page: error: {exc}", file=sys.stderr)
        return 2
