"""Issue 26: each wrong-merge pattern is a conflict, and imports merge as sets of names."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from wrong_merge_patterns import PATTERNS, Pattern

import workers
from workers.entity_merge import DRIVER_NAME, merge_file

PROJECT_ROOT = Path(workers.__file__).resolve().parent.parent


@pytest.mark.parametrize("p", [pytest.param(p, id=p.id) for p in PATTERNS])
def test_a_wrong_merge_pattern_is_a_conflict(p: Pattern) -> None:
    """The pattern is never handed back clean: the result carries markers and says why."""
    result = merge_file(p.base, p.ours, p.theirs, p.path)
    assert not result.clean
    assert b"<<<<<<< ours" in result.content and b">>>>>>> theirs" in result.content


def test_names_one_side_removed_stay_removed_and_the_others_additions_stay() -> None:
    """`from m import a, b, c`: ours drops b, theirs adds d → a, c, d, one statement."""
    base = b"from m import a, b, c\n\nprint(a, c)\n"
    ours = b"from m import a, c\n\nprint(a, c)\n"
    theirs = b"from m import a, b, c, d\n\nprint(a, c, d)\n"
    result = merge_file(base, ours, theirs, "m.py")
    assert result.clean
    assert result.content == b"from m import a, c, d\n\nprint(a, c, d)\n"


def test_a_sorted_name_list_stays_sorted() -> None:
    """Each side's new name lands where the file's order puts it."""
    base = b"import { a, c, e } from './m';\n\nuse(a, c, e);\n"
    ours = b"import { a, b, c, e } from './m';\n\nuse(a, c, e);\n"
    theirs = b"import { a, c, d, e } from './m';\n\nuse(a, c, e);\n"
    result = merge_file(base, ours, theirs, "m.ts")
    assert result.clean
    assert result.content.startswith(b"import { a, b, c, d, e } from './m';\n")


def test_go_import_groups_keep_their_grouping() -> None:
    """An import each side adds to a different group of a Go import block stays in it."""
    base = b'package p\n\nimport (\n\t"fmt"\n\n\t"x/a"\n)\n\nvar _ = fmt.Sprint(a.A)\n'
    ours = base.replace(b'\t"fmt"\n', b'\t"fmt"\n\t"os"\n')
    theirs = base.replace(b'\t"x/a"\n', b'\t"x/a"\n\t"x/b"\n')
    result = merge_file(base, ours, theirs, "m.go")
    assert result.clean
    assert b'import (\n\t"fmt"\n\t"os"\n\n\t"x/a"\n\t"x/b"\n)\n' in result.content


def test_a_name_one_side_removed_and_the_other_newly_uses_is_a_conflict() -> None:
    """Dropping an import silently while the other side adds a use would break the file."""
    base = b"from dataclasses import dataclass\nimport os\n\n\n@dataclass\nclass A:\n    x: int\n"
    ours = b"import os\n\n\nclass A:\n    x: int\n"
    theirs = base + b"\n\n@dataclass\nclass B:\n    y: int\n"
    result = merge_file(base, ours, theirs, "m.py")
    assert not result.clean
    assert "dataclass" in result.note


def test_a_name_one_side_removed_and_the_other_only_kept_stays_removed() -> None:
    """Without a new use on the keeping side, the removal wins and the merge is clean."""
    base = b"from m import a, b\n\n\ndef f():\n    return a()\n\n\ndef g():\n    return 1\n"
    ours = b"from m import a\n\n\ndef f():\n    return a()\n\n\ndef g():\n    return 1\n"
    theirs = base.replace(b"return 1", b"return 2")
    result = merge_file(base, ours, theirs, "m.py")
    assert result.clean
    assert result.content == ours.replace(b"return 1", b"return 2")


def test_one_line_added_by_both_sides_at_one_place_is_kept_once() -> None:
    """The same insertion at the same place is one change, not a doubled line."""
    base = b"def f(x):\n    y = x + 1\n    return y\n"
    both = b"def f(x):\n    log(x)\n    y = x + 1\n    return y\n"
    result = merge_file(base, both, both.replace(b"return y", b"return y * 2"), "m.py")
    assert result.clean
    assert result.content.count(b"log(x)") == 1


# --- git merge with the driver configured --------------------------------------------


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = {
        **os.environ,
        "HOME": str(repo.parent),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "Test",
        "GIT_AUTHOR_EMAIL": "test@example.com",
        "GIT_COMMITTER_NAME": "Test",
        "GIT_COMMITTER_EMAIL": "test@example.com",
        "PYTHONPATH": str(PROJECT_ROOT),
    }
    return subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, timeout=60)


def _merge(repo: Path, p: Pattern) -> tuple[int, bytes]:
    repo.mkdir()
    target = repo / p.path
    for args in (("init", "-q", "-b", "main"),):
        _git(repo, *args)
    steps = ((p.base, ("add", "."), "base"), (p.theirs, None, "theirs"), (p.ours, None, "ours"))
    for data, add, message in steps:
        if message == "theirs":
            _git(repo, "checkout", "-q", "-b", "theirs")
        if message == "ours":
            _git(repo, "checkout", "-q", "main")
        target.write_bytes(data)
        if add:
            _git(repo, *add)
        _git(repo, "commit", "-q", "-am", message)
    command = f"{shlex.quote(sys.executable)} -m workers.entity_merge %O %A %B %P"
    _git(repo, "config", f"merge.{DRIVER_NAME}.driver", command)
    ext = os.path.splitext(p.path)[1]
    (repo / ".git" / "info" / "attributes").write_text(f"*{ext} merge={DRIVER_NAME}\n")
    merged = _git(repo, "merge", "-q", "--no-edit", "theirs")
    return merged.returncode, target.read_bytes()


GIT_CASES = [
    "python-both-changed-one-import",
    "typescript-name-added-to-a-dropped-module",
    "go-same-line-added-twice",
    "javascript-member-moved-and-deleted",
    "go-method-added-to-a-type-the-other-side-deleted",
    "go-one-new-type-with-two-method-sets",
]


@pytest.mark.parametrize("name", GIT_CASES)
def test_git_merge_with_the_driver_stops_on_the_pattern(tmp_path: Path, name: str) -> None:
    """Through `git merge`, the pattern stops the merge with markers instead of committing."""
    p = next(p for p in PATTERNS if p.id == name)
    code, content = _merge(tmp_path / "repo", p)
    assert code != 0
    assert b"<<<<<<< ours" in content


def test_a_list_one_side_sorted_takes_the_other_sides_addition_in_sorted_place() -> None:
    """Ours sorted `b, a`; theirs added c at the end: the merge keeps the list sorted."""
    base = b"from m import b, a\n\nprint(a, b)\n"
    ours = b"from m import a, b\n\nprint(a, b)\n"
    theirs = b"from m import b, a, c\n\nprint(a, b, c)\n"
    result = merge_file(base, ours, theirs, "m.py")
    assert result.clean
    assert result.content == b"from m import a, b, c\n\nprint(a, b, c)\n"


def test_a_line_each_side_adds_a_different_number_of_times_is_kept_as_added() -> None:
    """One more test case each, sharing a line: independent additions, all kept."""
    base = b"def test():\n    check(1)\n"
    ours = b"def test():\n    check(1)\n    case = make()\n    check(2)\n"
    theirs = b"def test():\n    case = make()\n    check(3)\n    case = make()\n    check(4)\n" + (
        b"    check(1)\n"
    )
    result = merge_file(base, ours, theirs, "m.py")
    assert result.clean
    assert result.content.count(b"case = make()") == 3


def test_a_name_added_to_a_standard_module_the_other_side_stopped_importing_is_kept() -> None:
    """`typing` is not deleted by a change to the project: the added name survives."""
    base = b"from typing import Any\n\n\ndef f(x: Any):\n    return x\n\n\ndef g():\n    return 1\n"
    ours = b"\n\ndef f(x):\n    return x\n\n\ndef g():\n    return 1\n"
    theirs = base.replace(b"import Any", b"import Any, Final").replace(
        b"return 1", b"return ONE\n\n\nONE: Final = 1"
    )
    result = merge_file(base, ours, theirs, "pkg/app.py")
    assert result.clean
    assert b"from typing import Final\n" in result.content


def test_a_name_one_side_dropped_while_both_merged_two_imports_stays_dropped() -> None:
    """Both sides fold a second import of `u` into the first; ours leaves out N: so does the merge.

    Combined name by name, the folded line would get N back from theirs; the imports
    merge says N goes, so it is cut from the list and the merge is clean without it.
    """
    base = b"from u import a, b\nfrom x import y\nfrom u import c, N\n\nprint(a, b, c, y)\n"
    ours = b"from u import a, b, c\nfrom x import y\n\nprint(a, b, c, y)\n"
    theirs = b"from u import a, b, c, N\nfrom x import y\n\nprint(a, b, c, y)\n"
    result = merge_file(base, ours, theirs, "m.py")
    assert result.clean
    assert result.content == ours


def test_names_merged_into_the_other_sides_list_take_its_layout_and_order() -> None:
    """Theirs folded two imports into one list, one name a line, sorted by bound name.

    Ours moved `ColumnType as RcColumnType` into the one-line import; the merge keeps
    theirs' frame, one name a line, with the name where the list's order puts it.
    """
    base = (
        b"import type { Reference } from 'table';\n"
        b"import type {\n  Fixed,\n  ColumnType as RcColumnType,\n} from 'table/lib';\n"
    )
    ours = (
        b"import type { ColumnType as RcColumnType, Reference } from 'table';\n"
        b"import type {\n  Fixed,\n} from 'table/lib';\n"
    )
    theirs = (
        b"import type {\n  Fixed,\n  ColumnType as RcColumnType,\n  Reference,\n} from 'table';\n"
    )
    result = merge_file(base, ours, theirs, "m.ts")
    assert result.clean
    assert result.content == theirs
