"""The arguments of ``loopbus init``; the command is ``loopbus.commands.init``, imported only
when it runs (the scaffold writes a git repository: its --help needs no git library)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from loopbus.commands import deferred


def register(sub: Any) -> None:
    text = "scaffold a small runnable project: package, criteria, loopbus.toml, plan, git"
    parser = sub.add_parser("init", help=text, description=text)
    parser.add_argument("directory", type=Path, help="where to create it (absent or empty)")
    parser.add_argument(
        "--project",
        default=None,
        metavar="ID",
        help="the project id (default: the directory's name)",
    )
    parser.set_defaults(handler=deferred("init"))
