"""Command line of the ratchet daemon: ``python -m workers.ratchet``."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from schemas.ratchet import CATALOGUE
from workers.cli import Body, daemon_parser, kernel_body, main_for
from workers.ratchet.daemon import Ratchet
from workers.ratchet.policy import policy_for


def main(argv: Sequence[str] | None = None) -> int:
    parser = daemon_parser(
        "ratchet", "Turn finding, gate and decision claims into facts; run the meta rule."
    )
    parser.add_argument(
        "--repo", type=str, default=None, help="repository whose loopbus.toml names the checks"
    )
    parser.add_argument(
        "--catalogue", default=CATALOGUE, help="the project profile moves live on (%(default)s)"
    )
    parser.add_argument(
        "--catalogue-operator",
        action="append",
        default=[],
        metavar="PRINCIPAL",
        help="an operator principal who settles profile loosenings (repeatable)",
    )

    def make_body(args: argparse.Namespace) -> Body:
        policy = policy_for(args.repo, args.catalogue, args.catalogue_operator)
        return kernel_body(lambda: Ratchet(policy))

    return main_for(Ratchet.name, parser, make_body, argv)
