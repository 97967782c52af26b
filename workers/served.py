"""Several projects' repositories served by one daemon process.

A repository-bound daemon (the gate runner, the merger) takes ``--repo [PROJECT=]PATH|URL``
as often as it serves repositories, and runs one :class:`~workers.kernel.Kernel` per
repository inside the one process: one event loop, one bus connection, one health beacon,
one signing key; each kernel follows its own project's subjects only (the daemon's
``projects``), holds its own leases under its own holder name, and, with a project lease,
shares its project only with the replicas that serve that project
(:mod:`workers.kernel.project_share`).

:func:`run_each` runs the repositories' bodies side by side. One that crashes cancels the
others and re-raises, so the process exits non-zero as a one-repository daemon does, and
the supervisor (or compose) starts it again with every repository.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from schemas.ids import TOKEN_PATTERN
from workers.errors import WorkerError
from workers.remote import parse_source
from workers.runtime import DaemonContext, cancel_all

log = structlog.get_logger()

REPO_ENV = "LOOPBUS_REPO"
_PROJECT = re.compile(TOKEN_PATTERN)
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


class RepoArgError(WorkerError):
    """A ``--repo`` value that cannot be served (the message is the one line shown)."""


@dataclass(frozen=True)
class Served:
    """One ``--repo`` value: the project named before ``=`` (``None``: read it from the
    repository's ``loopbus.toml``) and the repository's folder (a URL's mirror, once
    :func:`workers.repo_args.resolve` has run)."""

    project: str | None
    path: Path


class _Repos(argparse.Action):
    """Append, but the first ``--repo`` given replaces the default (``$LOOPBUS_REPO``)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        current = getattr(namespace, self.dest, None)
        given = [] if current is None or current is self.default else list(current)
        setattr(namespace, self.dest, [*given, values])


def add_repos(parser: argparse.ArgumentParser, what: str) -> None:
    """``--repo [PROJECT=]PATH|URL``, repeatable; the default is ``$LOOPBUS_REPO``."""
    env = os.environ.get(REPO_ENV)
    parser.add_argument(
        "--repo",
        action=_Repos,
        default=[env] if env else [],
        metavar="[PROJECT=]PATH|URL",
        help=f"{what} (repeatable: one process serves every repository given; without "
        "PROJECT= the project is read from the repository's loopbus.toml; default: "
        f"${REPO_ENV})",
    )


def parse_served(values: Sequence[str]) -> list[Served]:
    """Each ``--repo`` value as a :class:`Served`; a bad one raises :class:`RepoArgError`
    naming the value and the fix. Two values naming one project are refused too."""
    served: list[Served] = []
    for value in values:
        served.append(_one(str(value)))
    seen: dict[str, str] = {}
    paths: dict[Path, str] = {}
    for item, value in zip(served, values, strict=True):
        where = item.path.resolve()
        if where in paths:
            raise RepoArgError(
                f"--repo {shown(value)}: {item.path} is already served by --repo "
                f"{shown(paths[where])}; give each repository once"
            )
        paths[where] = str(value)
        if item.project is None:
            continue
        if item.project in seen:
            raise RepoArgError(
                f"--repo {shown(value)}: project {item.project} is already served by --repo "
                f"{shown(seen[item.project])}; give each project one repository"
            )
        seen[item.project] = str(value)
    return served


def check_project_option(served: Sequence[Served], project: str | None) -> None:
    """Refuse ``--project`` beside several ``--repo`` values, or beside one that names
    another project (which of the two would win is not for the daemon to guess)."""
    if project is None:
        return
    if len(served) > 1:
        raise RepoArgError(
            f"--project {project}: names the project of one --repo, and {len(served)} were "
            "given; write each as --repo PROJECT=PATH"
        )
    if served and served[0].project not in (None, project):
        raise RepoArgError(
            f"--project {project}: the --repo names project {served[0].project}; give the "
            "project once, in --repo PROJECT=PATH or in --project"
        )


def _one(raw: str) -> Served:
    value = shown(raw)
    name, sep, rest = raw.partition("=")
    if not sep or _URL.match(raw) or "/" in name:  # a path or URL whose own '=' is later
        name, rest = "", raw
    elif not name:
        raise RepoArgError(
            f"--repo {value}: nothing before '='; give --repo PROJECT=PATH with a project id, "
            "or the path alone to read the id from its loopbus.toml"
        )
    elif not _PROJECT.fullmatch(name):
        raise RepoArgError(
            f"--repo {value}: project {name!r} is not a project id (letters, digits, '_' and "
            "'-', at most 64); give --repo PROJECT=PATH"
        )
    if not rest.strip():
        raise RepoArgError(f"--repo {value}: no repository after '='; give --repo {name}=PATH")
    if parse_source(rest).url is None and not Path(rest).exists():
        raise RepoArgError(
            f"--repo {value}: {shown(rest)} does not exist; give the folder of a git repository "
            "(or a file://, ssh:// or https:// URL)"
        )
    return Served(name or None, Path(rest))


def shown(value: str) -> str:
    """``value`` as an error line shows it: quoted when it holds a newline or another
    character that would break the one line."""
    return value if value.isprintable() else repr(value)


Body = Callable[[DaemonContext], Awaitable[None]]


async def run_each(ctx: DaemonContext, bodies: Mapping[str, Body]) -> None:
    """Run every repository's body (project -> body) in this process until ``ctx.stop``.

    A body that raises cancels the others and its error is re-raised: the daemon exits
    non-zero and is started again whole, as a daemon of one repository is. A body that
    returns before the stop (nothing to serve) leaves the others running."""
    tasks: dict[asyncio.Future[None], str] = {
        asyncio.ensure_future(body(ctx)): project for project, body in bodies.items()
    }
    pending = set(tasks)
    try:
        while pending:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_EXCEPTION)
            for task in done:
                if not task.cancelled() and task.exception() is not None:
                    log.error("served.crashed", project=tasks[task], error=repr(task.exception()))
                    task.result()
    finally:
        await cancel_all([task for task in tasks if isinstance(task, asyncio.Task)])
