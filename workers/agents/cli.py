"""The command line an agent-running daemon shares: ``--repo`` (repeatable), the configs
read from each repository, and a body that idles when no project configures a command."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import structlog

from schemas.project_config import TRUNK_ENV as TRUNK_ENV
from workers.agents import config as agent_config
from workers.agents.config import RepoConfig
from workers.cli import Body, kernel_body
from workers.errors import CONFIG_FILE, ConfigError, WorkerError
from workers.kernel import Daemon
from workers.runtime import DaemonContext
from workers.served import parse_served

log = structlog.get_logger()


def add_repo(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--repo",
        action="append",
        default=[],
        metavar="[PROJECT=]PATH",
        help="a repository whose loopbus.toml names the project (repeatable: one process "
        "serves every repository given; PROJECT=, when given, must be that name; none: idle)",
    )


def load_configs(parser: argparse.ArgumentParser, paths: Sequence[str]) -> dict[str, RepoConfig]:
    """project id -> config for every ``--repo``; a bad config is one line and exit 2.

    In a git repository (bare or not) the configuration is the ``loopbus.toml`` of the
    trunk commit (``$LOOPBUS_TRUNK``, else the current branch), never a working tree's; a
    plain folder's file is read as it is. A repository with no ``loopbus.toml`` configures
    no command, so it is served by nobody (logged once): ``loopbus up --repo`` on a fresh
    repository must not crash-loop us.
    """
    configs: dict[str, RepoConfig] = {}
    trunk = os.environ.get(TRUNK_ENV) or None
    try:
        served = parse_served(paths)
    except WorkerError as exc:
        parser.exit(2, f"{parser.prog}: error: {exc}\n")
    for given, path in ((s.project, str(s.path)) for s in served):
        try:
            text = agent_config.config_text(Path(path), trunk)
        except ConfigError as exc:
            parser.error(f"--repo {path}: {exc}")
        if text is None:
            log.warning("repo.unconfigured", repo=path, file=CONFIG_FILE)
            continue
        try:
            loaded = agent_config.parse(text, repo=str(Path(path).resolve()), trunk=trunk)
        except ConfigError as exc:
            parser.error(f"--repo {path}: {exc}")
        if given is not None and given != loaded.project:
            parser.exit(
                2,
                f"{parser.prog}: error: --repo {given}={path}: its {CONFIG_FILE} names project "
                f"{loaded.project}; give --repo {loaded.project}={path}, or the path alone\n",
            )
        if loaded.project in configs:
            parser.error(f"--repo {path}: project {loaded.project} is already served")
        configs[loaded.project] = loaded
    return configs


def serving_body(daemon: Daemon[Any], idle: str) -> Body:
    """Run ``daemon`` on the kernel; when it serves no project, idle until stopped (logging
    ``<name>.idle`` with the reason ``idle``) rather than follow every project's log."""
    if daemon.projects:
        return kernel_body(lambda: daemon)

    async def idle_body(ctx: DaemonContext) -> None:
        log.info(f"{daemon.name}.idle", reason=idle)
        await ctx.stop.wait()

    return idle_body
