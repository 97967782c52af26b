"""Two sides adding imports of one module, one side's names a superset of the other's:
the fuller statement is kept as its side wrote it, not split in two.

Found blind in the third held-out set (aiohttp's tests/test_client_ws_functional.py):
ours added ``from m import A, B``, theirs ``from m import A``, and the merge wrote
``from m import B`` and ``from m import A``.
"""

from __future__ import annotations

import pytest

from workers.entity_merge import merge_file

CASES = [
    (
        "m.py",
        b"import os\n\n\ndef f():\n    return os\n",
        b"from pkg.models import A, B\n",
        b"from pkg.models import A\n",
    ),
    (
        "m.js",
        b'import os from "os";\n\nexport function f() {\n  return os;\n}\n',
        b'import { A, B } from "./models";\n',
        b'import { A } from "./models";\n',
    ),
    (
        "m.ts",
        b'import os from "os";\n\nexport function f(): unknown {\n  return os;\n}\n',
        b'import { A, B } from "./models";\n',
        b'import { A } from "./models";\n',
    ),
]


@pytest.mark.parametrize(("path", "base", "fuller", "fewer"), CASES, ids=["python", "js", "ts"])
@pytest.mark.parametrize("fuller_side", ["ours", "theirs"])
def test_the_fuller_import_is_kept_whole(
    path: str, base: bytes, fuller: bytes, fewer: bytes, fuller_side: str
) -> None:
    first, rest = base.split(b"\n", 1)
    with_fuller = first + b"\n" + fuller + rest
    with_fewer = first + b"\n" + fewer + rest
    ours, theirs = (with_fuller, with_fewer) if fuller_side == "ours" else (with_fewer, with_fuller)
    result = merge_file(base, ours, theirs, path)
    assert result.clean, result.conflicts
    assert result.content == with_fuller


@pytest.mark.parametrize("ending", [b"\n", b"\r\n"], ids=["lf", "crlf"])
def test_the_fuller_import_is_kept_whole_in_either_line_ending(ending: bytes) -> None:
    base = b"import os\n\n\ndef f():\n    return os\n"
    ours = base.replace(b"import os\n", b"import os\nfrom pkg.models import A, B\n")
    theirs = base.replace(b"import os\n", b"import os\nfrom pkg.models import A\n")
    result = merge_file(*(v.replace(b"\n", ending) for v in (base, ours, theirs)), "m.py")
    assert result.clean, result.conflicts
    assert result.content == ours.replace(b"\n", ending)


def test_the_last_statement_of_a_name_the_merge_drops_is_not_taken_out() -> None:
    """Two statements importing a name the merge should not import at all: only one is
    a repeat, so the repair leaves the other (and the caller reports a conflict)."""
    from collections import Counter

    from workers.entity_merge.import_repair import _wholly_extra
    from workers.entity_merge.imports import statements
    from workers.entity_merge.languages import language_for_path

    spec = language_for_path("m.py")
    assert spec is not None
    content = b"from m import a\nfrom m import a\n"
    found = list(statements(spec, spec.parser().parse(content).root_node))
    extra = Counter({("a", "m", "a"): 2})
    whole = _wholly_extra(found, extra, content)
    assert list(whole.values()) == [(16, 32)]
    assert extra == Counter({("a", "m", "a"): 1})


def test_a_name_one_side_removed_is_still_cut_from_a_list() -> None:
    """The old repair stands where no statement is wholly extra: ours drops ``N`` from
    ``from units import kg, N``, theirs moves the names into a longer line."""
    base = b"from units import kg, N\n\n\ndef f():\n    return kg\n"
    ours = base.replace(b"kg, N", b"kg")
    theirs = base.replace(b"kg, N", b"kg, N, m")
    result = merge_file(base, ours, theirs, "m.py")
    assert result.clean
    assert result.content == base.replace(b"kg, N", b"kg, m")


def _repaired(path: str, base: bytes, ours: bytes, theirs: bytes, merged: bytes) -> bytes | None:
    from workers.entity_merge.import_repair import without_extra_imports
    from workers.entity_merge.languages import language_for_path

    spec = language_for_path(path)
    assert spec is not None
    roots = tuple(spec.parser().parse(v).root_node for v in (base, ours, theirs, merged))
    return without_extra_imports(spec, roots, merged)  # type: ignore[arg-type]


def test_a_statement_taken_out_between_blank_lines_takes_one_with_it() -> None:
    """mobx's observabledecorator.ts: both sides rewrote the imports as one statement
    in their own order; the merge wrote both with a blank line between, and taking the
    second out left two blank lines in a row, which neither side wrote."""
    base = b'import { a } from "./a"\nimport { b } from "./b"\n\nexport const x = a + b\n'
    ours = b'import {\n    a,\n    b\n} from "./ab"\n\nexport const x = a + b\n'
    theirs = b'import {\n    b,\n    a\n} from "./ab"\n\nexport const x = a + b\n'
    merged = ours.replace(b"\n\nexport", b"\n\n" + theirs.split(b"\n\n")[0] + b"\n\nexport")
    assert _repaired("m.ts", base, ours, theirs, merged) == ours


def test_a_statement_taken_out_at_either_end_of_the_file_leaves_no_blank_line_there() -> None:
    base = b"import os\n\n\ndef f():\n    return os\n"
    side = b"from m import a\n\nimport os\n\n\ndef f():\n    return os\n"
    opening = b"from m import a\n\n" + side
    assert _repaired("m.py", base, side, side, opening) == side
    closing_side = base + b"\nfrom m import a\n"
    closing = closing_side + b"\nfrom m import a\n"
    assert _repaired("m.py", base, closing_side, closing_side, closing) == closing_side


def test_a_statement_taken_out_between_runs_of_two_blank_lines_leaves_one_run() -> None:
    """Python spaces top-level statements with two blank lines: the runs above and below
    a dropped repeat become one run of two, not three or four blank lines."""
    side = b"from m import a\n\n\ndef f():\n    return a\n"
    merged = b"from m import a\n\n\nfrom m import a\n\n\ndef f():\n    return a\n"
    assert _repaired("m.py", b"", side, side, merged) == side
