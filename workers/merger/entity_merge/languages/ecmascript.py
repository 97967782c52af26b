"""JavaScript, TypeScript and TSX entities.

One classifier serves all three grammars: TypeScript's trees are JavaScript's plus
interfaces, type aliases, enums, namespaces, signatures and abstract classes.
"""

from __future__ import annotations

import tree_sitter_javascript
import tree_sitter_typescript
from tree_sitter import Node

from . import EntityInfo, LanguageSpec, node_text

_FUNCTIONS = frozenset(
    {"function_declaration", "generator_function_declaration", "function_signature"}
)
_CLASSES = frozenset({"class_declaration", "abstract_class_declaration"})
_VARIABLES = frozenset({"lexical_declaration", "variable_declaration"})
_NAMESPACES = frozenset({"internal_module", "module"})
_METHODS = frozenset({"method_definition", "method_signature", "abstract_method_signature"})
_FIELDS = frozenset({"field_definition", "public_field_definition", "property_signature"})


def classify(node: Node, container: str | None) -> EntityInfo | None:
    """Name `node` if it is a JS/TS entity; `container` is the enclosing entity's kind."""
    kind = node.type
    if kind == "export_statement":
        return _export(node, container)
    if kind == "ambient_declaration":
        # `declare function f(): void;` is f; `declare global {}` has no name.
        inner = next((c for c in node.named_children if c.type != "comment"), None)
        return classify(inner, container) if inner is not None else None
    if kind == "expression_statement" and node.named_child_count == 1:
        # tree-sitter-typescript wraps `namespace N {}` in an expression statement.
        inner = node.named_children[0]
        return classify(inner, container) if inner.type in _NAMESPACES else None
    if kind == "import_statement":
        return EntityInfo("import", _import_source(node))
    if kind in _FUNCTIONS:
        # Overload signatures and the implementation share a name; the extractor
        # tells them apart by their order.
        return EntityInfo("function", _name(node))
    if kind in _CLASSES:
        return EntityInfo("class", _name(node), body=node.child_by_field_name("body"))
    if kind == "interface_declaration":
        return EntityInfo("interface", _name(node), body=node.child_by_field_name("body"))
    if kind == "type_alias_declaration":
        return EntityInfo("type", _name(node))
    if kind == "enum_declaration":
        return EntityInfo("enum", _name(node))
    if kind in _NAMESPACES:
        return EntityInfo("namespace", _name(node))
    if kind in _VARIABLES:
        names = [
            node_text(d.child_by_field_name("name"))
            for d in node.named_children
            if d.type == "variable_declarator"
        ]
        return EntityInfo("variable", ", ".join(names)) if names else None
    if container in ("class", "interface"):
        return _member(node)
    return None


def _export(node: Node, container: str | None) -> EntityInfo | None:
    declaration = node.child_by_field_name("declaration")
    is_default = any(c.type == "default" for c in node.children)
    if declaration is not None and not is_default:
        return classify(declaration, container)
    if is_default:
        # A module has one default export whatever it is called, so that is its name;
        # a default-exported class still merges member by member.
        inner = classify(declaration, container) if declaration is not None else None
        if inner is not None:
            return EntityInfo(inner.kind, "default", body=inner.body)
        return EntityInfo("export", "default")
    # `export { a, b }` and `export * from "x"`: the statement is its own name.
    return EntityInfo("export", node_text(node))


def _import_source(node: Node) -> str:
    # Keyed by module, not by text: JavaScript rejects a binding imported twice, so
    # two sides extending one import must merge inside it rather than both survive.
    source = node.child_by_field_name("source")
    if source is None:
        for child in node.named_children:
            source = child.child_by_field_name("source")
            if source is not None:
                break
    return node_text(source) if source is not None else node_text(node)


def _member(node: Node) -> EntityInfo | None:
    if node.type in _METHODS:
        accessor = next((c.type for c in node.children if c.type in ("get", "set")), "")
        name = node_text(node.child_by_field_name("name"))
        return EntityInfo("method", f"{accessor} {name}".strip())
    if node.type in _FIELDS:
        target = node.child_by_field_name("name") or node.child_by_field_name("property")
        return EntityInfo("field", node_text(target))
    return None


def _name(node: Node) -> str:
    return node_text(node.child_by_field_name("name"))


JAVASCRIPT = LanguageSpec(
    name="javascript",
    extensions=(".js", ".mjs", ".cjs", ".jsx"),
    grammar=tree_sitter_javascript.language,
    classify=classify,
    attached=frozenset({"comment", "decorator"}),
)
TYPESCRIPT = LanguageSpec(
    name="typescript",
    extensions=(".ts", ".mts", ".cts"),
    grammar=tree_sitter_typescript.language_typescript,
    classify=classify,
    attached=frozenset({"comment", "decorator"}),
)
TSX = LanguageSpec(
    name="tsx",
    extensions=(".tsx",),
    grammar=tree_sitter_typescript.language_tsx,
    classify=classify,
    attached=frozenset({"comment", "decorator"}),
)
SPECS = (JAVASCRIPT, TYPESCRIPT, TSX)
