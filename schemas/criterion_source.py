"""A pytest test's *body*: the source of its function, as an operator can pin it. Pure.

A charter's ``test`` criterion is met only by the test the operator approved, not by any
test that later appears at that node id. What is pinned is the function's syntax tree —
its decorators (a ``parametrize`` changes what the test proves), its signature and its
body — hashed with SHA-256, so layout and comments (a formatter's run) change nothing and
any change of code does. The same function on trunk, read by the system from git, must
hash the same.

Only the function is pinned. Fixtures and helpers it uses live elsewhere in its file or in
a ``conftest.py``; units may edit neither (both are frozen for every unit, see
``workers/gates/scope.py``), so what remains is what a contract or an operator changes.
"""

from __future__ import annotations

import ast
import hashlib
import textwrap

DIGEST_PREFIX = "sha256:"


def split_nodeid(nodeid: str) -> tuple[str, tuple[str, ...]]:
    """``tests/t.py::TestX::test_y[1]`` -> (``tests/t.py``, (``TestX``, ``test_y``))."""
    path, _, rest = nodeid.partition("::")
    names = tuple(part for part in rest.split("[", 1)[0].split("::") if part)
    return path.lstrip("/"), names


def function_tree(module_text: str, names: tuple[str, ...]) -> str | None:
    """The syntax tree of the function ``names`` (class names first) in ``module_text``,
    decorators included, as text without positions; ``None`` when the module does not
    parse or has no such function (the last definition wins, as at import)."""
    if not names:
        return None
    try:
        tree = ast.parse(textwrap.dedent(module_text))
    except (SyntaxError, ValueError):
        return None
    found = _find(tree.body, names)
    return None if found is None else _canon(found)


SKIPPED_FIELDS = frozenset({"type_comment", "type_params", "kind"})
"""Fields that say nothing about what a test proves, or that exist only in some Python
versions (so a pin survives an interpreter upgrade)."""


def _canon(node: object) -> str:
    """A syntax tree as text: node names and their non-empty fields, in a fixed order,
    without positions (``ast.dump`` differs between Python versions)."""
    if isinstance(node, ast.AST):
        parts = []
        for name in sorted(node._fields):
            value = getattr(node, name, None)
            if name in SKIPPED_FIELDS or value is None or value == []:
                continue
            parts.append(f"{name}={_canon(value)}")
        return f"{type(node).__name__}({','.join(parts)})"
    if isinstance(node, list):
        return "[" + ",".join(_canon(item) for item in node) + "]"
    return repr(node)


def _find(
    body: list[ast.stmt], names: tuple[str, ...]
) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    head, rest = names[0], names[1:]
    found: ast.FunctionDef | ast.AsyncFunctionDef | None = None
    for node in body:
        if rest and isinstance(node, ast.ClassDef) and node.name == head:
            inner = _find(node.body, rest)
            found = inner if inner is not None else found
        elif (
            not rest
            and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.name == head
        ):
            found = node
    return found


def digest(tree: str) -> str:
    """``sha256:<hex>`` of a function's syntax tree (:func:`function_tree`)."""
    return DIGEST_PREFIX + hashlib.sha256(tree.encode("utf-8")).hexdigest()


def body_digest(module_text: str, nodeid: str) -> str | None:
    """The digest of the test ``nodeid`` names in ``module_text`` (``None``: no such test)."""
    tree = function_tree(module_text, split_nodeid(nodeid)[1])
    return digest(tree) if tree is not None else None


def source_problem(source: str, nodeid: str) -> str | None:
    """Why ``source`` (a charter's text for the test ``nodeid``) is not that test's source,
    or ``None``. The text is a module: imports may precede the function."""
    names = split_nodeid(nodeid)[1]
    try:
        ast.parse(textwrap.dedent(source))
    except SyntaxError as exc:
        return f"it is not Python ({exc.msg}, line {exc.lineno})"
    if function_tree(source, names[-1:]) is None:
        return f"it defines no function {names[-1]!r}, the test {nodeid} names"
    return None


def source_digest(source: str, nodeid: str) -> str | None:
    """The digest of the function ``nodeid`` names, as the charter's ``source`` writes it
    (a method of a test class is written as a plain function: the class is the file's)."""
    names = split_nodeid(nodeid)[1]
    found = function_tree(source, names[-1:])
    return digest(found) if found is not None else None
