"""``loopbus approve --skeleton [SLICE]``: the operator approves a closed skeleton slice (the
one waiting, when ``SLICE`` is omitted); build slices may then be planned. The claim and
its checks are :mod:`loopbus.commands.approve_plan`'s."""

from __future__ import annotations

import argparse
from typing import Any

from loopbus.commands import approve_plan

OPTION = "skeleton"
"""The ``args`` attribute that is set (``""`` without a SLICE) when ``--skeleton`` was given."""


def add_option(group: Any) -> None:
    group.add_argument(
        "--skeleton",
        metavar="SLICE",
        nargs="?",
        const="",
        default=None,
        help="approve the closed skeleton slice (SLICE, or the one waiting)",
    )


def run(args: argparse.Namespace) -> int:
    return approve_plan.run(args)
