"""Command line of the standards daemon."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from workers.cli import Body, daemon_parser, kernel_body, main_for
from workers.standards.daemon import Standards


def main(argv: Sequence[str] | None = None) -> int:
    parser = daemon_parser("standards", "Raise one budget-breach finding per machinery breach.")
    parser.add_argument(
        "--project",
        action="append",
        default=[],
        help="only these projects (repeatable; default: every project on the log)",
    )

    def make_body(args: argparse.Namespace) -> Body:
        return kernel_body(lambda: Standards(projects=args.project))

    return main_for(Standards.name, parser, make_body, argv)
