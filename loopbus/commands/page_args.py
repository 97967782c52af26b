"""The arguments of ``loopbus page``; the command is ``loopbus.commands.page``, imported
only when it runs (the web server and nats-py are not needed to print its help)."""

from __future__ import annotations

from typing import Any

from loopbus.commands import deferred
from loopbus.settings import add_connection, add_project
from loopbus.web.options import add_web_options


def register(sub: Any) -> None:
    parser = sub.add_parser("page", help="serve the live, read-only operator page")
    add_connection(parser)
    add_project(parser, required=False, help="the project the page opens on")
    add_web_options(parser)
    parser.set_defaults(handler=deferred("page"))
