"""Command line of the builder daemon: ``python -m workers.builder --repo PATH``."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import structlog

from workers.agents.cli import add_repo, load_configs
from workers.builder.daemon import Builder
from workers.cli import Body, daemon_parser, main_for, make_kernel
from workers.leases.capacity import jobs_arg
from workers.runtime import DaemonContext

log = structlog.get_logger()

JOBS = 8
LEASE_TTL_S = 60.0
"""How long a builder's lease on a round lives unrenewed (renewed every third of it)."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = daemon_parser("builder", "Run the configured builder for every round a unit owes.")
    add_repo(parser)
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(".loopbus"),
        help="units' worktrees go under DATA_DIR/builds (default: %(default)s)",
    )
    parser.add_argument(
        "--jobs",
        type=jobs_arg,
        default=JOBS,
        help="rounds of one project run at once by this builder: a number, or 'auto' for "
        "this machine's cores (default %(default)s)",
    )
    parser.add_argument(
        "--lease-ttl",
        type=float,
        default=LEASE_TTL_S,
        metavar="SECONDS",
        help="how long this builder's lease on a round lives unrenewed; another builder of "
        "the project takes the round over after that (default %(default)s)",
    )

    def make_body(args: argparse.Namespace) -> Body:

        if not 0 < args.lease_ttl <= 86400:
            parser.error(f"--lease-ttl {args.lease_ttl}: give seconds above 0, at most 86400")
        configs = load_configs(parser, args.repo)

        async def body(ctx: DaemonContext) -> None:
            builder = Builder(
                ctx.bus,
                configs,
                args.data_dir.resolve(),
                lease_ttl_s=args.lease_ttl,
                jobs=args.jobs,
            )
            if not builder.projects:
                log.info("builder.idle", reason="no project configures [build] command")
                await ctx.stop.wait()
                return
            await make_kernel(ctx, builder).run(ctx.stop)

        return body

    return main_for(Builder.name, parser, make_body, argv)
