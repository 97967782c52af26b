"""An import one side added to a group stays in that group, above what the other side
started below it after a blank line.

Found blind in the sixth held-out set (nushell's crates/nu-engine/src/lib.rs): the file
ended with a group of ``pub use`` lines; theirs added one more right under the last;
ours added a blank line and two test-only imports there. Both added below the same
entity, so ours' came first as at any shared spot, and theirs' ``pub use`` ended up at
the end of the file, glued to ours' test harness import.
"""

from __future__ import annotations

import pytest

from workers.entity_merge import merge_file

# A file whose imports end a group; the import theirs adds to it; what ours starts below.
CASES = {
    "rust": (
        "lib.rs",
        b"mod a;\nmod b;\n\npub use a::A;\npub use b::B;\n",
        b"pub use b::C;\n",
        b"\n#[cfg(test)]\nuse support::harness;\n",
    ),
    "python": (
        "m.py",
        b"import os\nimport sys\n",
        b"import json\n",
        b"\nfrom typing import TYPE_CHECKING\n",
    ),
    "typescript": (
        "m.ts",
        b"import { a } from './a';\nimport { b } from './b';\n",
        b"import { c } from './c';\n",
        b"\nimport type { T } from './types';\n",
    ),
}


def _sides(language: str) -> tuple[str, bytes, bytes, bytes, bytes]:
    path, base, grouped, apart = CASES[language]
    return path, base, base + grouped, base + apart, base + grouped + apart


@pytest.mark.parametrize("joiner", ["theirs", "ours"])
@pytest.mark.parametrize("language", list(CASES))
def test_an_import_joins_the_group_above_the_other_sides_new_group(
    language: str, joiner: str
) -> None:
    """Theirs joining the group is the nushell case; ours joining it merged right before
    too (ours' additions come first at a shared spot) and is the guard."""
    path, base, joined, started, expected = _sides(language)
    ours, theirs = (started, joined) if joiner == "theirs" else (joined, started)
    result = merge_file(base, ours, theirs, path)
    assert result.clean, result.conflicts
    assert result.content == expected


def test_two_imports_both_sides_added_to_the_group_keep_ours_first() -> None:
    """Nothing changes where both sides joined the group: ours first, as before."""
    base = b"import os\nimport sys\n"
    result = merge_file(base, base + b"import json\n", base + b"import re\n", "m.py")
    assert result.clean, result.conflicts
    assert result.content == base + b"import json\nimport re\n"


def test_the_group_holds_when_theirs_order_is_the_spine() -> None:
    """When only theirs reordered what both kept, theirs' order leads and ours' additions
    at a shared spot go first; still not between theirs' import and its group."""
    base = b"mod a;\nmod b;\n\npub use a::A;\npub use b::B;\n"
    theirs = b"mod b;\nmod a;\n\npub use a::A;\npub use b::B;\npub use b::C;\n"
    ours = base + b"\n#[cfg(test)]\nuse support::harness;\n"
    result = merge_file(base, ours, theirs, "lib.rs")
    assert result.clean, result.conflicts
    assert result.content == theirs + b"\n#[cfg(test)]\nuse support::harness;\n"
