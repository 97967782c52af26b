"""The four wrong-merge patterns found on real merge history (issue 16), one case each.

Each case is a small file shaped like the real ones: the driver before the fix merged
it "cleanly" into code that was wrong; now it either conflicts or, where both sides'
changes combine without loss, writes the one statement a maintainer would.
"""

from __future__ import annotations

from workers.entity_merge import merge_file

# --- 1. a one-line import or export edited differently on both sides ----------------

GO_BASE = b"""package cache

import (
\t"context"
\t"time"

\t"github.com/go-redis/redis/v7"
)

func Open(ctx context.Context, ttl time.Duration) *redis.Client {
\treturn redis.NewClient(&redis.Options{})
}
"""


def test_one_go_import_moved_to_two_major_versions_is_a_conflict() -> None:
    """`redis/v7` bumped to v8 on one side and v9 on the other binds `redis` twice: conflict."""
    ours = GO_BASE.replace(b"redis/v7", b"redis/v8")
    theirs = GO_BASE.replace(b"redis/v7", b"redis/v9")
    result = merge_file(GO_BASE, ours, theirs, "cache/cache.go")
    assert not result.clean
    [conflict] = result.conflicts
    assert (conflict.kind, conflict.name, conflict.reason) == (
        "import",
        "(...).redis",
        "both-modified",
    )
    assert b"redis/v8" in result.content and b"redis/v9" in result.content
    assert result.content.count(b"<<<<<<<") == 1


TS_INDEX = b"""export { Button, ButtonProps } from './button';
export { Modal } from './modal';

export const version = '4.2.0';
"""


def test_a_typescript_re_export_edited_on_both_sides_becomes_one_statement() -> None:
    """`export { … } from './button'` extended differently on each side is one combined line."""
    ours = TS_INDEX.replace(b"Button, ButtonProps }", b"Button, ButtonProps, ButtonGroup }")
    theirs = TS_INDEX.replace(b"Button, ButtonProps }", b"Button, ButtonProps, ButtonSize }")
    result = merge_file(TS_INDEX, ours, theirs, "src/index.ts")
    assert result.clean
    assert result.content == TS_INDEX.replace(
        b"Button, ButtonProps }", b"Button, ButtonProps, ButtonGroup, ButtonSize }"
    )


def test_a_typescript_re_export_renamed_differently_on_both_sides_is_a_conflict() -> None:
    """`Modal` re-exported as two different names by the two sides cannot combine."""
    ours = TS_INDEX.replace(b"{ Modal }", b"{ Modal as Dialog }")
    theirs = TS_INDEX.replace(b"{ Modal }", b"{ Modal as Overlay }")
    result = merge_file(TS_INDEX, ours, theirs, "src/index.ts")
    assert not result.clean
    assert result.content.count(b"export { Modal") == 2  # once per side, inside the markers
    assert [c.name for c in result.conflicts] == ["{} from './modal'"]


PY_VIEWS = b"""from django.http import JsonResponse
from django.shortcuts import get_object_or_404

from .models import Order


def order_detail(request, pk):
    order = get_object_or_404(Order, pk=pk)
    return JsonResponse({"id": order.pk})
"""


def test_a_python_from_import_extended_on_both_sides_imports_both_names_once() -> None:
    """`from m import a` grown into `a, b` and `a, c` merges into `from m import a, b, c`."""
    ours = PY_VIEWS.replace(b"import Order\n", b"import Order, Invoice\n")
    theirs = PY_VIEWS.replace(b"import Order\n", b"import Order, Customer\n")
    result = merge_file(PY_VIEWS, ours, theirs, "shop/views.py")
    assert result.clean
    assert result.content == PY_VIEWS.replace(
        b"import Order\n", b"import Order, Invoice, Customer\n"
    )


PY_DEMO = b"""import os
import sys

from IPython.PyColorize import Parser
from IPython.genutils import marquee, file_read, file_readlines


def banner(title):
    return marquee(title)
"""


def test_a_python_import_moved_on_one_side_and_extended_on_the_other_is_a_conflict() -> None:
    """One side moves the module, the other adds a name it may lack: one conflict, no repeat."""
    ours = PY_DEMO.replace(b"IPython.genutils", b"IPython.utils.genutils")
    theirs = PY_DEMO.replace(b"file_readlines\n", b"file_readlines, Term\n")
    result = merge_file(PY_DEMO, ours, theirs, "IPython/lib/demo.py")
    assert not result.clean
    [conflict] = result.conflicts
    assert (conflict.kind, conflict.name) == ("import", "from IPython.genutils")
    assert result.content.count(b"import marquee") == 2  # once per side, inside the markers


# --- 2. the same statement replaced on both sides ------------------------------------

