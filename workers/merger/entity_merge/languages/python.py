"""Python entities: imports, functions, classes and their methods, module variables."""

from __future__ import annotations

from functools import cache

import tree_sitter_python
from tree_sitter import Language, Node, Query, QueryCursor

from . import EntityInfo, LanguageSpec, node_text

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
        case _ if node.type in _IMPORTS:
            # Keyed by the whole statement: Python tolerates a repeated import, so two
            # sides adding `from x import a` and `from x import b` both survive.
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


@cache
def _blocks() -> Query:
    return Query(Language(tree_sitter_python.language()), "(block) @block")


def rejects(root: Node) -> bool:
    """True when a body is empty or holds only comments.

    The grammar accepts ``class A:`` with nothing under it, which Python does not;
    an entity merge where each side deletes a different last member produces exactly
    that, and it must be caught before it is called clean.
    """
    blocks = QueryCursor(_blocks()).captures(root).get("block", [])
    return any(all(c.type == "comment" for c in block.named_children) for block in blocks)


SPEC = LanguageSpec(
    name="python",
    extensions=(".py", ".pyi"),
    grammar=tree_sitter_python.language,
    classify=classify,
    attached=frozenset({"comment", "decorator"}),
    rejects=rejects,
)
