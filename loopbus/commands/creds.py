"""``loopbus creds add``: one more credential (an agent, an operator, a reader).

The file goes under ``<data-dir>/creds/`` (mode 0600). When ``loopbus up`` runs on that
data directory its server is told to re-read its users (SIGHUP), so the new credential
works at once; otherwise it is admitted on the next start. A directory with no
``creds/`` folder is refused: neither ``up`` nor ``provision --creds-out`` made it.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from bus.auth import CRED_ROLES
from bus.creds import creds_dir, file_name, new_credential, write_credential
from bus.embedded import EmbeddedServer, running_server
from loopbus.completion import offer
from loopbus.errors import UsageError
from loopbus.settings import DATA_DIR_ENV, DEFAULT_DATA_DIR, creds_data_dir
from schemas.ids import is_token

ADDABLE = tuple(r for r in CRED_ROLES if r != "admin")


def register(sub: Any) -> None:
    parser = sub.add_parser("creds", help="manage credentials (who may publish what)")
    verbs = parser.add_subparsers(dest="creds_verb", metavar="VERB")
    verbs.required = True
    add = verbs.add_parser("add", help="make a credential for one more principal")
    offer(add.add_argument("--role", required=True, help=", ".join(ADDABLE)), ADDABLE)
    add.add_argument("--principal", required=True, help="who it is for (one subject token)")
    add.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help=f"loopbus up's data directory (default: ${DATA_DIR_ENV}, else the nearest "
        f"{DEFAULT_DATA_DIR} with a creds/ folder here or above, as the other commands find it)",
    )
    add.set_defaults(handler=run_add)


def run_add(args: argparse.Namespace) -> int:
    if args.role not in ADDABLE:
        raise UsageError(f"--role {args.role!r} is not one of: {', '.join(ADDABLE)}")
    if not is_token(args.principal):
        raise UsageError(
            f"--principal {args.principal!r} is not one subject token: use letters, digits, "
            "'_' or '-' (max 64)"
        )
    # Found as the other commands find their credentials: `up --repo calc` keeps them beside
    # calc/, and a `creds add` run inside calc/ is meant for that same data directory.
    data_dir: Path = args.data_dir or creds_data_dir()
    folder = creds_dir(data_dir)
    if not folder.is_dir():
        # A typo'd or absent directory would get a seed no server ever reads, and a line
        # saying one will: `up` and `provision --creds-out` make creds/ on their first run.
        raise UsageError(
            f"{_named(args.data_dir, data_dir)} is not a loopbus data directory (it has no "
            "creds/ folder, which `loopbus up` or `loopbus provision --creds-out DIR` makes "
            "there): run `loopbus up` there first, or pass --data-dir with the data directory "
            "`loopbus up` printed"
        )
    target = folder / file_name(args.role, args.principal)
    if target.exists():
        raise UsageError(
            f"{target} exists already: a principal has one credential; hand out that file"
        )
    path = write_credential(folder, new_credential(args.role, args.principal))
    print(f"loopbus: {args.role} credential for {args.principal!r} written to {path}")
    if running_server(data_dir) is None:
        print(f"loopbus: no loopbus up runs on {data_dir}; the server admits it when it starts")
        return 0
    pid = EmbeddedServer(data_dir).reload()
    print(f"loopbus: the server (pid {pid}) reloaded its users; hand the file to {args.principal}")
    return 0


def _named(given: Path | None, data_dir: Path) -> str:
    """How the user named the data directory: the option, the variable, or the default."""
    if given is not None:
        return f"--data-dir {str(given)!r}"
    if os.environ.get(DATA_DIR_ENV):
        return f"{DATA_DIR_ENV}={str(data_dir)!r}"
    return (
        f"the default data directory {str(data_dir)!r} (no --data-dir or {DATA_DIR_ENV}, and "
        f"no {DEFAULT_DATA_DIR} with a creds/ folder here or in a folder above)"
    )
