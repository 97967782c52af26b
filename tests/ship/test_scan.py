"""The history scan, on real repositories: what a hostile history can hide a key in."""

from __future__ import annotations

from pathlib import Path

from shipkit import commit, git, make_repo

from workers.shipper.scan import MESSAGE, scan

KEY = "ghp_" + "a1B2" * 9  # split, so this file is not itself a finding


def test_a_key_in_a_commit_message_is_found(tmp_path: Path) -> None:
    """A key pasted into a commit message is history too."""
    repo = tmp_path / "repo"
    make_repo(repo, "p")
    sha = commit(repo, {"src/a.py": "a = 1\n"}, f"use token {KEY} for the deploy")
    found = scan(repo, "main", [])
    assert [(leak.commit, leak.path, leak.pattern) for leak in found.leaks] == [
        (sha, MESSAGE, "github-token")
    ]


def test_a_key_only_an_evil_merge_adds_is_found(tmp_path: Path) -> None:
    """A merge whose result holds a line neither parent has is read against its first
    parent, so the line it brings is scanned."""
    repo = tmp_path / "repo"
    make_repo(repo, "p")
    git(repo, "checkout", "-q", "-b", "side")
    commit(repo, {"src/b.py": "b = 1\n"}, "side work")
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--no-ff", "--no-commit", "side")
    (repo / "src" / "b.py").write_text(f'b = 1\nTOKEN = "{KEY}"\n')
    git(repo, "add", "src/b.py")
    git(repo, "commit", "-q", "-m", "merge side")
    merge = git(repo, "rev-parse", "HEAD")
    found = scan(repo, "main", [])
    assert [(leak.commit, leak.path) for leak in found.leaks] == [(merge, "src/b.py")]


def test_a_second_scan_reads_only_commits_new_since_the_first(tmp_path: Path) -> None:
    """Commits reachable from a scanned tip are not read again (a settled key is not
    raised again); a tip rewritten away excludes nothing."""
    repo = tmp_path / "repo"
    make_repo(repo, "p")
    commit(repo, {"src/k.py": f'K = "{KEY}"\n'}, "key")
    first = scan(repo, "main", [])
    assert first.commits == 2 and len(first.leaks) == 1
    commit(repo, {"src/c.py": "c = 1\n"}, "more")
    second = scan(repo, "main", [first.tip])
    assert second.commits == 1 and second.leaks == []
    assert scan(repo, "main", ["0" * 40]).commits == 3


def test_a_secret_finding_no_scan_listed_holds_nothing() -> None:
    """The system re-raises a reviewer's finding with the criterion the reviewer chose: one
    naming the secret criterion freezes nothing unless a trunk scan listed it."""
    from projections import shipping
    from schemas import Actor, FindingRaised
    from schemas.ship import SECRET_CRITERION, TrunkScanned
    from schemas.targets import RecordTarget

    system = Actor(role="system", principal="t")

    def secret(producer: str) -> FindingRaised:
        return FindingRaised(
            project="p", actor=system, producer=producer, target=RecordTarget(id="c" * 40),
            severity="critical", criterion=SECRET_CRITERION, message="a key",
        )  # fmt: skip

    relayed, scanned = secret("reviewer"), secret("standards")
    scan = TrunkScanned(
        project="p", actor=system, trunk="main", tip="c" * 40, commits=1, moves=0,
        findings=[scanned.id],
    )  # fmt: skip
    assert shipping.hold(shipping.FOLD.fold([relayed])) == ""
    assert shipping.hold(shipping.FOLD.fold([relayed, scanned])) == ""  # not listed yet
    state = shipping.FOLD.fold([relayed, scanned, scan])
    assert list(state.secrets) == [scanned.id] and shipping.hold(state).startswith("1 open")
