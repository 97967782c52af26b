"""Command line of the units daemon: ``python -m workers.units --nats-url URL``."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from workers.cli import Body, daemon_parser, kernel_body, main_for
from workers.units.daemon import Units, make_units


def main(argv: Sequence[str] | None = None) -> int:
    parser = daemon_parser("units", "Turn unit reports (claims) into transitions or findings.")
    parser.add_argument(
        "--repo",
        type=str,
        default=None,
        help="target repository: its loopbus.toml names the checks awaiting-gate may name",
    )
    parser.add_argument(
        "--project",
        action="append",
        default=[],
        metavar="P",
        help="serve only this project (repeatable; default: every project)",
    )

    def make_body(args: argparse.Namespace) -> Body:
        return kernel_body(lambda: make_units(args.repo, args.project))

    return main_for(Units.name, parser, make_body, argv)
