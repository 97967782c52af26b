"""A repository reached by URL: the ``--repo`` value parsed, and a daemon's own mirror of it.

``--repo`` is a plain path (today's behaviour: the daemon reads and writes that repository
in place, no mirror) or a URL — ``file://``, ``ssh://`` (or scp-like ``user@host:path``),
``https://``. A URL is mirrored into a bare repository under the daemon's mirror folder;
every reader then reads the mirror (:mod:`workers.repository` does not change) and the
writers publish with :class:`Mirror`: a builder force-pushes its unit branch (the branch is
the unit's, written by its builder only), the merger moves trunk with a compare-and-swap
push that names the old value, so two mergers cannot both advance it.

The transport is the ``git`` command: it knows the ssh agent, ``GIT_SSH_COMMAND`` and the
credential helpers a machine is already set up with, and its ``--force-with-lease`` is
checked by the remote under the ref's lock. Nothing of a repository's own configuration is
consulted: the mirror is ours, hooks are off, and only the three transports are let through
(``ext::`` and the like would run a command named in ``--repo``).

Blocking: async callers run these in a worker thread. One :class:`Mirror` per folder per
process (:func:`mirror_at`), its git calls serialized, so a fetch can never roll back a
ref the merger has just pushed.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from workers.errors import RepoError

SCHEMES = ("file", "ssh", "https")
MIRROR_DIR_ENV = "LOOPBUS_MIRROR_DIR"
GIT_TIMEOUT_S = 600.0
"""Longest one fetch or push may take before the daemon gives up on it (and tries again)."""

_SCP = re.compile(r"^(?P<user>[A-Za-z0-9._-]+@)?(?P<host>[A-Za-z0-9.-]+):(?!//)(?P<path>.+)\Z")
_FIX = "give a local path or a file://, ssh:// or https:// URL"
_LOCK = threading.Lock()
_MIRRORS: dict[Path, Mirror] = {}


@dataclass(frozen=True)
class RepoSource:
    """What ``--repo`` named: ``url`` for a remote, else ``path``."""

    given: str
    url: str | None = None
    path: Path | None = None

    @property
    def shown(self) -> str:
        """The value with any password or token in it blanked (it goes to logs)."""
        return redact(self.given)


def parse_source(value: str, option: str = "--repo") -> RepoSource:
    """``value`` as a local path or a URL; :class:`RepoError` (one line: the option, the
    value, the fix) for a scheme we do not fetch from or a URL that names nothing."""
    shown = redact(value)
    if not value.strip():
        raise RepoError(f"{option} {value!r} is empty: {_FIX}")
    if "::" in value.split("/", 1)[0]:
        raise RepoError(f"{option} {shown}: a transport helper (<name>::) is refused; {_FIX}")
    if "://" in value:
        parts = urlsplit(value)
        scheme = parts.scheme.lower()
        if scheme not in SCHEMES:
            raise RepoError(f"{option} {shown}: the scheme {scheme!r} is not served; {_FIX}")
        if scheme == "file":
            if parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
                raise RepoError(f"{option} {shown}: write a file URL as file:///absolute/path")
        elif not parts.hostname or parts.hostname.startswith("-"):
            raise RepoError(f"{option} {shown}: no host in the URL; {_FIX}")
        if parts.path in ("", "/"):
            raise RepoError(f"{option} {shown}: the URL names no repository path; {_FIX}")
        return RepoSource(given=value, url=value)
    scp = _SCP.match(value)
    if scp and not Path(value).exists():
        if scp["host"].startswith("-"):
            raise RepoError(f"{option} {shown}: a host may not start with '-'; {_FIX}")
        return RepoSource(given=value, url=value)
    return RepoSource(given=value, path=Path(value))


def redact(value: str) -> str:
    """``value`` with the user part of a URL blanked (an https token often stands there)."""
    return re.sub(r"://[^/@]*@", "://***@", value)


def default_mirror_dir(daemon: str) -> Path:
    """``$LOOPBUS_MIRROR_DIR``, else ``$XDG_STATE_HOME/loopbus/mirrors/<daemon>``, else
    ``~/.local/state/loopbus/mirrors/<daemon>``: one folder per daemon, so two daemons on
    one machine never write one mirror."""
    if os.environ.get(MIRROR_DIR_ENV):
        return Path(os.environ[MIRROR_DIR_ENV])
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "loopbus" / "mirrors" / daemon


def mirror_at(url: str, root: Path) -> Mirror:
    """The process's one :class:`Mirror` of ``url`` under ``root`` (made on first use)."""
    path = root / _folder_name(url)
    with _LOCK:
        found = _MIRRORS.get(path.resolve())
        if found is None:
            found = _MIRRORS[path.resolve()] = Mirror(url, path)
        return found


def mirror_of(repo: Path | str) -> Mirror | None:
    """The mirror whose folder is ``repo`` (``None``: a local repository, written in place)."""
    with _LOCK:
        return _MIRRORS.get(Path(repo).resolve())


def fetch_missing(repo: Path | str, *commits: str) -> None:
    """Fetch ``repo``'s remote now when it is a mirror lacking one of ``commits`` (a
    base or a head written elsewhere since the last fetch); nothing for a local one."""
    mirror = mirror_of(repo)
    if mirror is not None and not all(mirror.holds(c) for c in commits if c):
        mirror.fetch()


def publish_branch(repo: Path | str, branch: str, commit: str) -> None:
    """Push ``branch`` at ``commit`` to ``repo``'s remote when it is a mirror."""
    mirror = mirror_of(repo)
    if mirror is not None:
        mirror.push_branch(branch, commit)


