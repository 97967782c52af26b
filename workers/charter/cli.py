"""Command line of the charter daemon: ``python -m workers.charter --nats-url URL``."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from workers.agents.cli import add_repo, load_configs
from workers.charter.daemon import DEFAULT_TICK_S, CharterDaemon
from workers.cli import Body, daemon_parser, main_for, make_kernel
from workers.runtime import DaemonContext


def main(argv: Sequence[str] | None = None) -> int:
    parser = daemon_parser(
        "charter", "Approve charters, judge the run's criteria on trunk, keep its budgets."
    )
    parser.add_argument(
        "--tick",
        type=float,
        default=DEFAULT_TICK_S,
        metavar="SECONDS",
        help="look at the run's wall clock at least this often (default: %(default)s)",
    )
    parser.add_argument(
        "--project",
        action="append",
        default=[],
        metavar="P",
        help="only this project (repeatable; default: every project)",
    )
    add_repo(parser)

    def make_body(args: argparse.Namespace) -> Body:
        if args.tick <= 0:
            parser.error(f"--tick {args.tick}: must be more than 0 seconds")

        configs = load_configs(parser, args.repo)

        async def body(ctx: DaemonContext) -> None:
            daemon = CharterDaemon(projects=args.project, tick_s=args.tick, configs=configs)
            await make_kernel(ctx, daemon).run(ctx.stop)

        return body

    return main_for(CharterDaemon.name, parser, make_body, argv)
