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


def test_a_name_one_side_removed_is_still_cut_from_a_list() -> None:
    """The old repair stands where no statement is wholly extra: ours drops ``N`` from
    ``from units import kg, N``, theirs moves the names into a longer line."""
    base = b"from units import kg, N\n\n\ndef f():\n    return kg\n"
    ours = base.replace(b"kg, N", b"kg")
    theirs = base.replace(b"kg, N", b"kg, N, m")
    result = merge_file(base, ours, theirs, "m.py")
    assert result.clean
    assert result.content == base.replace(b"kg, N", b"kg, m")
