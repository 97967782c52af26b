"""Command line of the investigator daemon: ``python -m workers.investigator``."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from workers.agents.cli import add_repo, load_configs, serving_body
from workers.cli import Body, daemon_parser, main_for
from workers.investigator.daemon import Investigator
from workers.leases.capacity import add_lease_options


def main(argv: Sequence[str] | None = None) -> int:
    parser = daemon_parser("investigator", "Investigate the second failure of anything.")
    add_repo(parser)
    add_lease_options(parser, "investigations", jobs=4, ttl_s=60.0)

    def make_body(args: argparse.Namespace) -> Body:

        configs = load_configs(parser, args.repo)
        investigator = Investigator(configs, lease_ttl_s=args.lease_ttl, jobs=args.jobs)
        return serving_body(investigator, "no project configures [investigator] command")

    return main_for(Investigator.name, parser, make_body, argv)
