"""Command line of the shipper daemon: ``python -m workers.shipper --repo PATH``."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path

from workers.agents.cli import serving_body
from workers.cli import Body, daemon_parser, main_for
from workers.shipper import config
from workers.shipper.daemon import Shipper, ShipRepo


def main(argv: Sequence[str] | None = None) -> int:
    parser = daemon_parser(
        "shipper", "Scan trunk's history for credentials; bundle closed slices as PRs."
    )
    parser.add_argument("--repo", type=str, default=None, help="the project's repository")
    parser.add_argument(
        "--trunk", default=None, help="trunk's ref (default: $LOOPBUS_TRUNK, else HEAD)"
    )
    parser.add_argument(
        "--data-dir", type=Path, default=Path(".loopbus"), help="bundles go in DATA_DIR/ship"
    )

    def make_body(args: argparse.Namespace) -> Body:
        from workers.agents.config import config_text
        from workers.agents.config import parse as parse_repo

        repos: dict[str, ShipRepo] = {}
        if args.repo is not None:
            trunk = args.trunk or os.environ.get("LOOPBUS_TRUNK") or "HEAD"
            text = config_text(args.repo, None if trunk == "HEAD" else trunk)
            if text is not None:
                project = parse_repo(text).project
                ship = config.parse(text)
                repos[project] = ShipRepo(
                    path=args.repo.resolve(),
                    out=(args.data_dir / "ship" / project).resolve(),
                    trunk=trunk,
                    command=ship.command,
                    timeout_s=ship.timeout_s,
                    env=ship.env,
                )
        # Without a repository there is nothing to scan or bundle: idle, not follow the log.
        return serving_body(Shipper(repos), "no --repo with a loopbus.toml")

    return main_for(Shipper.name, parser, make_body, argv)
