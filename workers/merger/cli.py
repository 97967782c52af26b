"""Command line of the merger daemon:
``python -m loopbus.workers.merger --nats-url URL --repo PATH [--trunk main]``."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from loopbus.workers.cli import Body, daemon_parser, main_for
from loopbus.workers.merger.daemon import run


def main(argv: Sequence[str] | None = None) -> int:
    parser = daemon_parser(
        "merger", "Merge approved units into trunk, keeping trunk green (the only trunk writer)."
    )
    parser.add_argument(
        "--repo",
        type=Path,
        default=None,
        help="the repository whose trunk the merger owns (without it the daemon idles)",
    )
    parser.add_argument("--trunk", default="main", help="the trunk branch (default %(default)s)")
    parser.add_argument(
        "--project",
        default=None,
        help="project id (default: [project] id of loopbus.toml on trunk)",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(".loopbus"),
        help="where the merger's gate-signing key lives (default %(default)s)",
    )
    parser.add_argument(
        "--window",
        type=int,
        default=3,
        help="queued units tested at once, each on top of the ones ahead (default %(default)s)",
    )

    def make_body(args: argparse.Namespace) -> Body:
        if args.window < 1:
            parser.error(f"--window {args.window}: test at least one candidate at a time (>= 1)")
        return lambda ctx: run(
            ctx,
            repo=args.repo,
            trunk=args.trunk,
            project=args.project,
            data_dir=args.data_dir,
            window=args.window,
        )

    return main_for("merger", parser, make_body, argv)
