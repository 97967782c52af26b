"""Closeout of a slice: collapse its unit branches and checkouts, and count what remains.

A unit branch (``loopbus/<project>/<unit>``) is deleted only when its head is reachable
from trunk (every commit of it is on trunk), and only by a compare-and-delete of the ref
(``git update-ref -d REF OLD``), so a branch that moved after it was read is kept. Its
checkouts under the units directory are removed first, without force: a checkout holding
uncommitted changes refuses, and then the branch is kept with it. Work not on trunk is
never deleted. Everything here blocks (git); the daemon runs it in a thread.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from dulwich.objects import ObjectID
from dulwich.refs import Ref

from schemas.lessons import KeptBranch
from workers import history, remote, repository
from workers.errors import WorkerError


def unit_branch(project: str, unit: str) -> str:
    """The unit's branch, as the builder names it (``loopbus/<project>/<unit>``)."""
    return repository.unit_branch(project, unit)


@dataclass
class Hygiene:
    trunk: str = ""
    deleted: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    kept: list[KeptBranch] = field(default_factory=list)
    branches: int = 0
    worktrees: int = 0
    problem: str = ""


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = ["git", "-C", str(repo), *args]
    try:
        return subprocess.run(command, capture_output=True, text=True, check=False, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return subprocess.CompletedProcess(command, 127, "", str(exc))


def worktrees(repo: Path) -> list[tuple[Path, str]]:
    """(path, branch) of every linked checkout of ``repo`` (branch empty when detached)."""
    listed = _git(repo, "worktree", "list", "--porcelain")
    out: list[tuple[Path, str]] = []
    path: Path | None = None
    for line in listed.stdout.splitlines():
        if line.startswith("worktree "):
            path = Path(line.removeprefix("worktree "))
            out.append((path, ""))
        elif line.startswith("branch refs/heads/") and path is not None:
            out[-1] = (path, line.removeprefix("branch refs/heads/"))
    return out[1:]  # the first is the repository's own


def _under(path: Path, root: Path | None) -> bool:
    if root is None:
        return False
    try:
        path.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True


def close_out(
    repo: Path, trunk: str, project: str, units: list[str], units_dir: Path | None
) -> Hygiene:
    """Collapse ``units``' branches and checkouts; count the project's that remain."""
    hygiene = Hygiene()
    try:
        trunk_sha = repository.resolve(repo, trunk).commit
    except WorkerError as exc:
        hygiene.problem = f"trunk {trunk!r} cannot be read: {exc}; nothing was collapsed"
        return hygiene
    hygiene.trunk = trunk_sha
    if shutil.which("git") is None:
        # Without git the checkouts cannot be listed, and a branch one holds must not go.
        hygiene.problem = "git is not installed where the lessons daemon runs: nothing collapsed"
        hygiene.branches = _count_branches(repo, project)
        return hygiene
    checkouts = worktrees(repo)
    for unit in units:
        branch = unit_branch(project, unit)
        head = history.read_ref(repo, branch)
        if head is None:
            continue
        why = _why_kept(repo, branch, head, trunk_sha, checkouts, units_dir, hygiene)
        if why is not None:
            hygiene.kept.append(KeptBranch(branch=branch, why=why))
            continue
        if not _delete(repo, branch, head):
            hygiene.kept.append(KeptBranch(branch=branch, why="it moved while closing out"))
            continue
        hygiene.deleted.append(branch)
    hygiene.branches = _count_branches(repo, project)
    hygiene.worktrees = len([p for p, _ in worktrees(repo) if _under(p, units_dir)])
    return hygiene


def _delete(repo: Path, branch: str, head: str) -> bool:
    """Compare-and-delete ``branch`` at ``head``: on the remote when ``repo`` mirrors one
    (the mirror follows), else in ``repo`` itself. False: it moved meanwhile."""
    mirror = remote.mirror_of(repo)
    if mirror is not None:
        return mirror.delete_branch(branch, head)
    return _git(repo, "update-ref", "-d", f"refs/heads/{branch}", head).returncode == 0


def _count_branches(repo: Path, project: str) -> int:
    """The project's unit branches left in ``repo``."""
    prefix = "refs/heads/" + unit_branch(project, "")
    listed = _git(repo, "for-each-ref", "--format=%(refname)", prefix)
    if listed.returncode == 0:
        return len([r for r in listed.stdout.splitlines() if r.strip()])
    with repository.open_repo(repo) as opened:
        return len(list(opened.refs.keys(base=Ref(prefix.encode()))))


def _why_kept(
    repo: Path,
    branch: str,
    head: str,
    trunk_sha: str,
    checkouts: list[tuple[Path, str]],
    units_dir: Path | None,
    hygiene: Hygiene,
) -> str | None:
    """Why ``branch`` stays (None: delete it); removes its checkouts on the way."""
    with repository.open_repo(repo) as opened:
        merged = repository.is_ancestor(
            opened, ObjectID(head.encode()), ObjectID(trunk_sha.encode())
        )
    if not merged:
        ahead = _git(repo, "rev-list", "--count", f"{trunk_sha}..{head}").stdout.strip()
        return f"unmerged work kept: {ahead or 'some'} commit(s) not reachable from trunk"
    for path, on in checkouts:
        if on != branch:
            continue
        if not _under(path, units_dir):
            return f"checked out at {path}, outside the units directory"
        removed = _git(repo, "worktree", "remove", str(path))
        if removed.returncode != 0:
            return f"its checkout {path} was not removed: {removed.stderr.strip()[:200]}"
        hygiene.removed.append(str(path))
    return None
