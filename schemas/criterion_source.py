"""A pytest test's *body*: the source of its function, as an operator can pin it. Pure.

A charter's ``test`` criterion is met only by the test the operator approved, not by any
test that later appears at that node id. What is pinned is the syntax tree of the test's
whole *file* — the function with its decorators, and everything else its names may be
bound to there: imports, fixtures, helpers, a later rebinding of the function itself —
hashed with SHA-256, so layout and comments (a formatter's run) change nothing and any
change of code does. The same file on trunk, read by the system from git, must hash the
same, and must still define the test.
"""

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


def module_digest(module_text: str) -> str | None:
    """The digest of a whole module's syntax tree (``None``: it does not parse)."""
    try:
        tree = ast.parse(textwrap.dedent(module_text))
    except (SyntaxError, ValueError):
        return None
    return digest(_canon(tree.body))


def body_digest(module_text: str, nodeid: str) -> str | None:
    """The digest of the file that defines the test ``nodeid`` (``None``: the file does
    not parse or defines no such test)."""
    if function_tree(module_text, split_nodeid(nodeid)[1]) is None:
        return None
    return module_digest(module_text)


def source_problem(source: str, nodeid: str) -> str | None:
    """Why ``source`` (a charter's text of the file of the test ``nodeid``) is not that
    file, or ``None``."""
    names = split_nodeid(nodeid)[1]
    try:
        ast.parse(textwrap.dedent(source))
    except SyntaxError as exc:
        return f"it is not Python ({exc.msg}, line {exc.lineno})"
    if function_tree(source, names) is None:
        return f"it defines no test {'::'.join(names)!r}, which {nodeid} names"
    return None


def source_digest(source: str, nodeid: str) -> str | None:
    """The digest the charter's ``source`` (the test's whole file) pins."""
    return body_digest(source, nodeid)
