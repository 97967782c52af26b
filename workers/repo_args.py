"""``--repo`` as every daemon takes it: a path, or a URL turned into the daemon's mirror.

:func:`main_for <workers.cli.main_for>` calls :func:`resolve` once the arguments are
parsed: each URL among the ``--repo`` values is mirrored (made or refreshed) and replaced
by the mirror's folder, so a daemon's own code reads a local repository either way. The
body then runs beside :func:`keep_fresh`, which fetches every mirror every
``--fetch-every`` seconds: a reader (gate runner, reviewer, planner, ...) sees the remote's
branches that old at most, the writers push through :func:`workers.remote.mirror_of`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import re
from pathlib import Path

import structlog

from schemas.ids import TOKEN_PATTERN
from workers.errors import RepoError
from workers.remote import Mirror, default_mirror_dir, mirror_at, parse_source

log = structlog.get_logger()

FETCH_EVERY_S = 5.0
_NAMED = re.compile(r"^(?P<name>[^/:=]+)=(?P<rest>.+)\Z")
_PROJECT = re.compile(TOKEN_PATTERN)
"""The dispatcher's ``PROJECT=PATH`` form (a URL's ``=`` comes after its ``://``). The name
is checked before anything is cloned: ``a.b=ssh://…`` is refused as a bad project id, not
mirrored first."""


def add_mirror_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--mirror-dir",
        type=Path,
        default=None,
        help="where a --repo given as a URL is mirrored (default: $LOOPBUS_MIRROR_DIR, else "
        "$XDG_STATE_HOME/loopbus/mirrors/<daemon>, else ~/.local/state/loopbus/mirrors/<daemon>)",
    )
    parser.add_argument(
        "--fetch-every",
        type=float,
        default=FETCH_EVERY_S,
        metavar="SECONDS",
        help="how often a mirror fetches from its remote (default %(default)s)",
    )


def resolve(parser: argparse.ArgumentParser, args: argparse.Namespace, daemon: str) -> list[Mirror]:
    """Replace each URL in ``args.repo`` by its mirror's folder (a path stays as given);
    a bad value or an unreachable remote is one line and exit 2. The mirrors made."""
    value = getattr(args, "repo", None)
    if value is None or value == []:
        return []
    if not 0 < args.fetch_every <= 86400:
        parser.error(f"--fetch-every {args.fetch_every}: give seconds above 0, at most 86400")
    root: Path = args.mirror_dir or default_mirror_dir(daemon)
    mirrors: list[Mirror] = []
    try:
        if isinstance(value, list):
            args.repo = [_one(str(v), root, mirrors) for v in value]
        else:
            args.repo = Path(_one(str(value), root, mirrors))
    except RepoError as exc:
        parser.exit(2, f"{parser.prog}: error: {exc}\n")
    return mirrors


def _one(value: str, root: Path, mirrors: list[Mirror]) -> str:
    named = _NAMED.match(value)
    prefix, rest = (f"{named['name']}=", named["rest"]) if named else ("", value)
    if named and not _PROJECT.fullmatch(named["name"]):
        shown = value if value.isprintable() else repr(value)
        raise RepoError(
            f"--repo {shown}: project {named['name']!r} is not a project id (letters, digits, "
            "'_' and '-', at most 64); give --repo PROJECT=PATH"
        )
    source = parse_source(rest)
    if source.url is None:
        return value
    mirror = mirror_at(source.url, root)
    try:
        mirror.ensure()
    except RepoError as exc:
        raise RepoError(
            f"--repo {source.shown} cannot be mirrored ({exc}); check the URL, the network "
            "and this machine's credential for it"
        ) from exc
    mirrors.append(mirror)
    log.info("repo.mirrored", repo=source.shown, mirror=str(mirror.path))
    return f"{prefix}{mirror.path}"


async def keep_fresh(mirrors: list[Mirror], every: float, stop: asyncio.Event) -> None:
    """Fetch every mirror every ``every`` seconds until ``stop``; a remote that cannot be
    reached is logged and tried again (the daemon works on what it last fetched)."""
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every)
        for mirror in mirrors:
            try:
                await asyncio.to_thread(mirror.fetch)
            except RepoError as exc:
                log.warning("repo.fetch_failed", mirror=str(mirror.path), error=str(exc))
