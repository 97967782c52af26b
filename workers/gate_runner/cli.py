"""Command line of the gate-runner daemon: ``python -m workers.gate_runner``."""

from __future__ import annotations

import argparse
import asyncio
import functools
import socket
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import structlog

from workers import repository
from workers.cli import Body, daemon_parser, main_for, make_kernel
from workers.errors import GateError, WorkerError
from workers.gate_runner.daemon import GateRunnerDaemon
from workers.gates.config import parse_config
from workers.gates.key_names import DEFAULT_NAME, KEY_DIR_ENV
from workers.gates.runner import GateRunner
from workers.gates.shared import SharedGateRunner
from workers.gates.signing import Signer, load_existing, load_or_create
from workers.kernel.lease_flights import Flights
from workers.leases.capacity import jobs_arg
from workers.leases.decide import holder_name
from workers.runtime import DaemonContext
from workers.served import (
    RepoArgError,
    Served,
    add_repos,
    check_project_option,
    parse_served,
    run_each,
)

log = structlog.get_logger()

LEASE_TTL_S = 30.0
"""How long a runner's lease on an ask lives unrenewed (renewed every third of it)."""


def project_of(repo: Path) -> str:
    """The project id declared by the repository's ``HEAD`` commit."""
    info = repository.resolve(repo)
    if info.config_text is None:
        raise GateError(f"{repo} has no loopbus.toml at HEAD; pass --project to name the project")
    return parse_config(info.config_text).project


async def run(
    ctx: DaemonContext,
    *,
    repo: Path,
    data_dir: Path | None,
    runner_name: str = DEFAULT_NAME,
    project: str | None = None,
    jobs: int = 2,
    trunk: str | None = "HEAD",
    trunk_poll_s: float = 2.0,
    lease_ttl_s: float | None = LEASE_TTL_S,
    signer: Signer | None = None,
) -> None:
    """Gate ``repo`` until stopped (``signer``: the process's key, loaded once when it
    serves several repositories; else loaded here)."""
    served = project if project else await asyncio.to_thread(project_of, repo)
    if signer is None:
        signer = await asyncio.to_thread(load_or_create, data_dir, runner_name)
    principal = f"gate-runner@{socket.gethostname()}"
    options: dict[str, Any] = {"principal": principal, "jobs": jobs, "project": served}
    runner = GateRunner(ctx.bus, repo, signer, **options)
    holder = holder_name(runner.actor)
    if lease_ttl_s is not None:  # a check in flight on another runner is awaited
        flights = Flights(ctx.bus, runner.actor, holder, lease_ttl_s)
        runner = SharedGateRunner(ctx.bus, repo, signer, flights=flights, **options)
    log.info("gate.serving", project=served, repo=str(repo), runner=signer.runner)
    daemon = GateRunnerDaemon(
        runner,
        served,
        jobs=jobs,
        trunk=trunk,
        trunk_poll_s=trunk_poll_s,
        lease_ttl_s=lease_ttl_s,
        holder=holder,
    )
    await make_kernel(ctx, daemon).run(ctx.stop)


async def idle(ctx: DaemonContext, data_dir: Path | None, runner_name: str) -> None:
    """Without a repository there is nothing to gate: say so once, stay up until stopped.

    The key is made all the same, so a replica started idle (a compose service scaled
    before any repository is served) has a runner id of its own from the start, which an
    operator can read and compare with its siblings'."""
    signer = await asyncio.to_thread(load_or_create, data_dir, runner_name)
    log.warning(
        "gate.idle",
        reason="no --repo or LOOPBUS_REPO: no repository to gate",
        runner=signer.runner,
    )
    await ctx.stop.wait()


def repos_of(served: list[Served], project: str | None) -> dict[str, Path]:
    """project -> repository of every ``--repo`` (``--project`` names the one repository's
    project); the projects read from each ``loopbus.toml``. Raises a one-line error."""
    check_project_option(served, project)
    repos: dict[str, Path] = {}
    for item in served:
        name = item.project or project or project_of(item.path)
        if name in repos:
            raise RepoArgError(
                f"--repo {item.path}: project {name} is already served by --repo "
                f"{repos[name]}; give each project one repository"
            )
        repos[name] = item.path
    return repos


def main(argv: Sequence[str] | None = None) -> int:
    parser = daemon_parser("gate_runner", "Run a repository's gates when the log asks.")
    add_repos(parser, "a repository to gate")
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help=f"keep the signing key in DATA_DIR/keys (default: ${KEY_DIR_ENV}, else "
        "$XDG_DATA_HOME/loopbus/keys, else ~/.local/share/loopbus/keys)",
    )
    parser.add_argument(
        "--runner-name", default=DEFAULT_NAME, help="the key's name (default %(default)s)"
    )
    parser.add_argument(
        "--project",
        default=None,
        help="project id of the one --repo (default: from the repo's loopbus.toml; with "
        "several, write each as --repo PROJECT=PATH)",
    )
    parser.add_argument(
        "--jobs",
        type=jobs_arg,
        default="auto",
        help="suites and checks run at once for each --repo: a number, or 'auto' for this "
        "machine's cores (default auto)",
    )
    parser.add_argument(
        "--lease-ttl",
        type=float,
        default=LEASE_TTL_S,
        metavar="SECONDS",
        help="how long this runner's lease on an ask lives unrenewed; another runner of the "
        "project takes the ask over after that (default %(default)s)",
    )
    parser.add_argument(
        "--trunk", default="HEAD", help="the ref whose new commits are gated (default HEAD)"
    )
    parser.add_argument(
        "--trunk-poll",
        type=float,
        default=2.0,
        metavar="SECONDS",
        help="how often to look at --trunk; 0 turns trunk watching off (default %(default)s)",
    )

    def make_body(args: argparse.Namespace) -> Body:
        if not args.repo:
            return lambda ctx: idle(ctx, args.data_dir, args.runner_name)
        if args.jobs < 1:
            parser.error(f"--jobs {args.jobs}: give 1 or more")
        if not 0 < args.lease_ttl <= 86400:
            parser.error(f"--lease-ttl {args.lease_ttl}: give seconds above 0, at most 86400")
        try:  # a wrong repo or key is one line and exit 2, before connecting to anything
            repos = repos_of(parse_served(args.repo), args.project)
            load_existing(args.data_dir, args.runner_name)  # a new key waits for the bus
        except WorkerError as exc:
            parser.exit(2, f"{parser.prog}: error: {exc}\n")

        async def body(ctx: DaemonContext) -> None:
            signer = await asyncio.to_thread(load_or_create, args.data_dir, args.runner_name)
            options: dict[str, Any] = {
                "data_dir": args.data_dir,
                "runner_name": args.runner_name,
                "jobs": args.jobs,
                "trunk": args.trunk,
                "trunk_poll_s": args.trunk_poll,
                "lease_ttl_s": args.lease_ttl,
                "signer": signer,
            }
            await run_each(
                ctx,
                {
                    project: functools.partial(run, repo=repo, project=project, **options)
                    for project, repo in repos.items()
                },
            )

        return body

    return main_for(GateRunnerDaemon.name, parser, make_body, argv)
