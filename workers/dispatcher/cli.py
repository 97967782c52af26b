"""Command line of the dispatcher daemon."""

from __future__ import annotations

import argparse
import asyncio
import os
import tomllib
from collections.abc import Sequence
from pathlib import Path

import structlog

from workers.agents.verify_config import ship_rules
from workers.cli import Body, daemon_parser, main_for, make_kernel
from workers.dispatcher.daemon import Dispatcher
from workers.dispatcher.name import NAME
from workers.dispatcher.repo import ProjectRepo
from workers.errors import CONFIG_FILE, ConfigError, WorkerError
from workers.gates.key_names import KEY_DIR_ENV
from workers.gates.signing import load_existing, load_or_create
from workers.leases.capacity import capacity_arg
from workers.runtime import DaemonContext

log = structlog.get_logger()


def main(argv: Sequence[str] | None = None) -> int:
    parser = daemon_parser(
        NAME, "Validate slice plans, dispatch units wave by wave, boot increments."
    )
    parser.add_argument(
        "--repo",
        action="append",
        default=[],
        metavar="[PROJECT=]PATH",
        help="a project's repository (repeatable); without PROJECT= the project id is read "
        "from [project] id in the loopbus.toml on its trunk",
    )
    parser.add_argument(
        "--trunk",
        default=os.environ.get("LOOPBUS_TRUNK", "HEAD"),
        help="the ref that is trunk in every --repo (default: %(default)s)",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="keep the key boot results are signed with in DATA_DIR/keys (default: "
        f"${KEY_DIR_ENV}, else $XDG_DATA_HOME/loopbus/keys, else ~/.local/share/loopbus/keys)",
    )
    parser.add_argument(
        "--capacity",
        type=capacity_arg,
        default=os.environ.get("LOOPBUS_CAPACITY", "auto"),
        help="most units running at once per project: a number, or 'auto' for this "
        "machine's cores (default: $LOOPBUS_CAPACITY, else auto)",
    )
    parser.add_argument(
        "--no-pace",
        dest="paced",
        action="store_false",
        help="keep up to --capacity units moving even when their commits would meet at the "
        "gates (by default fewer are while agents are quick next to the gates: see "
        "docs/cli.md, Capacity and more replicas)",
    )
    parser.add_argument(
        "--project",
        action="append",
        default=[],
        help="only these projects (repeatable; default: every project on the log)",
    )

    def make_body(args: argparse.Namespace) -> Body:
        if args.capacity < 1:
            parser.error(f"--capacity {args.capacity} must be at least 1")
        repos = parse_repos(args.repo, args.trunk)
        try:  # [verify] and [ship] say what SHIP needs; a mistake there is one line, exit 2
            rules = {p: ship_rules(r.path, args.trunk) for p, r in repos.items()}
        except WorkerError as exc:
            parser.exit(2, f"{parser.prog}: error: {exc}\n")
        try:  # a key that cannot be read is one line and exit 2, before connecting
            load_existing(args.data_dir, NAME)  # a new key waits for the bus
        except WorkerError as exc:
            parser.exit(2, f"{parser.prog}: error: {exc}\n")

        async def body(ctx: DaemonContext) -> None:
            signer = await asyncio.to_thread(load_or_create, args.data_dir, NAME)
            dispatcher = Dispatcher(
                ctx.bus,
                repos=repos,
                signer=signer,
                capacity=args.capacity,
                paced=args.paced,
                projects=args.project,
                ship=rules,
            )
            await make_kernel(ctx, dispatcher).run(ctx.stop)

        return body

    return main_for(NAME, parser, make_body, argv)


def parse_repos(values: Sequence[str], trunk: str) -> dict[str, ProjectRepo]:
    """``[PROJECT=]PATH`` options as project -> repository.

    A repository whose project cannot be told is left out with a warning rather than
    stopping the daemon: that project's plans are then refused, since the pending criteria
    they are checked against cannot be read.
    """
    repos: dict[str, ProjectRepo] = {}
    for value in values:
        project, sep, path = value.partition("=")
        if not sep:
            project, path = "", value
        repo = ProjectRepo(Path(path).resolve(), trunk)
        if not project:
            try:
                project = project_id(repo)
            except WorkerError as exc:
                log.warning("dispatcher.repo_skipped", repo=str(repo.path), error=str(exc))
                continue
        repos[project] = repo
    return repos


def project_id(repo: ProjectRepo) -> str:
    """``[project] id`` of the ``loopbus.toml`` on the repository's trunk (read leniently:
    only the id, so a configuration with a mistake elsewhere still names its project)."""
    info = repo.trunk_commit()
    source = f"--repo {repo.path}: {CONFIG_FILE} on trunk"
    if info.config_text is None:
        raise ConfigError(
            "file", None, f"there is none; pass --repo PROJECT={repo.path}", source=source
        )
    try:
        project = tomllib.loads(info.config_text).get("project", {}).get("id")
    except (tomllib.TOMLDecodeError, AttributeError) as exc:
        raise ConfigError("file", None, f"not TOML: {exc}", source=source) from exc
    if not isinstance(project, str) or not project:
        raise ConfigError("project.id", project, "pass --repo PROJECT=PATH", source=source)
    return project
