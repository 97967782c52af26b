"""The arguments of ``loopbus init``; the command is ``loopbus.commands.init``, imported only
when it runs (the scaffold writes a git repository: its --help needs no git library)."""

from __future__ import annotations

from typing import Any

from loopbus.commands import deferred
from loopbus.completion import a_path


def register(sub: Any) -> None:
    text = "scaffold a small runnable project: package, criteria, loopbus.toml, plan, git"
    parser = sub.add_parser("init", help=text, description=text)
    # A string, not a Path: Path("") is ".", so an empty name would be taken for the
    # current directory; loopbus.commands.init refuses it.
    a_path(parser.add_argument("directory", help="where to create it (absent or empty)"))
    parser.add_argument(
        "--project",
        default=None,
        metavar="ID",
        help="the project id (default: the directory's name)",
    )
    parser.set_defaults(handler=deferred("init"))
