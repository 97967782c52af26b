"""The arguments of ``loopbus up``; the command is ``loopbus.commands.up``, imported only
when it runs (the server, the supervisor and every daemon's table are not needed to print
the help)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bus.names import DEFAULT_PORT
from loopbus.commands import deferred
from loopbus.settings import (
    DATA_DIR_ENV,
    DEFAULT_DATA_DIR,
    DEFAULT_HEARTBEAT_LAPSE,
    NATS_URL_ENV,
    add_connection,
)
from loopbus.web.options import add_web_options
from workers.leases.capacity import capacity_arg, jobs_arg

SYNC_CHOICES = ("interval", "always")
"""How the embedded server may write the log to disk (``--sync``)."""


def register(sub: Any) -> None:
    parser = sub.add_parser("up", help="run loopbus: embedded NATS, the log, every daemon")
    add_connection(
        parser,
        url_help=f"use this server instead of starting one (default: ${NATS_URL_ENV})",
        role="admin",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help=f"where JetStream stores the log and creds/ the credentials (default: "
        f"${DATA_DIR_ENV}, else {DEFAULT_DATA_DIR})",
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
        "--repo",
        default=None,
        help="the target repository daemons work on: a path, or a file://, ssh:// or https:// "
        "URL each daemon mirrors for itself under DATA_DIR/mirrors",
    )
    parser.add_argument(
        "--trunk",
        default=None,
        help="the trunk branch every daemon uses (default: the repository's current branch)",
    )
    parser.add_argument(
        "--replicas",
        type=int,
        default=1,
        help="copies of the log: 1 (the default) on the embedded server; with --nats-url, up "
        "to the servers of that cluster (3 on a 3-node cluster)",
    )
    parser.add_argument(
        "--sync",
        choices=SYNC_CHOICES,
        default=None,
        help="when the embedded server writes the log to disk: 'interval' (nats-server's "
        "default, every 2 minutes) or 'always' (before every acknowledgement; slower, see "
        "docs/operating.md)",
    )
    capacity = parser.add_argument_group("capacity")
    capacity.add_argument(
        "--jobs",
        type=jobs_arg,
        default=None,
        help="checks the gate runner runs at once: a number, or 'auto' for this machine's "
        "cores (default auto); add machines with `loopbus worker gate-runner`",
    )
    capacity.add_argument(
        "--capacity",
        type=capacity_arg,
        default=None,
        help="units the dispatcher keeps in flight at once: a number, or 'auto' for this "
        "machine's cores (default: $LOOPBUS_CAPACITY, else auto)",
    )
    capacity.add_argument(
        "--no-pace",
        dest="paced",
        action="store_false",
        help="keep up to --capacity units moving even when agents are quick next to the "
        "gates (by default fewer are, so that commits do not meet at the gates and run twice)",
    )
    web = parser.add_argument_group("operator page")
    add_web_options(web, prefix="web-")
    web.add_argument("--no-web", action="store_true", help="do not serve the operator page")
    parser.set_defaults(handler=deferred("up"))
