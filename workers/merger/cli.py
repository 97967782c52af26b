"""Command line of the merger daemon:
``python -m workers.merger --nats-url URL --repo PATH|URL [--trunk main]``."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections.abc import Sequence
from pathlib import Path

import structlog

from bus import Bus
from workers.cli import Body, daemon_parser, main_for, make_kernel
from workers.errors import RepoError, WorkerError
from workers.gates.shared import SharedGateRunner
from workers.gates.signing import Signer, load_or_create
from workers.kernel.daemon import system_actor
from workers.kernel.lease_flights import Flights
from workers.leases.capacity import cores
from workers.leases.decide import holder_name
from workers.merger.config import project_of
from workers.merger.daemon import NAME, POLL_S, Merger
from workers.merger.gates import RunnerTrunkGates
from workers.runtime import DaemonContext
from workers.served import Served, check_project_option, parse_served, run_each

log = structlog.get_logger()

FLIGHT_TTL_S = 30.0
"""How long the merger's lease on a check it runs lives unrenewed (the gate runner's)."""


def merger_body(
    repos: Sequence[Served], *, trunk: str, project: str | None, data_dir: Path, window: int
) -> Body:
    """Idle (but healthy) without a repository; otherwise merge for every repository in
    this one process, each once its trunk names its project (``project``: the one
    repository's, when given)."""

    async def body(ctx: DaemonContext) -> None:
        if not repos:
            log.info("merger.idle", why="no repository configured (--repo)")
            await ctx.stop.wait()
            return
        signer = await asyncio.to_thread(load_or_create, data_dir, NAME)
        serving: dict[str, Path] = {}

        def one(repo: Path, named: str | None) -> Body:
            async def merge(ctx: DaemonContext) -> None:
                found = named or await wait_for_project(ctx.stop, repo, trunk)
                if found is None:
                    return
                if serving.setdefault(found, repo) != repo:
                    log.error("merger.doubled", project=found, repo=str(repo),
                              served_by=str(serving[found]))  # fmt: skip
                    return
                daemon = await asyncio.to_thread(
                    make_merger, ctx.bus, repo, found, trunk=trunk, data_dir=data_dir,
                    window=window, signer=signer,
                )  # fmt: skip
                await make_kernel(ctx, daemon).run(ctx.stop)

            return merge

        await run_each(
            ctx,
            {
                served.project or project or str(served.path.resolve()): one(
                    served.path, served.project or project
                )
                for served in repos
            },
        )

    return body


async def wait_for_project(stop: asyncio.Event, repo: Path, trunk: str) -> str | None:
    """The project trunk's ``loopbus.toml`` names, once it can be read (``None``: stopped)."""
    while not stop.is_set():
        try:
            project, why = await asyncio.to_thread(project_of, repo, trunk)
        except RepoError as exc:
            project, why = None, str(exc)
        if project is not None:
            return project
        log.warning("merger.waiting", why=why)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), POLL_S)
    return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = daemon_parser(
        NAME, "Merge approved units into trunk, keeping trunk green (the only trunk writer)."
    )
    parser.add_argument(
        "--repo",
        action="append",
        default=[],
        metavar="[PROJECT=]PATH|URL",
        help="a repository whose trunk the merger owns: a path, or a file://, ssh:// or "
        "https:// URL, mirrored under --mirror-dir (repeatable: one process merges for "
        "every repository given; without any the daemon idles)",
    )
    parser.add_argument("--trunk", default="main", help="the trunk branch (default %(default)s)")
    parser.add_argument(
        "--project",
        default=None,
        help="project id of the one --repo (default: [project] id of loopbus.toml on "
        "trunk; with several, write each as --repo PROJECT=PATH)",
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
        try:  # a bad --repo is one line and exit 2, before connecting to anything
            repos = parse_served(args.repo)
            check_project_option(repos, args.project)
        except WorkerError as exc:
            parser.exit(2, f"{parser.prog}: error: {exc}\n")
        return merger_body(
            repos,
            trunk=args.trunk,
            project=args.project,
            data_dir=args.data_dir,
            window=args.window,
        )

    return main_for(NAME, parser, make_body, argv)


def make_merger(
    bus: Bus,
    repo: Path,
    project: str,
    *,
    trunk: str = "main",
    data_dir: Path = Path(".loopbus"),
    window: int = 3,
    signer: Signer | None = None,
) -> Merger:
    """The daemon as ``python -m workers.merger`` runs it: trunk gates through the
    gate runner, its results signed with the merger's own key, each check run shared with
    the gate runners of the project (one run of a tree and configuration, whoever asks),
    as many at once as this machine has cores."""
    if signer is None:  # the key is named after the daemon
        signer = load_or_create(data_dir, NAME)
    actor = system_actor(Merger.name)
    flights = Flights(bus, actor, holder_name(actor), FLIGHT_TTL_S)
    runner = SharedGateRunner(
        bus, repo, signer, flights=flights, principal=actor.principal, project=project,
        jobs=cores(),
    )  # fmt: skip
    return Merger(
        repo, project=project, gates=RunnerTrunkGates(runner), trunk=trunk, actor=actor,
        window=window,
    )  # fmt: skip