JS_SPEC = b"""import { parse } from '../src/parse';

describe('parse', () => {
  it('reads a number', () => {
    expect(parse('1')).toBe(1);
  });
});
"""

JS_SPEC_OURS = b"""import { parse, format } from '../src/parse';

describe('format', () => {
  it('writes a number', () => {
    expect(format(1)).toBe('1');
  });
});

describe('parse', () => {
  it('reads a number', () => {
    expect(parse('1')).toEqual({ value: 1 });
  });
});
"""

JS_SPEC_THEIRS = b"""import { parse } from '../src/parse';

describe('parse', () => {
  it('reads a number', () => {
    expect(parse('1')).toEqual({ value: 1, raw: '1' });
  });
});
"""


def test_a_test_block_both_sides_rewrote_is_not_kept_twice() -> None:
    """A `describe` block edited on both sides (one also adds a block above) is not run twice."""
    result = merge_file(JS_SPEC, JS_SPEC_OURS, JS_SPEC_THEIRS, "test/parse.test.js")
    assert not result.clean
    assert result.content.count(b"\ndescribe('parse'") == 1
    assert result.content.count(b"\ndescribe('format'") == 1
    assert [c.reason for c in result.conflicts] == ["both-modified"]


PY_LOADER = b"""import json
import os


def load(path):
    with open(path) as f:
        return json.load(f)
"""


def test_an_import_rewritten_into_a_try_block_on_both_sides_is_not_kept_twice() -> None:
    """Both sides turn `import json` into a slightly different `try: … except` block: conflict."""
    ours = PY_LOADER.replace(
        b"import json\n",
        b"try:\n    import simplejson as json\nexcept ImportError:\n    import json\n",
    )
    theirs = PY_LOADER.replace(
        b"import json\n",
        b"try:\n    import ujson as json\nexcept ImportError:  # pragma: no cover\n"
        b"    import json\n",
    )
    result = merge_file(PY_LOADER, ours, theirs, "app/loader.py")
    assert not result.clean
    assert [(c.kind, c.reason) for c in result.conflicts] == [("statement", "both-added")]
    assert result.content.count(b"<<<<<<<") == 1


JS_CONFIG = b"""const path = require('path');

const DEFAULT_TIMEOUT = 2000;

module.exports = { timeout: DEFAULT_TIMEOUT, root: path.resolve(__dirname) };
"""


def test_a_declaration_both_sides_made_conditional_alike_is_not_conditioned_twice() -> None:
    """Both sides add a near-identical `if (process.env.CI)` after one constant: not both run."""
    ours = JS_CONFIG.replace(
        b"const DEFAULT_TIMEOUT = 2000;\n",
        b"let DEFAULT_TIMEOUT = 2000;\nif (process.env.CI) {\n  DEFAULT_TIMEOUT = 10000;\n}\n",
    )
    theirs = JS_CONFIG.replace(
        b"const DEFAULT_TIMEOUT = 2000;\n",
        b"let DEFAULT_TIMEOUT = 2000;\nif (process.env.CI) {\n  DEFAULT_TIMEOUT *= 5;\n}\n",
    )
    result = merge_file(JS_CONFIG, ours, theirs, "config/test.js")
    assert not result.clean
    assert result.content.count(b"\nif (process.env.CI)") <= 2  # once per side, marked
    assert [(c.kind, c.reason) for c in result.conflicts] == [("statement", "both-added")]


PY_JIT = b"""class JitCode:
    def __init__(self, signature):
        self.signature = signature
"""


def test_a_docstring_both_sides_added_alike_to_one_class_is_not_written_twice() -> None:
    """Two near-identical class docstrings added by the two sides conflict (sympy's llvmjit)."""
    doc = b'    """\n    Compile expressions.\n\n    >>> jit = JitCode(sig)\n    """\n\n'
    ours = PY_JIT.replace(b"class JitCode:\n", b"class JitCode:\n" + doc)
    theirs = PY_JIT.replace(
        b"class JitCode:\n",
        b"class JitCode:\n"
        + doc.replace(b"    >>> jit", b"    >>> from x import sig\n    >>> jit"),
    )
    result = merge_file(PY_JIT, ours, theirs, "jit.py")
    assert not result.clean
    assert [c.reason for c in result.conflicts] == ["both-added"]
    assert result.content.count(b"Compile expressions.") == 1  # the shared lines, once
    assert result.content.count(b"<<<<<<<") == 1


# --- 3. a deletion undone by an edit on the other side --------------------------------

PY_COMPAT = b"""import sys


def legacy_home():
    return os.path.expanduser("~/.app")


def config_home():
    return os.path.join(legacy_home(), "config")
"""


