"""Command line of the lessons daemon: ``python -m workers.lessons``."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from schemas.ratchet import CATALOGUE
from workers.cli import Body, daemon_parser, kernel_body, main_for
from workers.lessons.daemon import Lessons


def main(argv: Sequence[str] | None = None) -> int:
    parser = daemon_parser(
        "lessons", "Record a closed slice's lessons, draft recurring ones as gates, close out."
    )
    parser.add_argument(
        "--repo", type=str, default=None, help="repository whose unit branches closeout collapses"
    )
    parser.add_argument("--trunk", default="main", help="trunk branch (%(default)s)")
    parser.add_argument(
        "--units-dir",
        type=Path,
        default=None,
        help="folder of the unit checkouts closeout may remove (default: none is removed)",
    )

    parser.add_argument(
        "--catalogue",
        default=CATALOGUE,
        help="the project lessons of every project are also folded into (%(default)s)",
    )

    def make_body(args: argparse.Namespace) -> Body:
        return kernel_body(
            lambda: Lessons(
                repo=args.repo,
                trunk=args.trunk,
                units_dir=args.units_dir,
                aggregate=args.catalogue,
            )
        )

    return main_for(Lessons.name, parser, make_body, argv)
