"""Command line of the investigator daemon."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from loopbus.workers.cli import Body, daemon_parser, main_for
from loopbus.workers.reviewer.cli import add_repo, load_configs


def main(argv: Sequence[str] | None = None) -> int:
    parser = daemon_parser("investigator", "Investigate the second failure of anything.")
    add_repo(parser)

    def make_body(args: argparse.Namespace) -> Body:
        from loopbus.workers.investigator.daemon import Investigator

        configs = load_configs(parser, args.repo)
        return lambda ctx: Investigator(ctx, configs).run()

    return main_for("investigator", parser, make_body, argv)
