"""Where loopbus finds things: the NATS URL, the data directory, defaults in one place."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

DEFAULT_NATS_URL = "nats://127.0.0.1:4222"
NATS_URL_ENV = "LOOPBUS_NATS_URL"
DEFAULT_DATA_DIR = Path(".loopbus")
DEFAULT_HEARTBEAT_LAPSE = "5m"


def default_nats_url() -> str:
    """``LOOPBUS_NATS_URL`` when set, else the embedded server's default address."""
    return os.environ.get(NATS_URL_ENV) or DEFAULT_NATS_URL


def add_nats_url(parser: argparse.ArgumentParser) -> None:
    """The ``--nats-url`` option every command that talks to the bus takes."""
    parser.add_argument(
        "--nats-url",
        default=None,
        metavar="URL",
        help=f"NATS server to use (default: ${NATS_URL_ENV}, else {DEFAULT_NATS_URL})",
    )


def nats_url(args: argparse.Namespace) -> str:
    return str(getattr(args, "nats_url", None) or default_nats_url())
