"""The diff module: unified diffs as line sets, and the diff bound on code findings."""

from __future__ import annotations

from pathlib import Path

import pytest
from dulwich.objects import Commit
from reviewkit import GitRepo

from schemas.targets import (
    BudgetTarget,
    CheckTarget,
    CodeTarget,
    DecisionTarget,
    PlanTarget,
    ProfileTarget,
    RecordTarget,
    Target,
)
from workers.repository import unit_change
from workers.reviewer.decide import principal_matches
from workers.reviewer.diff import parse_unified_diff, subtraction_reason

BEFORE = "".join(f"line {n}\n" for n in range(1, 21))
# line 10 changed, a line added after 15: head lines 10 and 16 are the unit's.
AFTER = BEFORE.replace("line 10\n", "line ten\n").replace("line 15\n", "line 15\nnew line\n")


@pytest.fixture
def change(tmp_path: Path) -> tuple[GitRepo, str, str]:
    repo = GitRepo(tmp_path / "repo")
    base = repo.commit(
        {"a.py": BEFORE, "b.py": "untouched\n", "gone.py": "x\n"}, ref="refs/heads/main"
    )
    head = repo.commit(
        {"a.py": AFTER, "gone.py": None, "new.py": "one\ntwo\n"},
        parent=base,
        author="bob <bob@example.com>",
        committer="carol <carol@example.com>",
    )
    return repo, base, head


def test_dulwich_diff_parses_into_files_and_added_lines(change: tuple[GitRepo, str, str]) -> None:
    """The diff computed with dulwich names each changed file, its status and added lines."""
    repo, base, head = change
    result = unit_change(repo.path, head, dispatched=base, trunk=None)
    diff = parse_unified_diff(result.diff_text)
    by_path = {f.path: f for f in diff.files}
    assert set(by_path) == {"a.py", "gone.py", "new.py"}
    assert (by_path["a.py"].status, by_path["a.py"].added_lines) == ("modified", {10, 16})
    assert (by_path["new.py"].status, by_path["new.py"].added_lines) == ("added", {1, 2})
    assert (by_path["gone.py"].status, by_path["gone.py"].added_lines) == ("deleted", set())
    assert result.base == base and result.head == head


def test_base_is_the_branch_point_when_trunk_moved_on(tmp_path: Path) -> None:
    """Without a dispatched base, the base is where the unit left the trunk, not its tip."""
    repo = GitRepo(tmp_path / "repo")
    base = repo.commit({"a.py": BEFORE}, ref="refs/heads/main")
    head = repo.commit({"a.py": AFTER}, parent=base)
    repo.commit({"other.py": "trunk moved\n"}, parent=base, ref="refs/heads/main")
    result = unit_change(repo.path, head, dispatched=None, trunk="main")
    assert result.base == base
    assert [f.path for f in parse_unified_diff(result.diff_text).files] == ["a.py"]


def test_a_unit_that_merged_trunk_in_is_diffed_from_that_trunk(tmp_path: Path) -> None:
    """A conflict round's merge of trunk into the unit: the unit's change starts at the
    trunk commit it merged (a sibling's file is not the unit's), not at its dispatch base."""
    repo = GitRepo(tmp_path / "repo")
    base = repo.commit({"a.py": BEFORE, "b.py": "b\n"}, ref="refs/heads/main")
    head = repo.commit({"a.py": AFTER}, parent=base)
    trunk = repo.commit({"b.py": "a sibling's b\n"}, parent=base, ref="refs/heads/main")
    single = repo.commit({"b.py": "a sibling's b\n"}, parent=head)
    merge = Commit()
    merge.tree = repo.repo[single.encode()].tree  # type: ignore[attr-defined]
    merge.parents = [head.encode(), trunk.encode()]
    merge.author = merge.committer = b"b1 <b1@builders.loopbus.invalid>"
    merge.commit_time = merge.author_time = 1_700_000_100
    merge.commit_timezone = merge.author_timezone = 0
    merge.message = b"U1: merge trunk\n"
    repo.repo.object_store.add_object(merge)
    result = unit_change(repo.path, merge.id.decode(), dispatched=base, trunk="main")
    assert result.base == trunk
    assert [f.path for f in parse_unified_diff(result.diff_text).files] == ["a.py"]
    moved_on = repo.commit({"c.py": "later\n"}, parent=trunk, ref="refs/heads/main")
    assert (
        moved_on
        and unit_change(repo.path, merge.id.decode(), dispatched=base, trunk="main").base == trunk
    )


def test_identities_are_every_author_and_committer(change: tuple[GitRepo, str, str]) -> None:
    """Who touched the unit's commits: authors and committers between base and head."""
    repo, base, head = change
    result = unit_change(repo.path, head, dispatched=base, trunk=None)
    assert result.identities == {("bob", "bob@example.com"), ("carol", "carol@example.com")}


@pytest.mark.parametrize(
    ("principal", "matches"),
    [
        pytest.param("bob", True, id="name"),
        pytest.param("BOB", True, id="case-insensitive"),
        pytest.param("bob@example.com", True, id="email"),
        pytest.param("bobby", False, id="other"),
    ],
)
def test_principal_matches_a_git_identity(principal: str, matches: bool) -> None:
    """A roster principal names a git identity by name, address or address's local part."""
    assert principal_matches(principal, ("Bob", "bob@example.com")) is matches


