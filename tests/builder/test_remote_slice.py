"""The conflict slice of ``test_conflict_loop``, with the repository reached only by URL.

``loopbus up --repo file:///…/remote.git``: a bare repository no daemon reads in place.
Each daemon keeps a mirror of its own (``DATA_DIR/mirrors/<daemon>``), so the slice closes
only if the builder fetches its base and trunk and pushes its unit branch, the reviewer
and gate runner fetch the heads they read, and the merger advances trunk on the remote.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conflictkit import builder_folder
from dulwich.objects import Commit, Tree
from dulwich.repo import Repo
from integrity.test_hostile_agent import Loop, running_up
from test_conflict_loop import EDITS, RESOLVED, dispatch_both, repository, until_done

from schemas.reports import CommitReport

pytestmark = pytest.mark.slow

P = "clash"
READERS = ("builder", "reviewer", "gate-runner", "merger")


@pytest.fixture
def remote_loop(tmp_path: Path) -> Iterator[tuple[Loop, Path]]:
    with builder_folder() as agent:
        for unit, edit in EDITS.items():
            agent.plan(unit, [{"write": {"app.py": edit}}, {"write": {"app.py": RESOLVED}}])
        work = repository(tmp_path, agent)
        remote = tmp_path / "remote.git"
        subprocess.run(["git", "clone", "-q", "--bare", str(work), str(remote)], check=True)
        with running_up(tmp_path / "data", "--repo", remote.as_uri()) as started:
            yield started, remote


def _file_on_trunk(repo: Repo, name: bytes) -> bytes:
    trunk = repo[repo.refs[b"refs/heads/main"]]
    assert isinstance(trunk, Commit)
    tree = repo[trunk.tree]
    assert isinstance(tree, Tree)
    _mode, blob = tree.lookup_path(repo.__getitem__, name)
    return repo[blob].as_raw_string()


async def test_a_slice_closes_with_every_daemon_on_its_own_mirror(
    remote_loop: tuple[Loop, Path],
) -> None:
    started, remote = remote_loop
    await dispatch_both(started, remote)
    events = await until_done(started)

    mirrors = started.data_dir / "mirrors"
    for daemon in READERS:  # each read its own copy, none the remote in place
        [mirror] = list((mirrors / daemon).iterdir())
        assert (mirror / "HEAD").is_file() and not (mirror / ".git").exists(), daemon
    with Repo(str(remote)) as opened:
        assert _file_on_trunk(opened, b"app.py") == RESOLVED.encode()
        merges = [c for c in _first_parents(opened) if len(c.parents) == 2]
        # the merger merged what the builders pushed (its mirror has nothing else)
        for unit in EDITS:
            last = [e for e in events if isinstance(e, CommitReport) and e.unit == unit][-1]
            assert last.sha.encode() in [m.parents[1] for m in merges], unit


def _first_parents(repo: Repo) -> list[Commit]:
    line, sha = [], repo.refs[b"refs/heads/main"]
    while True:
        commit = repo[sha]
        assert isinstance(commit, Commit)
        line.append(commit)
        if not commit.parents:
            return line
        sha = commit.parents[0]
