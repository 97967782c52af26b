"""A criterion's text for the brief: the test function's source, read at the round's start.

A criterion is a pytest id (``tests/test_x.py::test_name``, or with a class,
``tests/test_x.py::TestX::test_name``). The builder is given the test's own source so it
knows the contract without being handed the whole file; when the test cannot be found
(another language, a parametrized id, a file that does not parse) it gets the file.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

MAX_CHARS = 20_000

ReadFile = Callable[[Path, str, str], str]


def criterion_text(read: ReadFile, repo: Path, commit: str, test: str) -> str:
    """The source of test ``test`` at ``commit`` ('' when its file is not there)."""
    path, _, rest = test.partition("::")
    source = read(repo, commit, path)
    if not source or not rest:
        return source[:MAX_CHARS]
    names = rest.split("[", 1)[0].split("::")
    try:
        node: ast.AST = ast.parse(source)
    except SyntaxError:
        return source[:MAX_CHARS]
    for name in names:
        found = next(
            (
                child
                for child in ast.iter_child_nodes(node)
                if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                and child.name == name
            ),
            None,
        )
        if found is None:
            return source[:MAX_CHARS]
        node = found
    return (ast.get_source_segment(source, node) or source)[:MAX_CHARS]
