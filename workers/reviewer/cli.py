"""Command line of the reviewer daemon (and the shared ``--repo`` handling)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import structlog
from loopbus.workers.cli import Body, daemon_parser, main_for
from loopbus.workers.reviewer import config as review_config
from loopbus.workers.reviewer.config import RepoConfig
from loopbus.workers.reviewer.errors import ReviewError

log = structlog.get_logger()


def add_repo(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--repo",
        action="append",
        default=[],
        metavar="PATH",
        help="a repository whose loopbus.toml names the project (repeatable; none: idle)",
    )


def load_configs(parser: argparse.ArgumentParser, paths: Sequence[str]) -> dict[str, RepoConfig]:
    """project id -> config for every ``--repo``; a bad config is one line and exit 2.

    A repository with no ``loopbus.toml`` configures no command, so it is served by nobody
    (logged once): ``loopbus up --repo`` on a fresh repository must not crash-loop us.
    """
    configs: dict[str, RepoConfig] = {}
    for path in paths:
        if not (Path(path) / review_config.CONFIG_FILE).exists():
            log.warning("repo.unconfigured", repo=path, file=review_config.CONFIG_FILE)
            continue
        try:
            loaded = review_config.load(path)
        except ReviewError as exc:
            parser.error(f"--repo {path}: {exc}")
        if loaded.project in configs:
            parser.error(f"--repo {path}: project {loaded.project} is already served")
        configs[loaded.project] = loaded
    return configs


def main(argv: Sequence[str] | None = None) -> int:
    parser = daemon_parser("reviewer", "Run the configured reviewer on every ready unit.")
    add_repo(parser)

    def make_body(args: argparse.Namespace) -> Body:
        from loopbus.workers.reviewer.daemon import Reviewer

        configs = load_configs(parser, args.repo)
        return lambda ctx: Reviewer(ctx, configs).run()

    return main_for("reviewer", parser, make_body, argv)
