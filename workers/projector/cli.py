"""Command line of the projector daemon."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from loopbus.workers.cli import Body, daemon_parser, main_for
from loopbus.workers.kernel import Kernel
from loopbus.workers.projector.daemon import FLUSH_EVERY, ProjectorDaemon
from loopbus.workers.runtime import DaemonContext


def main(argv: Sequence[str] | None = None) -> int:
    parser = daemon_parser("projector", "Fold the log into materialised projections.")
    parser.add_argument(
        "--flush-every",
        type=int,
        default=FLUSH_EVERY,
        help="flush states at least every N events (default %(default)s)",
    )

    def make_body(args: argparse.Namespace) -> Body:
        async def body(ctx: DaemonContext) -> None:
            daemon = ProjectorDaemon(ctx.bus, flush_every=args.flush_every)
            await Kernel(ctx.bus, daemon, on_record=ctx.note_progress).run(ctx.stop)

        return body

    return main_for("projector", parser, make_body, argv)
