"""Command line of the projector daemon."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from loopbus.workers.cli import Body, daemon_parser, main_for
from loopbus.workers.projector.daemon import FLUSH_EVERY, run


def main(argv: Sequence[str] | None = None) -> int:
    parser = daemon_parser("projector", "Fold the log into materialised projections.")
    parser.add_argument(
        "--flush-every",
        type=int,
        default=FLUSH_EVERY,
        help="flush states at least every N events (default %(default)s)",
    )

    def make_body(args: argparse.Namespace) -> Body:
        return lambda ctx: run(ctx, flush_every=args.flush_every)

    return main_for("projector", parser, make_body, argv)
