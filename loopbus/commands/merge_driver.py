"""``loopbus merge-driver %O %A %B %P [%L]``: the entity merge driver, as git calls it.

Install it for a repository of your own (see docs/merge-driver.md)::

    git config merge.loopbus.name "loopbus entity merge"
    git config merge.loopbus.driver "loopbus merge-driver %O %A %B %P %L"
    echo "* merge=loopbus" >> .gitattributes

The merge of BASE, OURS and THEIRS is written into OURS (git's ``%A``); the exit status is
0 when clean, 1 when conflict markers (naming the entity) were written, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
from typing import Any

from workers.arguments import file_names
from workers.entity_merge import run_git_driver


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "merge-driver",
        help="git merge driver merging by entity (functions, classes…) with tree-sitter",
        description=(
            "Three-way merge BASE OURS THEIRS of PATH into OURS, as git's merge driver "
            "(configure: merge.loopbus.driver = loopbus merge-driver %O %A %B %P %L)."
        ),
    )
    files = parser.add_argument(
        "files",
        nargs="*",
        metavar="BASE OURS THEIRS PATH [MARKER_SIZE]",
        help="git's %%O %%A %%B %%P and, optionally, %%L",
    )
    file_names(files)  # %P is the repository's path, in whatever bytes it has
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    return run_git_driver(list(args.files))
