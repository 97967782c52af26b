"""``loopbus init DIR``: scaffold a runnable project (see :mod:`loopbus.scaffold`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from loopbus import scaffold
from loopbus.errors import UsageError


def register(sub: Any) -> None:
    text = "scaffold a small runnable project: package, criteria, loopbus.toml, plan, git"
    parser = sub.add_parser("init", help=text, description=text)
    parser.add_argument("directory", type=Path, help="where to create it (absent or empty)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    target: Path = args.directory
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise UsageError(f"{str(target)!r} exists and is not empty: pass a new directory")
    try:
        scaffold.write(target)
    except OSError as exc:
        raise UsageError(f"{str(target)!r} cannot be written ({exc.strerror})") from exc
    print(f"loopbus: project {scaffold.PROJECT} scaffolded in {target} (committed on main)")
    print("next, in two terminals:")
    print(f"  loopbus up --repo {target}")
    print(f"  loopbus plan submit {target / scaffold.PLAN_FILE} --project {scaffold.PROJECT} --new")
    print(f"  loopbus tail --project {scaffold.PROJECT}")
    return 0
