"""``loopbus approve --skeleton [SLICE]``: the operator approves a closed skeleton slice (the
one waiting, when ``SLICE`` is omitted); build slices may then be planned. The claim and
its checks are :mod:`loopbus.commands.approve_plan`'s."""

from __future__ import annotations

import argparse

from loopbus.commands import approve_plan


def run(args: argparse.Namespace) -> int:
    return approve_plan.run(args)
