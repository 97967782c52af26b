"""One statement both sides added in forms alike but not identical is not kept twice.

Found blind in the fourth held-out set (rxjs's src/internal/util/workarounds.ts): ours
added ``export {};`` under the file's opening comment, theirs ``export {}`` a blank line
below it. Keyed by their text, the two were two entities and the merge kept both: the
issue's pattern "both sides added the same new line; it appears twice", in a form the
exact-text match did not see.
"""

from __future__ import annotations

import pytest

from workers.entity_merge import merge_file

# A file, and the same statement as each side wrote it: ours right under the imports,
# theirs at the end, so no other rule pairs the two additions by their place.
CASES = {
    "typescript": (
        "m.ts",
        b"import { a } from './a';\n\nexport function f() {\n  return a;\n}\n",
        b"register(a);\n",
        b"register(a)\n",
    ),
    "javascript": (
        "m.js",
        b"const a = require('./a');\n\nfunction f() {\n  return a;\n}\n",
        b"a.install();\n",
        b"a.install() ;\n",
    ),
    "python": (
        "m.py",
        b"import os\n\n\ndef f():\n    return os.sep\n",
        b"os.environ.setdefault('A', '1')\n",
        b"os.environ.setdefault('A',  '1')\n",
    ),
}


@pytest.mark.parametrize("language", list(CASES))
def test_a_statement_both_sides_added_in_two_spellings_is_a_conflict(language: str) -> None:
    path, base, mine, yours = CASES[language]
    first = base.index(b"\n") + 1
    ours = base[:first] + mine + base[first:]
    theirs = base + b"\n" + yours
    result = merge_file(base, ours, theirs, path)
    assert not result.clean, result.content
    assert "more often than either side wrote it" in result.note


def test_the_rxjs_case_as_committed_is_a_conflict() -> None:
    base = (
        b"// Instead of using any - or another less-than-ideal type - to workaround a\n"
        b"// TypeScript problem or bug, create a type alias and use that instead.\n"
    )
    result = merge_file(base, base + b"export {};\n", base + b"\nexport {}\n", "workarounds.ts")
    assert not result.clean, result.content


def test_one_line_each_side_added_inside_its_own_function_still_merges() -> None:
    """Only top-level statements count: the same assertion in two new tests is each
    test's own line."""
    base = b"import os\n\n\ndef test_a():\n    assert os.sep\n"
    ours = base + b"\n\ndef test_b():\n    assert os.sep == '/'\n"
    theirs = base.replace(b"def test_a", b"def test_c():\n    assert os.sep == '/'\n\n\ndef test_a")
    result = merge_file(base, ours, theirs, "test_m.py")
    assert result.clean, result.conflicts
    assert result.content.count(b"assert os.sep == '/'") == 2


def test_a_statement_one_side_wrote_twice_may_stay_twice() -> None:
    """The merge holding a statement as often as one side wrote it is that side's doing."""
    base = b"import os\n"
    ours = base + b"\nprint('x')\nprint('x')\n"
    theirs = b"import os\nimport sys\n"
    result = merge_file(base, ours, theirs, "m.py")
    assert result.clean, result.conflicts
    assert result.content.count(b"print('x')") == 2


def test_two_new_rust_tests_each_with_its_attribute_still_merge() -> None:
    """``#[test]`` is a node of its own at the top level of a Rust file; each new test
    carries one, and two of them are no repetition (tokio's rt_threaded.rs)."""
    base = b"use super::*;\n\n#[test]\nfn a() {\n    run();\n}\n"
    ours = base.replace(b"#[test]\nfn a", b"#[test]\nfn b() {\n    go();\n}\n\n#[test]\nfn a")
    theirs = base + b"\n#[test]\nfn c() {\n    stop();\n}\n"
    result = merge_file(base, ours, theirs, "tests.rs")
    assert result.clean, result.conflicts
    assert result.content.count(b"#[test]") == 3


def test_two_lines_both_sides_changed_into_one_same_line_still_merge() -> None:
    """Two edits that agree are no statement added twice (an independent review's case):
    only a statement the merge holds in two spellings is one."""
    base = b"import time\n\ntime.sleep(1)\nprint('a')\ntime.sleep(3)\n"
    ours = base.replace(b"time.sleep(1)", b"time.sleep(2)")
    theirs = base.replace(b"time.sleep(3)", b"time.sleep(2)")
    result = merge_file(base, ours, theirs, "m.py")
    assert result.clean, result.conflicts
    assert result.content == b"import time\n\ntime.sleep(2)\nprint('a')\ntime.sleep(2)\n"


def test_a_statement_both_sides_added_with_other_quotes_is_a_conflict() -> None:
    base = b"import sys\n\n\ndef main():\n    pass\n"
    ours = base.replace(b"import sys\n", b"import sys\nsys.path.insert(0, 'lib')\n")
    theirs = base + b'\nsys.path.insert(0, "lib")\n'
    result = merge_file(base, ours, theirs, "m.py")
    assert not result.clean, result.content
    assert "more often than either side wrote it" in result.note
