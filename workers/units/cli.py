"""Command line of the units daemon: ``python -m loopbus.workers.units --nats-url URL``."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from loopbus.schemas import project_subjects
from loopbus.workers.cli import Body, daemon_parser, main_for
from loopbus.workers.units.daemon import run


def main(argv: Sequence[str] | None = None) -> int:
    parser = daemon_parser("units", "Turn unit reports (claims) into transitions or findings.")
    parser.add_argument(
        "--repo",
        type=Path,
        default=None,
        help="target repository: its loopbus.toml names the checks awaiting-gate may name",
    )
    parser.add_argument(
        "--project",
        action="append",
        default=[],
        metavar="P",
        help="serve only this project (repeatable; default: every project)",
    )

    def make_body(args: argparse.Namespace) -> Body:
        subjects = [project_subjects(p) for p in args.project] or ["loop.>"]
        return lambda ctx: run(ctx, repo=args.repo, subjects=subjects)

    return main_for("units", parser, make_body, argv)
