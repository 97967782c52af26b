"""Where two sides' additions go when one of them replaced what the other added below.

Found reading results that a new rule had changed (ansible's irc.py, read as fine at
first): ours added a function below `from time import sleep`; theirs replaced that
import with `import time` and `import traceback`. Both added at one place, ours' went
first, and theirs' imports landed below ours' function, glued to its last line. What
stood in the dropped import's place belongs above what was added below it. (The
swapped sides, and TypeScript, merged that way before too: those cases are guards.)
"""

from __future__ import annotations

import pytest

from workers.entity_merge import merge_file

# path, base, (line the function is added below, the function), (dropped, replacement)
CASES = {
    "python": (
        "irc.py",
        b"import re\nimport ssl\n\nfrom time import sleep\n\n\ndef send(sock):\n"
        b"    sleep(1)\n    return re\n",
        (b"from time import sleep\n\n\n", b"def try_recv(sock):\n    return sock.recv(1)\n\n\n"),
        (b"\nfrom time import sleep\n", b"import time\nimport traceback\n"),
    ),
    "typescript": (
        "irc.ts",
        b"import { a } from './a';\nimport { sleep } from './time';\n\n"
        b"export function send(): void {\n  sleep(a);\n}\n",
        (
            b"import { sleep } from './time';\n\n",
            b"function tryRecv(): number {\n  return 1;\n}\n\n",
        ),
        (
            b"import { sleep } from './time';\n",
            b"import * as timers from 'node:timers/promises';\nimport { trace } from './trace';\n",
        ),
    ),
}


@pytest.mark.parametrize("language", list(CASES))
@pytest.mark.parametrize("adder", ["ours", "theirs"])
def test_a_replacement_goes_where_the_dropped_entity_stood(language: str, adder: str) -> None:
    path, base, (below, function), (dropped, replacement) = CASES[language]
    adds_below = base.replace(below, below + function)
    replaces = base.replace(dropped, replacement).replace(b"sleep(", b"time.sleep(")
    ours, theirs = (adds_below, replaces) if adder == "ours" else (replaces, adds_below)
    result = merge_file(base, ours, theirs, path)
    assert result.clean, result.conflicts
    content = result.content
    header = function.splitlines()[0]
    last_import = replacement.splitlines()[-1]
    assert content.count(header) == 1 and content.count(last_import) == 1, content.decode()
    assert content.index(last_import) < content.index(header), content.decode()


def test_an_addition_below_a_dropped_last_function_stays_last() -> None:
    """poetry's tests/conftest.py (sixth held-out set): ours added a fixture at the end,
    below `do_lock`; theirs moved a fixture down, deleted `do_lock` and added its own
    functions there. Ours' fixture went above theirs', not at the end where ours put it."""
    a = b"def a():\n    return 'a'\n"
    b = b"def b():\n    return 'b'\n"
    c = b"def c():\n    return 'c'\n"
    lock = b"def do_lock(tester):\n    tester.execute('lock')\n"
    fixture = b"def venv_flags():\n    return {'always-copy': False}\n"
    copier = b"def fixture_copier(path):\n    return shutil.copytree(path, path)\n"
    base = b"\n\n".join([a, b, c, lock])
    ours = b"\n\n".join([a, b, c, lock, fixture])
    theirs = b"\n\n".join([b, c, a, copier])
    result = merge_file(base, ours, theirs, "conftest.py")
    assert result.clean, result.conflicts
    assert result.content == b"\n\n".join([b, c, a, copier, fixture])


def test_an_addition_stays_by_its_anchor_when_the_other_side_moved_what_follows_it_away() -> None:
    """containerd's resolver.go: theirs dropped `net` and moved `strings` to the end of the
    import block; ours added `os` below `net`, above `strings`. Placed above `strings`,
    `os` would leave its group for the end of the block: it stays below `fmt`. (A guard
    on the rule above, which did that before it looked at what stands between.)"""
    base = (
        b'package p\n\nimport (\n\t"bufio"\n\t"fmt"\n\t"net"\n\t"strings"\n\n'
        b'\t"github.com/a/a"\n\t"github.com/b/b"\n)\n'
    )
    ours = base.replace(b'\t"net"\n', b'\t"net"\n\t"os"\n')
    theirs = (
        b'package p\n\nimport (\n\t"bufio"\n\t"fmt"\n\n'
        b'\t"github.com/a/a"\n\t"github.com/b/b"\n\t"strings"\n)\n'
    )
    result = merge_file(base, ours, theirs, "p.go")
    assert result.clean, result.conflicts
    assert result.content == theirs.replace(b'\t"fmt"\n', b'\t"fmt"\n\t"os"\n')
