"""Command line of the builder daemon: ``python -m loopbus.workers.builder --repo PATH``."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import structlog
from loopbus.workers.agents.cli import add_repo, load_configs
from loopbus.workers.cli import Body, daemon_parser, main_for
from loopbus.workers.kernel import Kernel
from loopbus.workers.runtime import DaemonContext

log = structlog.get_logger()


def main(argv: Sequence[str] | None = None) -> int:
    parser = daemon_parser("builder", "Run the configured builder for every round a unit owes.")
    add_repo(parser)
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(".loopbus"),
        help="units' worktrees go under DATA_DIR/builds (default: %(default)s)",
    )

    def make_body(args: argparse.Namespace) -> Body:
        from loopbus.workers.builder.daemon import Builder

        configs = load_configs(parser, args.repo)

        async def body(ctx: DaemonContext) -> None:
            builder = Builder(ctx.bus, configs, args.data_dir.resolve())
            if not builder.projects:
                log.info("builder.idle", reason="no project configures [build] command")
                await ctx.stop.wait()
                return
            await Kernel(ctx.bus, builder, on_record=ctx.note_progress).run(ctx.stop)

        return body

    return main_for("builder", parser, make_body, argv)
