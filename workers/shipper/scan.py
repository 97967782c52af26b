"""Scan the commits reachable from trunk, and from no tip scanned before, for credentials.

Blocking (the git CLI); the daemon runs it in a thread. Every commit's diff is read,
merges against their first parent (``--diff-merges=first-parent``), so a line an "evil
merge" brings is read too, and a credential added in one commit and deleted in the next is
found in the commit that added it: it stays in every clone's history whatever the tree says.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from workers.errors import RepoError
from workers.gates.secrets import secret_in

MESSAGE = "(commit message)"
"""The path a leak in a commit's message is reported at."""


@dataclass(frozen=True)
class Leak:
    """A credential (``pattern``) added at ``path`` by ``commit``."""

    commit: str
    path: str
    pattern: str


@dataclass(frozen=True)
class Scan:
    tip: str
    commits: int
    leaks: list[Leak]


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args],
        capture_output=True,
        text=True,
        errors="surrogateescape",
        stdin=subprocess.DEVNULL,
    )
    if done.returncode != 0:
        raise RepoError(f"git {args[0]} in {repo}: {done.stderr.strip()[:300]}")
    return done.stdout


def tip_of(repo: Path, trunk: str) -> str:
    return _git(repo, "rev-parse", "--verify", f"{trunk}^{{commit}}").strip()


def scan(repo: Path, trunk: str, scanned: list[str]) -> Scan:
    """Every commit reachable from ``trunk`` and from none of ``scanned``, read for
    credentials (one leak per commit, path and pattern)."""
    tip = tip_of(repo, trunk)
    known = [s for s in scanned if _exists(repo, s)]  # a rewritten-away tip excludes nothing
    out = _git(
        repo,
        "log",
        "--format=%x00%H%n%B%x1e",
        "-p",
        "-U0",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        "--diff-merges=first-parent",
        tip,
        *(f"^{s}" for s in known),
    )
    leaks: list[Leak] = []
    seen: set[tuple[str, str, str]] = set()
    commits, commit, path, message = 0, "", "", False
    for line in out.split("\n"):  # not splitlines(): it splits at \x1e too
        if line.startswith("\x00"):
            commits, commit, path, message = commits + 1, line[1:].strip(), "", True
        elif message:
            # The commit message is history too: a key pasted into one is in every clone.
            message = not line.endswith("\x1e")
            pattern = secret_in(line.rstrip("\x1e"))
            if pattern is not None and (commit, MESSAGE, pattern) not in seen:
                seen.add((commit, MESSAGE, pattern))
                leaks.append(Leak(commit, MESSAGE, pattern))
        elif line.startswith("+++ "):
            path = line[6:] if line.startswith("+++ b/") else line[4:]
        elif line.startswith("+") and commit:
            pattern = secret_in(line[1:])
            if pattern is not None and (commit, path, pattern) not in seen:
                seen.add((commit, path, pattern))
                leaks.append(Leak(commit, path, pattern))
    return Scan(tip, commits, leaks)


def _exists(repo: Path, sha: str) -> bool:
    try:
        _git(repo, "cat-file", "-e", f"{sha}^{{commit}}")
    except RepoError:
        return False
    return True
