"""Command line of the integrity daemon: ``python -m loopbus.workers.integrity``."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from loopbus.workers.cli import Body, daemon_parser, kernel_body, main_for
from loopbus.workers.integrity.daemon import Integrity


def main(argv: Sequence[str] | None = None) -> int:
    parser = daemon_parser("integrity", "Name every forger in a finding.")
    parser.add_argument(
        "--project",
        action="append",
        default=[],
        metavar="P",
        help="watch only this project (repeatable; default: every project)",
    )

    def make_body(args: argparse.Namespace) -> Body:
        return kernel_body(lambda: Integrity(projects=args.project))

    return main_for("integrity", parser, make_body, argv)
