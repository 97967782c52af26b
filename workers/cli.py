"""The shared command line of every daemon: ``python -m workers.<name> --nats-url URL``.

A daemon's ``cli.py`` builds its parser with :func:`daemon_parser`, adds its own options,
and calls :func:`main_for` with a ``make_body(args)`` that returns the daemon body.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from bus import BusError
from bus.connection import DEFAULT_URL, NATS_URL_ENV
from bus.creds import CREDS_ENV, load_credential
from bus.names import nats_url_from
from bus.tls import TLS_CA_ENV
from projections.intents import E
from workers.arguments import WORKER_PROG_ENV, OneLineParser
from workers.kernel import Daemon, Kernel
from workers.remote import Mirror
from workers.repo_args import add_mirror_options, keep_fresh, resolve
from workers.runtime import (
    INTERRUPTED,
    DaemonContext,
    cancel_all,
    configure_logging,
    run_daemon,
)

Body = Callable[[DaemonContext], Awaitable[None]]

PROJECT_LEASE_ENV = "LOOPBUS_PROJECT_LEASE"
MIN_PROJECT_LEASE_S = 3.0


def daemon_parser(name: str, description: str) -> argparse.ArgumentParser:
    # One line for a mistake, as every loopbus command; named as the user started it.
    prog = os.environ.pop(WORKER_PROG_ENV, None) or f"python -m workers.{name}"
    parser = OneLineParser(prog=prog, description=description)
    parser.add_argument(
        "--nats-url",
        default=nats_url_from(os.environ),
        help=f"NATS server (default: ${NATS_URL_ENV}, else {DEFAULT_URL})",
    )
    parser.add_argument(
        "--creds",
        type=Path,
        default=os.environ.get(CREDS_ENV) or None,
        help=f"the system credentials file (default: ${CREDS_ENV}; `loopbus worker` also looks "
        "for the system.json `loopbus up` made in $LOOPBUS_DATA_DIR or ./.loopbus/creds/; "
        "none: a server without auth)",
    )
    parser.add_argument(
        "--tls-ca",
        type=Path,
        default=os.environ.get(TLS_CA_ENV) or None,
        help=f"the CA to trust for a tls:// server (default: {TLS_CA_ENV})",
    )
    parser.add_argument(
        "--log-level",
        type=log_level_arg,
        default=os.environ.get("LOOPBUS_LOG_LEVEL", "info"),
        metavar="LEVEL",
        help=f"{', '.join(LOG_LEVELS)} (default: $LOOPBUS_LOG_LEVEL, else info)",
    )
    add_mirror_options(parser)
    parser.add_argument(
        "--project-lease",
        type=project_lease_arg,
        default=os.environ.get(PROJECT_LEASE_ENV) or None,
        metavar="SECONDS",
        help="run as one of several replicas: each project is acted on by the one replica "
        "holding its lease, which lapses SECONDS after its holder stops renewing it "
        f"(default: ${PROJECT_LEASE_ENV}; unset: act on every project, so run one replica)",
    )
    return parser


LOG_LEVELS = ("debug", "info", "warning", "error", "critical")


def log_level_arg(text: str) -> str:
    """A logging level by name, any case (an unknown one ended in a KeyError traceback)."""
    if text.lower() not in LOG_LEVELS:
        raise argparse.ArgumentTypeError(f"{text!r}: give one of {', '.join(LOG_LEVELS)}")
    return text.lower()


def project_lease_arg(text: str) -> float:
    """Seconds of a project lease, at least 3 (renewed every third), at most a day."""
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give seconds, such as 30") from None
    if not MIN_PROJECT_LEASE_S <= seconds <= 86400:
        raise argparse.ArgumentTypeError(
            f"{seconds:g}: give seconds from {MIN_PROJECT_LEASE_S:g} to 86400, such as 30"
        )
    return seconds


def make_kernel(ctx: DaemonContext, daemon: Daemon[E]) -> Kernel[E]:
    """The kernel of a daemon run from the command line: its progress feeds the health
    beacon, and it shares projects when the replica was started with a project lease."""
    return Kernel(ctx.bus, daemon, on_record=ctx.note_progress, share_ttl_s=ctx.project_lease_s)


def kernel_body(make_daemon: Callable[[], Daemon[Any]]) -> Body:
    """The body of a daemon written on the kernel: build it, run it until stopped."""

    async def body(ctx: DaemonContext) -> None:
        daemon = make_daemon()
        await make_kernel(ctx, daemon).run(ctx.stop)

    return body


def fetching(body: Body, mirrors: list[Mirror], every: float) -> Body:
    """``body`` with its mirrors fetched every ``every`` seconds while it runs."""

    async def run(ctx: DaemonContext) -> None:
        fetcher = asyncio.create_task(keep_fresh(mirrors, every, ctx.stop))
        try:
            await body(ctx)
        finally:
            await cancel_all([fetcher])  # cancelled until it ends: no stop waits on it for ever

    return run


def main_for(
    name: str,
    parser: argparse.ArgumentParser,
    make_body: Callable[[argparse.Namespace], Body],
    argv: Sequence[str] | None = None,
) -> int:
    """Parse arguments, configure logging (entry point only), run the daemon."""
    args = parser.parse_args(argv)
    configure_logging(args.log_level)
    mirrors = resolve(parser, args, name)  # a --repo URL: from here on, the mirror's folder
    body = make_body(args)
    if mirrors:
        body = fetching(body, mirrors, args.fetch_every)
    try:
        creds = load_credential(Path(args.creds)) if args.creds else None
        lease = getattr(args, "project_lease", None)
        return asyncio.run(
            run_daemon(name, body, args.nats_url, creds, args.tls_ca, project_lease_s=lease)
        )
    except BusError as exc:
        parser.exit(1, f"{parser.prog}: error: {exc}\n")
    except KeyboardInterrupt:  # Ctrl-C before the signal handlers were installed
        return INTERRUPTED