def test_digest_is_the_same_for_the_same_diff(change: tuple[GitRepo, str, str]) -> None:
    """Two commits with identical changes against the same base give one digest."""
    repo, base, head = change
    twin = repo.commit({"a.py": AFTER, "gone.py": None, "new.py": "one\ntwo\n"}, parent=base)
    first = parse_unified_diff(unit_change(repo.path, head, dispatched=base, trunk=None).diff_text)
    second = parse_unified_diff(unit_change(repo.path, twin, dispatched=base, trunk=None).diff_text)
    assert twin != head and first.digest == second.digest


def code(path: str, start: int, end: int | None = None) -> CodeTarget:
    return CodeTarget(path=path, start=start, end=end or start)


# a.py's hunks span head lines 7-13 (around line 10) and 13-19 (around 16) with 3 context
CASES = [
    ("added-line", code("a.py", 10), {"added": True, "context": True, "file": True}),
    ("range-over-added", code("a.py", 14, 17), {"added": True, "context": True, "file": True}),
    ("context-line", code("a.py", 8), {"added": False, "context": True, "file": True}),
    ("far-in-file", code("a.py", 1, 3), {"added": False, "context": False, "file": True}),
    ("unchanged-file", code("b.py", 1), {"added": False, "context": False, "file": False}),
    ("new-file", code("./new.py", 2), {"added": True, "context": True, "file": True}),
]


@pytest.mark.parametrize("mode", ["added", "context", "file"])
@pytest.mark.parametrize(("target", "kept"), [pytest.param(t, k, id=name) for name, t, k in CASES])
def test_subtraction_modes(
    change: tuple[GitRepo, str, str], mode: str, target: CodeTarget, kept: dict[str, bool]
) -> None:
    """added keeps changed lines, context keeps whole hunks, file keeps changed files."""
    repo, base, head = change
    diff = parse_unified_diff(unit_change(repo.path, head, dispatched=base, trunk=None).diff_text)
    reason = subtraction_reason(target, diff, mode)  # type: ignore[arg-type]
    assert (reason is None) is kept[mode], reason


@pytest.mark.parametrize(
    "target",
    [
        pytest.param(PlanTarget(slice="S1"), id="plan"),
        pytest.param(RecordTarget(id="U1"), id="record"),
        pytest.param(CheckTarget(check="lint"), id="check"),
        pytest.param(BudgetTarget(budget="tokens_per_unit"), id="budget"),
        pytest.param(ProfileTarget(profile="cli"), id="profile"),
        pytest.param(DecisionTarget(decision="D1"), id="decision"),
    ],
)
@pytest.mark.parametrize("mode", ["added", "context", "file"])
def test_non_code_targets_are_never_subtracted(target: Target, mode: str) -> None:
    """A target without lines has no diff to fall outside of."""
    assert subtraction_reason(target, parse_unified_diff(""), mode) is None  # type: ignore[arg-type]


def test_plain_unified_diff_without_git_headers() -> None:
    """A diff made by `diff -u` (no `diff --git` line) parses the same way."""
    text = (
        "--- a/x.py\t2024-01-01\n+++ b/x.py\t2024-01-02\n"
        "@@ -1,3 +1,4 @@\n a\n-b\n+B\n+C\n c\n"
        "--- a/y.py\n+++ b/y.py\n@@ -5 +5 @@\n-old\n+new\n"
    )
    diff = parse_unified_diff(text)
    assert [(f.path, sorted(f.added_lines)) for f in diff.files] == [
        ("x.py", [2, 3]),
        ("y.py", [5]),
    ]


def test_removed_line_that_looks_like_a_header_stays_in_its_hunk() -> None:
    """Hunks end by their counts: a removed '-- x' line is content, not a new file header."""
    text = (
        "diff --git a/s.sql b/s.sql\n--- a/s.sql\n+++ b/s.sql\n"
        "@@ -1,2 +1,2 @@\n--- a comment\n+-- the comment\n keep\n"
    )
    (changed,) = parse_unified_diff(text).files
    assert (changed.path, changed.added_lines) == ("s.sql", {1})


def test_renames_and_quoted_paths() -> None:
    """A rename is reported at its new path; C-quoted names are unquoted."""
    text = (
        "diff --git a/old.py b/new.py\nsimilarity index 90%\nrename from old.py\n"
        "rename to new.py\n--- a/old.py\n+++ b/new.py\n@@ -1 +1 @@\n-x\n+y\n"
        'diff --git "a/caf\\303\\251.py" "b/caf\\303\\251.py"\n'
        '--- "a/caf\\303\\251.py"\n+++ "b/caf\\303\\251.py"\n@@ -1 +1,2 @@\n x\n+y\n'
    )
    renamed, quoted = parse_unified_diff(text).files
    assert (renamed.path, renamed.old_path, renamed.status) == ("new.py", "old.py", "renamed")
    assert (quoted.path, quoted.added_lines) == ("café.py", {2})
