"""The arguments of ``loopbus demo``; the command is ``loopbus.commands.demo``, imported only
when it runs."""

from __future__ import annotations

from typing import Any

from loopbus.commands import deferred
from loopbus.seconds import seconds


def register(sub: Any) -> None:
    text = "run the whole loop on a scaffolded project and print its timeline"
    parser = sub.add_parser("demo", help=text, description=text)
    parser.add_argument(
        "--timeout", type=seconds(), default=240.0, help="give up after this many seconds"
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep the temporary directory (its path is printed)"
    )
    parser.set_defaults(handler=deferred("demo"))
