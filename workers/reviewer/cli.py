"""Command line of the reviewer daemon: ``python -m workers.reviewer --repo PATH``."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from workers.agents.cli import add_repo, load_configs, serving_body
from workers.cli import Body, daemon_parser, main_for
from workers.leases.capacity import add_lease_options
from workers.reviewer.daemon import Reviewer


def main(argv: Sequence[str] | None = None) -> int:
    parser = daemon_parser("reviewer", "Run the configured reviewer on every ready unit.")
    add_repo(parser)
    add_lease_options(parser, "reviews", jobs=4, ttl_s=60.0)

    def make_body(args: argparse.Namespace) -> Body:

        configs = load_configs(parser, args.repo)
        reviewer = Reviewer(configs, lease_ttl_s=args.lease_ttl, jobs=args.jobs)
        return serving_body(reviewer, "no project configures [review] command")

    return main_for(Reviewer.name, parser, make_body, argv)
