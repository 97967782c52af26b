"""JavaScript, TypeScript and TSX entities.

One classifier serves all three grammars: TypeScript's trees are JavaScript's plus
interfaces, type aliases, enums, namespaces, signatures and abstract classes.
"""

from __future__ import annotations

import tree_sitter_javascript
import tree_sitter_typescript
from tree_sitter import Node

from . import EntityInfo, LanguageSpec, NameList, node_text

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
        if inner.type == "call_expression":
            return _test_block(inner)
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


# Test frameworks' blocks (Jest, Mocha, Vitest, Jasmine): a `describe` holds tests the
# way a class holds methods, and each block is known by its title.
_SUITES = frozenset({"describe"})
_TESTS = frozenset({"it", "test"})
_TITLES = frozenset({"string", "template_string"})
_CALLBACKS = frozenset({"arrow_function", "function_expression", "function"})


def _test_block(call: Node) -> EntityInfo | None:
    """`describe("title", () => {…})` as a suite of tests, `it`/`test` as one test.

    Only a plain call whose first argument is a literal title (a template with no
    `${…}` in it) and whose last is a function: two sides adding tests under
    different titles at one place then merge as two added entities, and two tests
    of one title in one suite are told apart by their order, as overloads are.
    """
    callee = call.child_by_field_name("function")
    arguments = call.child_by_field_name("arguments")
    if callee is None or callee.type != "identifier" or arguments is None:
        return None
    verb = node_text(callee)
    listed = arguments.named_children
    if verb not in _SUITES | _TESTS or len(listed) < 2:
        return None
    title, callback = listed[0], listed[-1]
    if title.type not in _TITLES or any(c.type == "template_substitution" for c in title.children):
        return None
    if callback.type not in _CALLBACKS:
        return None
    # Known by what it says: "adds", 'adds' and `adds` are one title.
    name = node_text(title)[1:-1]
    if verb in _TESTS:
        return EntityInfo("test", name)
    body = callback.child_by_field_name("body")
    return EntityInfo(
        "suite", name, body=body if body is not None and body.type == "statement_block" else None
    )


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
    # `export { a, b } from "x"` is keyed by its module and `export { a, b }` by its
    # braces, as imports are, so two sides editing one list meet in one merge of its
    # names instead of both surviving; `export * from "x"` is its own name.
    if any(c.type == "export_clause" for c in node.named_children):
        source = node.child_by_field_name("source")
        return EntityInfo("export", f"{{}} from {node_text(source)}" if source else "{}")
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


def name_list(node: Node) -> NameList | None:
    """The braced names of an import or export statement, or None when it has none."""
    clause: Node | None = node
    if node.type == "import_statement":
        clause = next((c for c in node.named_children if c.type == "import_clause"), None)
        inner = "named_imports"
    elif node.type == "export_statement":
        inner = "export_clause"
    else:
        return None
    braces = next((c for c in clause.named_children if c.type == inner), None) if clause else None
    if braces is None:
        return None
    items, imported, bound = [], [], []
    for spec in braces.named_children:
        if spec.type not in ("import_specifier", "export_specifier"):
            return None  # a comment inside the braces: leave it to the line merge
        items.append((spec.start_byte - node.start_byte, spec.end_byte - node.start_byte))
        name = node_text(spec.child_by_field_name("name"))
        imported.append(name)
        bound.append(node_text(spec.child_by_field_name("alias")) or name)
    if not items:
        return None
    return NameList(tuple(items), tuple(imported), tuple(bound))


def binds(node: Node) -> list[str]:
    """The names a top-level statement declares, imports or exports."""
    kind = node.type
    if kind == "import_statement":
        clause = next((c for c in node.named_children if c.type == "import_clause"), None)
        found = []
        for part in clause.named_children if clause is not None else ():
            if part.type == "identifier":
                found.append(node_text(part))
            elif part.type == "namespace_import" and part.named_children:
                found.append(node_text(part.named_children[-1]))
        listed = name_list(node)
        found += list(listed.bound) if listed is not None else []
        return [f"import {name}" for name in found]
    if kind == "export_statement":
        if any(c.type == "default" for c in node.children):
            return ["export default"]
        declaration = node.child_by_field_name("declaration")
        if declaration is not None:
            declared = binds(declaration)
            return declared + [f"export {name}" for name in declared]
        listed = name_list(node)
        return [f"export {name}" for name in listed.bound] if listed is not None else []
    if kind in ("function_declaration", "generator_function_declaration", *_CLASSES):
        return [_name(node)]
    if kind in ("enum_declaration", "type_alias_declaration"):
        return [_name(node)]
    if kind == "lexical_declaration":
        # `var` may legally be declared twice; `let` and `const` may not.
        names = (d.child_by_field_name("name") for d in node.named_children)
        return [node_text(n) for n in names if n is not None and n.type == "identifier"]
    return []


def _name(node: Node) -> str:
    return node_text(node.child_by_field_name("name"))


# An object literal's `key: value` pairs (a type literal's members are not values
# looked up by key, and stay out).
_OBJECT_ENTRIES = frozenset({("pair", "object")})

JAVASCRIPT = LanguageSpec(
    name="javascript",
    extensions=(".js", ".mjs", ".cjs", ".jsx"),
    grammar=tree_sitter_javascript.language,
    classify=classify,
    attached=frozenset({"comment", "decorator"}),
    name_list=name_list,
    binds=binds,
    keyed_entries=_OBJECT_ENTRIES,
)
TYPESCRIPT = LanguageSpec(
    name="typescript",
    extensions=(".ts", ".mts", ".cts"),
    grammar=tree_sitter_typescript.language_typescript,
    classify=classify,
    attached=frozenset({"comment", "decorator"}),
    name_list=name_list,
    binds=binds,
    keyed_entries=_OBJECT_ENTRIES,
)
TSX = LanguageSpec(
    name="tsx",
    extensions=(".tsx",),
    grammar=tree_sitter_typescript.language_tsx,
    classify=classify,
    attached=frozenset({"comment", "decorator"}),
    name_list=name_list,
    binds=binds,
    keyed_entries=_OBJECT_ENTRIES,
)
SPECS = (JAVASCRIPT, TYPESCRIPT, TSX)
