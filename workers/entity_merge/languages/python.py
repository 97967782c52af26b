"""Python entities: imports, functions, classes and their methods, module variables."""

from __future__ import annotations

import warnings
from functools import cache

import tree_sitter_python
from tree_sitter import Language, Node, Query, QueryCursor

from . import EntityInfo, LanguageSpec, NameList, node_text

_IMPORTS = frozenset({"import_statement", "import_from_statement", "future_import_statement"})
_TARGETS = frozenset({"identifier", "pattern_list", "tuple_pattern"})


def classify(node: Node, container: str | None) -> EntityInfo | None:
    """Name `node` if it is a Python entity; `container` is the enclosing entity's kind."""
    match node.type:
        case "decorated_definition":
            # The decorators are part of the chunk; the name comes from what they wrap.
            inner = node.child_by_field_name("definition")
            return classify(inner, container) if inner is not None else None
        case "function_definition":
            kind = "method" if container == "class" else "function"
            return EntityInfo(kind, node_text(node.child_by_field_name("name")))
        case "class_definition":
            return EntityInfo(
                "class",
                node_text(node.child_by_field_name("name")),
                body=node.child_by_field_name("body"),
            )
        case "import_from_statement" | "future_import_statement":
            # Keyed by module: two sides editing `from m import a` are editing one
            # statement, and meet in one merge of its names (see `name_list`).
            module = node.child_by_field_name("module_name")
            return EntityInfo("import", f"from {node_text(module) or '__future__'}")
        case "import_statement":
            return EntityInfo("import", node_text(node))
        case "type_alias_statement":
            return EntityInfo("type", node_text(node.child_by_field_name("left")))
        case "expression_statement":
            return _assignment(node, container)
    return None


def _assignment(node: Node, container: str | None) -> EntityInfo | None:
    if node.named_child_count != 1:
        return None
    child = node.named_children[0]
    if child.type != "assignment":
        return None
    target = child.child_by_field_name("left")
    if target is None or target.type not in _TARGETS:
        return None
    kind = "attribute" if container == "class" else "variable"
    return EntityInfo(kind, node_text(target))


def name_list(node: Node) -> NameList | None:
    """The names of ``from m import a, b as c``; None for ``import m`` or ``import *``."""
    if node.type not in ("import_from_statement", "future_import_statement"):
        return None
    names = node.children_by_field_name("name")
    if not names:
        return None
    items, imported, bound = [], [], []
    for name in names:
        items.append((name.start_byte - node.start_byte, name.end_byte - node.start_byte))
        if name.type == "aliased_import":
            imported.append(node_text(name.child_by_field_name("name")))
            bound.append(node_text(name.child_by_field_name("alias")))
        else:
            imported.append(node_text(name))
            bound.append(node_text(name))
    return NameList(tuple(items), tuple(imported), tuple(bound))


def binds(node: Node) -> list[str]:
    """The names a top-level statement declares or imports."""
    if node.type == "decorated_definition":
        inner = node.child_by_field_name("definition")
        return binds(inner) if inner is not None else []
    if node.type in ("function_definition", "class_definition"):
        return [node_text(node.child_by_field_name("name"))]
    if node.type == "import_from_statement":
        listed = name_list(node)
        return [f"import {b}" for b in listed.bound] if listed is not None else []
    if node.type == "import_statement":
        # `import a.b` and `import a.c` both bind `a` and that is fine: count modules.
        return [f"import {node_text(n)}" for n in node.children_by_field_name("name")]
    return []


@cache
def _blocks() -> Query:
    return Query(Language(tree_sitter_python.language()), "(block) @block")


def rejects(root: Node, start: int = 0, end: int | None = None) -> bool:
    """True when a body is empty or holds only comments.

    The grammar accepts ``class A:`` with nothing under it, which Python does not;
    an entity merge where each side deletes a different last member produces exactly
    that, and it must be caught before it is called clean.
    """
    cursor = QueryCursor(_blocks())
    if end is not None:
        # An emptied body is a zero-width block at the end of its header's line, the
        # line above the change: widen the range to take that line in.
        text = root.text or b""
        line_start = text.rfind(b"\n", 0, max(0, start - 1)) + 1
        cursor.set_byte_range(max(0, line_start - 1), end + 1)
    blocks = cursor.captures(root).get("block", [])
    return any(all(c.type == "comment" for c in block.named_children) for block in blocks)


def _syntax_error(data: bytes) -> str | None:
    """What CPython's compiler says is wrong with `data`, or None.

    A full compile, not only a parse: some errors are found past the parser (a
    `from __future__` import below another statement, `await` in a plain function).
    """
    with warnings.catch_warnings():
        # An invalid escape in a string is a SyntaxWarning printed to stderr, not an
        # error; the merge must stay silent.
        warnings.simplefilter("ignore")
        try:
            compile(data, "<merged>", "exec", dont_inherit=True)
        except SyntaxError as exc:
            return f"{type(exc).__name__}: {exc.msg} (line {exc.lineno})"
        except ValueError as exc:  # a NUL byte; binary files never get here
            return str(exc)
        except (RecursionError, MemoryError):
            return None  # too deeply nested to judge (a `+` chain of thousands of terms)
    return None


def miscompiles(ours: bytes, theirs: bytes, merged: bytes) -> str | None:
    """Why CPython rejects the merged file when it accepts both sides, or None.

    tree-sitter-python recovers from a line at an indentation that matches no
    enclosing block, so a plain line merge of one side's dedent and the other's
    insertion below it parses there; CPython raises `IndentationError`. A side it
    rejects (Python 2, or syntax newer than this interpreter) leaves the grammar as
    the only judge.
    """
    error = _syntax_error(merged)
    if error is None or _syntax_error(ours) is not None or _syntax_error(theirs) is not None:
        return None
    return error


SPEC = LanguageSpec(
    name="python",
    extensions=(".py", ".pyi"),
    grammar=tree_sitter_python.language,
    classify=classify,
    attached=frozenset({"comment", "decorator"}),
    rejects=rejects,
    name_list=name_list,
    binds=binds,
    miscompiles=miscompiles,
    blocks_by_indent=True,
    keyed_entries=frozenset({("pair", "dictionary")}),
)
