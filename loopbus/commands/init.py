"""``loopbus init DIR``: scaffold a runnable project named after DIR (:mod:`loopbus.scaffold`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from loopbus import scaffold
from loopbus.errors import UsageError
from schemas.ids import is_token

_RULE = "1 to 64 letters, digits, '-' or '_'"


def run(args: argparse.Namespace) -> int:
    if not args.directory.strip():
        raise UsageError(
            f"DIR {args.directory!r} is empty: name the directory to create (loopbus init calc)"
        )
    target = Path(args.directory)
    project = project_id(target, args.project)
    if target.exists() and not target.is_dir():
        raise UsageError(f"{str(target)!r} is a file, not a directory: pass a new directory's name")
    if target.is_dir() and any(target.iterdir()):
        raise UsageError(f"{str(target)!r} exists and is not empty: pass a new directory")
    try:
        scaffold.write(target, project=project)
    except OSError as exc:
        raise UsageError(f"{str(target)!r} cannot be written ({exc.strerror})") from exc
    print(f"loopbus: project {project} scaffolded in {target} (committed on main)")
    print("next, in two terminals in this directory:")
    print(f"  loopbus up --repo {target}")
    # No --new: `up --repo` opens the project (it adopts trunk's loopbus.toml first).
    print(f"  loopbus plan submit {target / scaffold.PLAN_FILE} --project {project}")
    print(f"  loopbus tail --project {project}")
    print("or let the planner plan every slice from the charter (docs/charter.md):")
    print(f"  loopbus charter submit {target / scaffold.CHARTER_FILE} --project {project}")
    print(f"  loopbus approve --charter --project {project} --why 'scope agreed'")
    return 0


def project_id(target: Path, given: str | None) -> str:
    """``--project`` when given, else the directory's name; a name that cannot be a
    project id is refused in one line."""
    if given is not None:
        if not is_token(given):
            raise UsageError(f"--project {given!r} is not a valid id: {_RULE}")
        return given
    name = target.resolve().name
    if not is_token(name):
        raise UsageError(
            f"directory name {name!r} cannot be a project id ({_RULE}): pass --project ID"
        )
    return name
