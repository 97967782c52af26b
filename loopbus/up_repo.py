"""``loopbus up --repo``: a path the daemons share, or a URL each daemon mirrors for itself.

With a URL, ``up`` reads the repository (its checks, the configuration it adopts on a first
start) from a mirror of its own under ``DATA_DIR/mirrors/up``, and hands every daemon the
URL with ``--mirror-dir DATA_DIR/mirrors/<daemon>``: no two of them share a working copy,
just as when they run on different machines.
"""

from __future__ import annotations

from pathlib import Path

from loopbus.errors import UsageError
from workers.errors import RepoError
from workers.remote import RepoSource, mirror_at, parse_source

MIRRORS = "mirrors"


def source_of(value: str | None) -> RepoSource | None:
    """``--repo`` parsed (``None``: not given); a bad URL is one :class:`UsageError` line."""
    if value is None:
        return None
    try:
        source = parse_source(value)
    except RepoError as exc:
        raise UsageError(str(exc)) from exc
    if source.path is not None and not source.path.is_dir():
        raise UsageError(f"--repo {value!r} is not a directory")
    return source


def local_copy(source: RepoSource, data_dir: Path) -> Path:
    """The folder ``up`` reads the repository from: the path itself, or ``up``'s mirror."""
    if source.url is None:
        assert source.path is not None
        return source.path.resolve()
    mirror = mirror_at(source.url, data_dir / MIRRORS / "up")
    try:
        mirror.ensure()
    except RepoError as exc:
        raise UsageError(
            f"--repo {source.shown} cannot be mirrored ({exc}); check the URL, the network "
            "and this machine's credential for it"
        ) from exc
    return mirror.path


def daemon_repo(source: RepoSource | None) -> Path | str | None:
    """What the daemons are given as ``--repo``: the resolved path, or the URL."""
    if source is None:
        return None
    return source.url if source.url is not None else source.path.resolve() if source.path else None
