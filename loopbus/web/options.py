"""The page's command-line options, apart from the server: ``loopbus page --help`` and
``loopbus up --help`` read them without importing the web server."""

from __future__ import annotations

from typing import Any

from loopbus.errors import UsageError

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8787


def add_web_options(parser: Any, *, prefix: str = "") -> None:
    """``--host``/``--port`` (``--web-host``/``--web-port`` on ``loopbus up``)."""
    parser.add_argument(
        f"--{prefix}host",
        default=DEFAULT_HOST,
        metavar="ADDRESS",
        help="address the page listens on (default %(default)s: this machine only; "
        "0.0.0.0 shows it to the network)",
    )
    parser.add_argument(
        f"--{prefix}port",
        type=int,
        default=DEFAULT_PORT,
        help="port of the page (default %(default)s)",
    )


def check_port(port: int, option: str) -> None:
    if not 1 <= port <= 65535:
        raise UsageError(f"{option} {port} is not a TCP port (1-65535)")
