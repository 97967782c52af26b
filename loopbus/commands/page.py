"""``loopbus page``: serve the operator page against a running bus.

``loopbus up`` already serves it (``--web-port``); this is for a bus started elsewhere (the
compose cluster, or ``LOOPBUS_NATS_URL``).
"""

from __future__ import annotations

import argparse
from typing import Any

from loopbus.settings import add_connection, add_project
from loopbus.web import serve


def register(sub: Any) -> None:
    parser = sub.add_parser("page", help="serve the live, read-only operator page")
    add_connection(parser)
    add_project(parser, required=False, help="the project the page opens on")
    serve.add_web_options(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    return serve.run(args)