def test_a_function_deleted_on_one_side_and_wrapped_on_the_other_is_a_conflict() -> None:
    """One side deletes `legacy_home`, the other wraps it in an `if`: modify/delete, not kept."""
    ours = b"""import sys


def config_home():
    return os.path.expanduser("~/.config/app")
"""
    theirs = b"""import sys


if sys.platform != "win32":

    def legacy_home():
        return os.path.expanduser("~/.app")


def config_home():
    return os.path.join(legacy_home(), "config")
"""
    result = merge_file(PY_COMPAT, ours, theirs, "app/paths.py")
    assert not result.clean
    assert [(c.kind, c.name, c.reason) for c in result.conflicts] == [
        ("function", "legacy_home", "delete-modify")
    ]


# --- 4. declarations or imports duplicated where both sides touched one ---------------

GO_FLAGS = b"""package main

func parseArgs(args []string) (Config, error) {
\tcfg := Config{}
\tfor _, a := range args {
\t\tcfg.apply(a)
\t}
\treturn cfg, nil
}
"""


def test_a_function_renamed_on_one_side_into_a_name_the_other_added_is_a_conflict() -> None:
    """`parseArgs` renamed to `parseFlags` while the other side adds a `parseFlags`: no repeat."""
    ours = GO_FLAGS.replace(b"func parseArgs", b"func parseFlags")
    theirs = (
        GO_FLAGS
        + b"""
func parseFlags(fs *flag.FlagSet) Config {
\treturn Config{Verbose: fs.Lookup("v") != nil}
}
"""
    )
    result = merge_file(GO_FLAGS, ours, theirs, "cmd/app/main.go")
    assert not result.clean
    assert [c.reason for c in result.conflicts] == ["duplicate"]


TS_STORE = b"""import { createStore } from './legacy/store';
import type { State } from './types';

export const store = createStore<State>();
"""


def test_an_import_moved_on_one_side_and_extended_on_the_other_does_not_import_twice() -> None:
    """One side points the import at a new module, the other adds a name: a conflict, once."""
    ours = TS_STORE.replace(b"'./legacy/store'", b"'./store'")
    theirs = TS_STORE.replace(b"{ createStore }", b"{ createStore, applyMiddleware }")
    result = merge_file(TS_STORE, ours, theirs, "src/store.ts")
    assert not result.clean
    [conflict] = result.conflicts
    assert (conflict.kind, conflict.reason) == ("import", "both-modified")
    assert result.content.count(b"import { createStore") == 2  # once per side, inside the markers


def test_an_import_moved_on_one_side_and_trimmed_on_the_other_combines() -> None:
    """A name dropped from an import the other side moved is dropped from the moved one."""
    base = b"from app.legacy import load, save\n\nload()\n"
    ours = base.replace(b"app.legacy", b"app.storage")
    theirs = base.replace(b"load, save", b"load")
    result = merge_file(base, ours, theirs, "m.py")
    assert result.clean
    assert result.content == b"from app.storage import load\n\nload()\n"


def test_a_clean_merge_repeating_an_import_neither_side_repeated_is_refused() -> None:
    """A line-merged file importing one Python name twice is a `duplicate` conflict."""
    base = b"x = 1; y = 2\nfrom a import f\n"
    ours = b"x = 1; y = 2\nfrom a import f\nfrom b import g\n"
    theirs = b"x = 1; y = 2\nfrom c import g\nfrom a import f\n"
    result = merge_file(base, ours, theirs, "m.py")
    assert not result.clean
    assert [c.reason for c in result.conflicts] == ["duplicate"]


GO_E2E = b"""package e2e

import (
\t"testing"

\t"github.com/efficientgo/e2e"
)

func TestQuery(t *testing.T) {
\t_ = e2e.New
}
"""


def test_one_package_both_sides_imported_under_two_names_is_a_conflict() -> None:
    """Ours imports `…/monitoring` as e2emonitoring, theirs as e2emon: not both (thanos)."""
    added = (
        b'\t"github.com/efficientgo/e2e"\n\te2emonitoring "github.com/efficientgo/e2e/monitoring"\n'
    )
    ours = GO_E2E.replace(b'\t"github.com/efficientgo/e2e"\n', added).replace(
        b"\t_ = e2e.New\n", b"\t_ = e2e.New\n\t_ = e2emonitoring.Start\n"
    )
    theirs = GO_E2E.replace(
        b'\t"github.com/efficientgo/e2e"\n',
        b'\t"github.com/efficientgo/e2e"\n\te2emon "github.com/efficientgo/e2e/monitoring"\n',
    ).replace(b"}\n", b"}\n\nfunc TestStore(t *testing.T) {\n\t_ = e2emon.Equals\n}\n")
    result = merge_file(GO_E2E, ours, theirs, "test/e2e/query_test.go")
    assert not result.clean
    assert {c.reason for c in result.conflicts} == {"duplicate"}
