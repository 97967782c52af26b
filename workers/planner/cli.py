"""Command line of the planner daemon: ``python -m workers.planner``."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from workers.agents.cli import add_repo, load_configs, serving_body
from workers.cli import Body, daemon_parser, main_for
from workers.planner.daemon import Planner


def main(argv: Sequence[str] | None = None) -> int:
    parser = daemon_parser("planner", "Plan the next slice of a running charter.")
    add_repo(parser)

    def make_body(args: argparse.Namespace) -> Body:

        planner = Planner(load_configs(parser, args.repo))
        return serving_body(planner, "no project configures [plan] command")

    return main_for(Planner.name, parser, make_body, argv)
