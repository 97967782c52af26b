"""A closed slice as a branch, an annotated tag, a PR description and a ``git bundle``.

Blocking (the git CLI); the daemon runs it in a thread. Names derive from the slice id alone
(``loopbus/ship/<slice>``, ``loopbus-ship-<slice>``), so a second run finds them: a branch or
tag that already points at the same commit is kept, one that points elsewhere is an error
(the slice was bundled at another commit, and a quiet move would rewrite what was shipped).
"""

from __future__ import annotations

import hashlib
import subprocess
from dataclasses import dataclass
from pathlib import Path

from workers.errors import RepoError


def branch_name(slice_id: str) -> str:
    return f"loopbus/ship/{slice_id}"


def tag_name(slice_id: str) -> str:
    return f"loopbus-ship-{slice_id}"


@dataclass(frozen=True)
class Bundle:
    commit: str
    branch: str
    tag: str
    bundle: Path
    sha256: str
    description: Path


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, stdin=subprocess.DEVNULL
    )
    if done.returncode != 0:
        raise RepoError(f"git {args[0]} in {repo}: {done.stderr.strip()[:300]}")
    return done.stdout.strip()


def _ref(repo: Path, ref: str) -> str | None:
    try:
        return _git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    except RepoError:
        return None


def make(repo: Path, trunk: str, slice_id: str, description: str, out: Path) -> Bundle:
    """Branch and tag ``slice_id`` at trunk's commit, write the description and the bundle
    into ``out`` (``<slice>.md``, ``<slice>.bundle``)."""
    commit = _git(repo, "rev-parse", "--verify", f"{trunk}^{{commit}}")
    branch, tag = branch_name(slice_id), tag_name(slice_id)
    for ref, create in (
        (f"refs/heads/{branch}", ("branch", branch, commit)),
        (
            f"refs/tags/{tag}",
            (
                "-c",
                "user.name=loopbus",
                "-c",
                "user.email=loopbus@localhost",
                "tag",
                "-a",
                tag,
                "-m",
                f"slice {slice_id} as shipped by loopbus",
                commit,
            ),
        ),
    ):
        existing = _ref(repo, ref)
        if existing is None:
            _git(repo, *create)
        elif existing != commit:
            raise RepoError(
                f"{ref} already points at {existing[:12]}, not trunk's {commit[:12]}: "
                "delete it to bundle the slice again"
            )
    out.mkdir(parents=True, exist_ok=True)
    text = out / f"{slice_id}.md"
    text.write_text(description, encoding="utf-8")
    bundle = out / f"{slice_id}.bundle"
    _git(repo, "bundle", "create", str(bundle), f"refs/heads/{branch}", f"refs/tags/{tag}")
    digest = hashlib.sha256(bundle.read_bytes()).hexdigest()
    return Bundle(commit, branch, tag, bundle, digest, text)
