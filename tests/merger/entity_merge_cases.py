"""Merge scenarios for every supported language, each with the file it must produce.

Shared by the entity-merge tests and the benchmark (tests/benchmarks/
bench_merge_driver.py), so both judge the driver against the same expectations.
A scenario builds base, ours and theirs from named blocks (functions, a class,
imports) written in the language's ordinary style; `expected` is the merged file
a careful person would write, or None where a real collision must be reported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

Body = list[str]


@dataclass(frozen=True)
class Lang:
    """How to write the building blocks of a test file in one language."""

    name: str
    path: str
    imports: Callable[[list[str]], str]
    function: Callable[[str, Body], str]
    klass: Callable[[str, list[tuple[str, Body]]], str]
    separator: str
    broken: str
    # Adds a parameter to a function's signature line (an edit of its first line).
    widen: Callable[[str], str]


def _py_function(name: str, body: Body, indent: str = "") -> str:
    lines = [f"{indent}def {name}(x):\n"] + [f"{indent}    {s}\n" for s in body]
    return "".join(lines)


def _py_class(name: str, members: list[tuple[str, Body]]) -> str:
    methods = [_py_function(m, body, "    ") for m, body in members]
    return f"class {name}:\n" + "\n".join(methods)


def _c_like_function(head: str, body: Body, end: str = ";", indent: str = "  ") -> str:
    return f"{head} {{\n" + "".join(f"{indent}{s}{end}\n" for s in body) + "}\n"


def _js_class(name: str, members: list[tuple[str, Body]], typed: bool) -> str:
    signature = "(x: number): number" if typed else "(x)"
    methods = [
        f"  {m}{signature} {{\n" + "".join(f"    {s};\n" for s in body) + "  }\n"
        for m, body in members
    ]
    return f"export class {name} {{\n" + "\n".join(methods) + "}\n"


def _go_struct(name: str, members: list[tuple[str, Body]]) -> str:
    fields = "".join(f"\t{m.capitalize()} int\n" for m, _ in members)
    return f"type {name} struct {{\n{fields}}}\n"


PYTHON = Lang(
    name="python",
    path="pkg/cart.py",
    imports=lambda mods: "".join(f"import {m}\n" for m in mods),
    function=_py_function,
    klass=_py_class,
    separator="\n\n",
    broken="def broken(:\n    pass\n",
    widen=lambda text: text.replace("(x):", "(x, scale):", 1),
)
JAVASCRIPT = Lang(
    name="javascript",
    path="src/cart.js",
    imports=lambda mods: "".join(f'import {{ {m} }} from "./{m}.js";\n' for m in mods),
    function=lambda name, body: _c_like_function(f"export function {name}(x)", body),
    klass=lambda name, members: _js_class(name, members, typed=False),
    separator="\n",
    broken="function broken( {\n}\n",
    widen=lambda text: text.replace("(x)", "(x, scale)", 1),
)
TYPESCRIPT = Lang(
    name="typescript",
    path="src/cart.ts",
    imports=lambda mods: "".join(f'import {{ {m} }} from "./{m}";\n' for m in mods),
    function=lambda name, body: _c_like_function(
        f"export function {name}(x: number): number", body
    ),
    klass=lambda name, members: _js_class(name, members, typed=True),
    separator="\n",
    broken="function broken(: number {\n}\n",
    widen=lambda text: text.replace("(x: number)", "(x: number, scale: number)", 1),
)
GO = Lang(
    name="go",
    path="cart/cart.go",
    imports=lambda mods: "package cart\n\nimport (\n" + "".join(f'\t"{m}"\n' for m in mods) + ")\n",
    function=lambda name, body: _c_like_function(
        f"func {name}(x int) int", body, end="", indent="\t"
    ),
    klass=_go_struct,
    separator="\n",
    broken="func broken( {\n}\n",
    widen=lambda text: text.replace("(x int)", "(x int, scale int)", 1),
)


def _rust_impl(name: str, members: list[tuple[str, Body]]) -> str:
    methods = [
        f"    pub fn {m}(x: i64) -> i64 {{\n" + "".join(f"        {s};\n" for s in body) + "    }\n"
        for m, body in members
    ]
    return f"impl {name} {{\n" + "\n".join(methods) + "}\n"


RUST = Lang(
    name="rust",
    path="src/cart.rs",
    imports=lambda mods: "".join(f"use crate::{m};\n" for m in mods),
    function=lambda name, body: _c_like_function(
        f"pub fn {name}(x: i64) -> i64", body, indent="    "
    ),
    klass=_rust_impl,
    separator="\n",
    broken="fn broken( {\n}\n",
    widen=lambda text: text.replace("(x: i64)", "(x: i64, scale: i64)", 1),
)
LANGS = (PYTHON, JAVASCRIPT, TYPESCRIPT, GO, RUST)


@dataclass(frozen=True)
class Scenario:
    """One three-way merge and what it must produce."""

    kind: str
    lang: Lang
    base: bytes
    ours: bytes
    theirs: bytes
    # The merged file, or None when the right answer is a conflict.
    expected: bytes | None
    # The entity a conflict must name (its markers and its EntityConflict).
    conflict_entity: str | None = None
    # Whether plain `git merge` reports a conflict here although nothing collides.
    false_conflict: bool = False
    # Whether a version does not parse, so only a line merge is possible.
    unparseable: bool = False

    @property
    def id(self) -> str:
        """A readable pytest id, e.g. ``python-add-at-end``."""
        return f"{self.lang.name}-{self.kind}"


class _Builder:
    """Writes files of one language from blocks, with a variant to vary sizes and names."""

    def __init__(self, lang: Lang, variant: int) -> None:
        self.lang = lang
        self.variant = variant
        self.count = 3 + variant % 4
        self.length = 5 + variant % 3
        self.modules = ["os", "sys", "json"][: 1 + variant % 3]

    def body(self, seed: int, length: int | None = None) -> Body:
        n = length if length is not None else self.length
        return [f"x = x + {seed * 10 + k}" for k in range(n - 1)] + ["return x"]

    def name(self, index: int) -> str:
        return f"step{index}_v{self.variant}"

    def functions(self) -> list[str]:
        return [self.lang.function(self.name(i), self.body(i)) for i in range(self.count)]

    def file(self, blocks: list[str], modules: list[str] | None = None, *, tail: str = "") -> bytes:
        head = self.lang.imports(modules if modules is not None else self.modules)
        return (head + "".join(self.lang.separator + b for b in blocks) + tail).encode()


def _new(builder: _Builder, label: str, seed: int) -> str:
    return builder.lang.function(f"{label}_v{builder.variant}", builder.body(seed, 3))


def _edit(body: Body, line: int, marker: str) -> Body:
    edited = list(body)
    edited[line] = edited[line].replace("x + ", f"x * {marker} + ", 1)
    return edited


def scenarios(lang: Lang, variant: int = 0) -> Iterator[Scenario]:
    """Every scenario kind for `lang`; `variant` changes names, counts and sizes."""
    b = _Builder(lang, variant)
    fns = b.functions()
    base = b.file(fns)
    mid = b.count // 2

    ours_fn, theirs_fn = _new(b, "added_by_ours", 90), _new(b, "added_by_theirs", 91)
    yield Scenario(
        "add-at-end",
        lang,
        base,
        b.file([*fns, ours_fn]),
        b.file([*fns, theirs_fn]),
        b.file([*fns, ours_fn, theirs_fn]),
        false_conflict=True,
    )
    yield Scenario(
        "add-at-same-anchor",
        lang,
        base,
        b.file([*fns[: mid + 1], ours_fn, *fns[mid + 1 :]]),
        b.file([*fns[: mid + 1], theirs_fn, *fns[mid + 1 :]]),
        b.file([*fns[: mid + 1], ours_fn, theirs_fn, *fns[mid + 1 :]]),
        false_conflict=True,
    )
    yield Scenario(
        "add-at-start",
        lang,
        base,
        b.file([ours_fn, *fns]),
        b.file([theirs_fn, *fns]),
        b.file([ours_fn, theirs_fn, *fns]),
        false_conflict=True,
    )

    def with_body(i: int, body: Body, blocks: list[str] | None = None) -> list[str]:
        out = list(blocks if blocks is not None else fns)
        out[i] = lang.function(b.name(i), body)
        return out

    a, a_next = mid, mid + 1
    yield Scenario(
        "modify-a-and-b",
        lang,
        base,
        b.file(with_body(a, _edit(b.body(a), 0, "2"))),
        b.file(with_body(a_next, _edit(b.body(a_next), 1, "3"))),
        b.file(
            with_body(
                a_next,
                _edit(b.body(a_next), 1, "3"),
                with_body(a, _edit(b.body(a), 0, "2")),
            )
        ),
    )
    last = b.length - 2
    yield Scenario(
        "modify-a-different-lines",
        lang,
        base,
        b.file(with_body(a, _edit(b.body(a), 0, "2"))),
        b.file(with_body(a, _edit(b.body(a), last, "3"))),
        b.file(with_body(a, _edit(_edit(b.body(a), 0, "2"), last, "3"))),
    )
    yield Scenario(
        "modify-a-same-line",
        lang,
        base,
        b.file(with_body(a, _edit(b.body(a), 1, "2"))),
        b.file(with_body(a, _edit(b.body(a), 1, "3"))),
        None,
        conflict_entity=f"function {b.name(a)}",
    )
    yield Scenario(
        "modify-delete",
        lang,
        base,
        b.file(with_body(a, _edit(b.body(a), 1, "2"))),
        b.file([f for i, f in enumerate(fns) if i != a]),
        None,
        conflict_entity=f"function {b.name(a)}",
    )
    yield Scenario(
        "add-add-same-name",
        lang,
        base,
        b.file([*fns, lang.function("twin", b.body(7, 3))]),
        b.file([*fns, lang.function("twin", b.body(8, 3))]),
        None,
        conflict_entity="function twin",
    )

    def edited(i: int, line: int, marker: str) -> str:
        return lang.function(b.name(i), _edit(b.body(i), line, marker))

    first_edit, last_edit = edited(0, 0, "2"), edited(b.count - 1, last, "3")
    yield Scenario(
        "does-not-parse",
        lang,
        b.file([fns[0], lang.broken, *fns[1:]]),
        b.file([first_edit, lang.broken, *fns[1:]]),
        b.file([fns[0], lang.broken, *fns[1:-1], last_edit]),
        b.file([first_edit, lang.broken, *fns[1:-1], last_edit]),
        unparseable=True,
    )
    members = [(f"m{i}", b.body(20 + i, 3)) for i in range(2 + variant % 2)]
    ours_member = [("added_by_ours", b.body(30, 3))]
    theirs_member = [("added_by_theirs", b.body(31, 3))]
    yield Scenario(
        "class-members-added",
        lang,
        b.file([*fns, lang.klass("Cart", members)]),
        b.file([*fns, lang.klass("Cart", members + ours_member)]),
        b.file([*fns, lang.klass("Cart", members + theirs_member)]),
        b.file([*fns, lang.klass("Cart", members + ours_member + theirs_member)]),
        false_conflict=True,
    )
    yield Scenario(
        "imports-added",
        lang,
        base,
        b.file(fns, [*b.modules, "time"]),
        b.file(fns, [*b.modules, "math"]),
        b.file(fns, [*b.modules, "time", "math"]),
        false_conflict=True,
    )
    widened = [*fns[:-1], lang.widen(fns[-1])]
    yield Scenario(
        "signature-edit-and-add-above-it",
        lang,
        base,
        b.file(widened),
        b.file([*fns[:-1], theirs_fn, fns[-1]]),
        b.file([*fns[:-1], theirs_fn, widened[-1]]),
        false_conflict=True,
    )
    without_a = [f for i, f in enumerate(fns) if i != a]
    yield Scenario(
        "delete-and-add-next-to-it",
        lang,
        base,
        b.file(without_a),
        b.file([*fns[: a + 1], theirs_fn, *fns[a + 1 :]]),
        b.file([*fns[:a], theirs_fn, *fns[a + 1 :]]),
        false_conflict=True,
    )

    def renamed(i: int, new_name: str, blocks: list[str]) -> list[str]:
        out = list(blocks)
        out[i] = out[i].replace(b.name(i), new_name, 1)
        return out

    edited_a = with_body(a, _edit(b.body(a), last, "3"))
    yield Scenario(
        "rename-and-edit-body",
        lang,
        base,
        b.file(renamed(a, "renamed_by_ours", fns)),
        b.file(edited_a),
        b.file(renamed(a, "renamed_by_ours", edited_a)),
    )
    yield Scenario(
        "both-rename-differently",
        lang,
        base,
        b.file(renamed(a, "renamed_by_ours", fns)),
        b.file(renamed(a, "renamed_by_theirs", fns)),
        None,
        conflict_entity=f"function {b.name(a)}",
    )


def corpus(variants: int) -> list[Scenario]:
    """`variants` rounds of every scenario kind in every language."""
    return [s for v in range(variants) for lang in LANGS for s in scenarios(lang, v)]