def _folder_name(url: str) -> str:
    tail = re.sub(r"[^A-Za-z0-9._-]+", "-", url.rstrip("/").rsplit("/", 1)[-1]).strip("-.")
    digest = hashlib.sha256(url.encode()).hexdigest()[:16]
    return f"{tail.removesuffix('.git') or 'repo'}-{digest}.git"


class Mirror:
    """A bare mirror of ``url`` at ``path``: its branches are the remote's, as of the last
    fetch; commits the daemon writes sit in it until pushed."""

    def __init__(self, url: str, path: Path) -> None:
        self.url = url
        self.path = path
        self._lock = threading.Lock()

    def ensure(self) -> None:
        """Make the mirror when it does not exist yet (HEAD following the remote's), then
        fetch."""
        with self._lock:
            if not (self.path / "HEAD").exists():
                self._create()
            self._fetch()

    def fetch(self) -> None:
        """Bring every branch to where the remote has it (gone ones go)."""
        with self._lock:
            self._fetch()

    def holds(self, commit: str) -> bool:
        """Whether the mirror has ``commit`` (a sha, a branch: anything git resolves)."""
        spec = f"{commit}^{{commit}}"
        return self._git("cat-file", "-e", spec, check=False).returncode == 0

    def push_branch(self, branch: str, commit: str) -> None:
        """Point the remote's ``branch`` at ``commit``, whatever it held (a unit's branch is
        its builder's alone)."""
        ref = f"refs/heads/{branch}"
        with self._lock:
            rejected = self._push(f"+{commit}:{ref}")
            if rejected:
                raise RepoError(f"the remote refused {branch}: {rejected}")
            self._git("update-ref", ref, commit)

    def delete_branch(self, branch: str, head: str) -> bool:
        """Delete the remote's ``branch`` only if it still holds ``head``: True when gone."""
        ref = f"refs/heads/{branch}"
        with self._lock:
            rejected = self._push(f":{ref}", lease=f"{ref}:{head}")
            if rejected:
                self._fetch()
                return False
            self._git("update-ref", "-d", ref, check=False)
            return True

    def advance(self, branch: str, old: str | None, new: str) -> bool:
        """Move the remote's ``branch`` from ``old`` (``None``: it must not exist) to
        ``new``, only if it still holds ``old``: True when it moved. A lost race
        fetches, so the next read of the mirror sees the winner's commit."""
        ref = f"refs/heads/{branch}"
        with self._lock:
            rejected = self._push(f"{new}:{ref}", lease=f"{ref}:{old or ''}")
            if rejected:
                self._fetch()
                return False
            self._git("update-ref", ref, new)
            return True

    # -- internals ---------------------------------------------------------------------

    def _create(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        building = self.path.with_name(f"{self.path.name}.{os.getpid()}.new")
        shutil.rmtree(building, ignore_errors=True)
        _run(["git", "init", "--bare", "--quiet", str(building)], self.url)
        for key, value in (
            ("remote.origin.url", self.url),
            ("remote.origin.fetch", "+refs/heads/*:refs/heads/*"),
            ("gc.pruneExpire", "never"),  # the merger's untested candidates are unreferenced
        ):
            _run(["git", f"--git-dir={building}", "config", key, value], self.url)
        head = self._remote_head()
        if head is not None:
            _run(["git", f"--git-dir={building}", "symbolic-ref", "HEAD", head], self.url)
        building.rename(self.path)

    def _remote_head(self) -> str | None:
        out = _run([*_GIT, "ls-remote", "--symref", self.url, "HEAD"], self.url).stdout
        for line in out.splitlines():
            if line.startswith("ref: ") and line.endswith("\tHEAD"):
                return line[5:].split("\t")[0]
        return None

    def _fetch(self) -> None:
        self._git("fetch", "--prune", "--quiet", "origin")

    def _push(self, refspec: str, lease: str | None = None) -> str | None:
        """Push; ``None`` when the remote took it, else why it was refused (a lease that
        no longer holds, a hook's no). A transport failure raises."""
        args = ["push", "--porcelain", "origin", refspec]
        if lease is not None:
            args.insert(2, f"--force-with-lease={lease}")
        done = self._git(*args, check=False)
        for line in done.stdout.splitlines():
            if line.startswith("!\t"):
                return line.split("\t")[-1]
        if done.returncode != 0:
            raise RepoError(f"git push to {redact(self.url)} failed: {_last(done.stderr)}")
        return None

    def _git(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return _run([*_GIT, f"--git-dir={self.path}", *args], self.url, check=check)


_GIT = (
    "git",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "protocol.allow=never",
    *("-c", "protocol.file.allow=always", "-c", "protocol.ssh.allow=always"),
    *("-c", "protocol.https.allow=always"),
)


def _run(argv: list[str], url: str, *, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}  # never wait for a password on a tty
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            env=env,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except FileNotFoundError as exc:
        raise RepoError("git is not on PATH: install git to reach a repository by URL") from exc
    except subprocess.TimeoutExpired as exc:
        raise RepoError(f"git with {redact(url)} took over {GIT_TIMEOUT_S:.0f} s") from exc
    if check and done.returncode != 0:
        raise RepoError(f"git with {redact(url)} failed: {_last(done.stderr)}")
    return done


def _last(stderr: str) -> str:
    """git's own reason: its first ``fatal:``/``error:`` line (the advice after it is
    generic), else its last line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in lines:
        if line.startswith(("fatal:", "error:")):
            return line
    return lines[-1] if lines else "no message"
