"""Judge a clean merge without the driver's help: wrong, identical, or only reformatted.

Written apart from the driver (its own walk over tree-sitter trees, only the grammars
are shared) so that a blind spot of the driver's own checks is not copied here.

* `bindings` counts what each top-level statement declares: functions, classes,
  types, Go methods, imported and exported names. A name the merged file binds more
  often than both sides did is a duplicate neither side had.
* `definitions` maps every declared name to its text, looking inside top-level
  ``if``/``try`` blocks too, so a function one side wrapped in a condition still counts
  as defined there. A name one side deleted and the other side changed, in a result
  called clean, is a modify/delete the merge settled silently.
* `canonical` is a tree's tokens with layout dropped and top-level declarations and
  class members sorted: equal canonical forms differ only in formatting or order.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator

from tree_sitter import Node

_GO_MAJOR = re.compile(r"^v[2-9][0-9]*$")
_DEFINES = {
    "function_definition",
    "class_definition",
    "function_declaration",
    "generator_function_declaration",
    "class_declaration",
    "abstract_class_declaration",
    "interface_declaration",
    "type_alias_declaration",
    "enum_declaration",
    "method_declaration",
    "type_spec",
    "type_alias",
}
_NESTS = {
    "if_statement",
    "else_clause",
    "elif_clause",
    "try_statement",
    "except_clause",
    "finally_clause",
    "block",
    "statement_block",
    "decorated_definition",
    "export_statement",
    "type_declaration",
}
_SORTED = {
    "module",
    "program",
    "source_file",
    "class_body",
    "field_declaration_list",
    "interface_body",
    "object_type",
    "import_spec_list",
    "declaration_list",
    "use_list",
}


def _text(node: Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", "replace")


def _field(node: Node, name: str) -> str:
    return _text(node.child_by_field_name(name))


def _go_import_name(spec: Node) -> str:
    alias = _field(spec, "name")
    if alias:
        return alias
    path = _field(spec, "path").strip('"`').split("/")
    last = path[-1]
    if _GO_MAJOR.match(last) and len(path) > 1:
        last = path[-2]
    return re.sub(r"\.v[0-9]+$", "", last)


def _python(node: Node) -> Iterator[str]:
    if node.type == "decorated_definition":
        inner = node.child_by_field_name("definition")
        if inner is not None:
            yield from _python(inner)
    elif node.type in ("function_definition", "class_definition"):
        yield f"def {_field(node, 'name')}"
    elif node.type in ("import_statement", "import_from_statement"):
        for name in node.children_by_field_name("name"):
            if name.type == "aliased_import":
                yield f"import {_field(name, 'alias')}"
            elif node.type == "import_from_statement":
                yield f"import {_text(name)}"
            else:
                # `import a.b` and `import a.c` both bind `a`, legitimately.
                yield f"import {_text(name)} (module)"


def _ecmascript(node: Node) -> Iterator[str]:
    if node.type == "import_statement":
        for clause in (c for c in node.named_children if c.type == "import_clause"):
            for part in clause.named_children:
                if part.type == "identifier":
                    yield f"import {_text(part)}"
                elif part.type == "namespace_import":
                    yield f"import {_text(part.named_children[-1])}"
                elif part.type == "named_imports":
                    for spec in part.named_children:
                        if spec.type == "import_specifier":
                            yield f"import {_field(spec, 'alias') or _field(spec, 'name')}"
        return
    if node.type == "export_statement":
        declaration = node.child_by_field_name("declaration")
        if any(c.type == "default" for c in node.children):
            yield "export default"
        elif declaration is not None:
            for name in _ecmascript(declaration):
                yield name
                yield "export " + name.split(" ", 1)[1]
        for clause in (c for c in node.named_children if c.type == "export_clause"):
            for spec in clause.named_children:
                if spec.type == "export_specifier":
                    yield f"export {_field(spec, 'alias') or _field(spec, 'name')}"
        for ns in (c for c in node.named_children if c.type == "namespace_export"):
            yield f"export {_text(ns.named_children[-1])}"
        return
    if node.type in (
        "function_declaration",
        "generator_function_declaration",
        "class_declaration",
        "abstract_class_declaration",
        "enum_declaration",
        "type_alias_declaration",
    ):
        yield f"def {_field(node, 'name')}"
    elif node.type in ("lexical_declaration", "variable_declaration"):
        if node.type == "variable_declaration":
            return  # `var` may be repeated legally
        for declarator in node.named_children:
            if declarator.type == "variable_declarator":
                target = declarator.child_by_field_name("name")
                if target is not None and target.type == "identifier":
                    yield f"def {_text(target)}"


def _go(node: Node) -> Iterator[str]:
    if node.type == "import_declaration":
        for spec in _descend(node, "import_spec"):
            name = _go_import_name(spec)
            if name not in ("_", "."):
                yield f"import {name}"
            yield f"import path {_field(spec, 'path')}"
    elif node.type == "function_declaration":
        name = _field(node, "name")
        if name not in ("init", "_"):
            yield f"def {name}"
    elif node.type == "method_declaration":
        receiver = next(
            iter(_descend(node.child_by_field_name("receiver"), "type_identifier")), None
        )
        yield f"def {_text(receiver)}.{_field(node, 'name')}"
    elif node.type in ("type_declaration", "const_declaration", "var_declaration"):
        for spec in (
            *_descend(node, "type_spec"),
            *_descend(node, "type_alias"),
            *_descend(node, "const_spec"),
            *_descend(node, "var_spec"),
        ):
            for name in spec.children_by_field_name("name"):
                if _text(name) != "_":
                    yield f"def {_text(name)}"


def _descend(node: Node | None, kind: str) -> list[Node]:
    found: list[Node] = []
    stack = [node] if node is not None else []
    while stack:
        current = stack.pop()
        if current.type == kind:
            found.append(current)
        else:
            stack.extend(current.named_children)
    return found


_RUST_ITEMS = {
    "function_item": "def",
    "struct_item": "type",
    "enum_item": "type",
    "union_item": "type",
    "trait_item": "type",
    "type_item": "type",
    "const_item": "def",
    "static_item": "def",
    "mod_item": "mod",
    "macro_definition": "macro",
}


def _rust_use(node: Node, prefix: str) -> Iterator[str]:
    """The names a use tree binds, each as `import name`."""
    if node.type == "scoped_use_list":
        listed = node.child_by_field_name("list")
        path = _field(node, "path")
        if listed is not None:
            yield from _rust_use(listed, f"{prefix}::{path}" if prefix else path)
    elif node.type == "use_list":
        for child in node.named_children:
            yield from _rust_use(child, prefix)
    elif node.type == "use_as_clause":
        if _field(node, "alias") != "_":
            yield f"import {_field(node, 'alias')}"
    elif node.type == "self":
        yield f"import {prefix.rsplit('::', 1)[-1]}"
    elif node.type in ("scoped_identifier", "identifier"):
        yield f"import {_text(node).rsplit('::', 1)[-1]}"


def _rust(node: Node) -> Iterator[str]:
    if node.type == "use_declaration":
        argument = node.child_by_field_name("argument")
        if argument is not None:
            yield from _rust_use(argument, "")
    elif node.type in _RUST_ITEMS:
        yield f"{_RUST_ITEMS[node.type]} {_field(node, 'name')}"


_JAVA_TYPES = {
    "class_declaration",
    "interface_declaration",
    "enum_declaration",
    "record_declaration",
    "annotation_type_declaration",
}


def _java(node: Node) -> Iterator[str]:
    if node.type == "import_declaration":
        if any(c.type in ("static", "asterisk") for c in node.children):
            return  # a static import may name overloads; a wildcard binds nothing named
        path = next((c for c in node.named_children), None)
        yield f"import {_text(path).rsplit('.', 1)[-1]}"
    elif node.type in _JAVA_TYPES:
        yield f"def {_field(node, 'name')}"


_BINDERS = {
    "python": _python,
    "javascript": _ecmascript,
    "typescript": _ecmascript,
    "tsx": _ecmascript,
    "go": _go,
    "rust": _rust,
    "java": _java,
}


def bindings(language: str, root: Node) -> Counter[str]:
    """How often each name is bound by a top-level statement of the file."""
    binder = _BINDERS[language]
    return Counter(name for child in root.named_children for name in binder(child))


def _member_name(node: Node) -> str:
    """A Rust or Java member's name: methods by name and parameter types (overloads)."""
    if node.type == "impl_item":
        trait = _field(node, "trait")
        return f"impl {trait + ' for ' if trait else ''}{_field(node, 'type')}"
    name = _field(node, "name")
    if node.type in ("method_declaration", "constructor_declaration"):
        parameters = node.child_by_field_name("parameters")
        types = [
            _erasure(_field(p, "type") or _text(p).rsplit(" ", 1)[0])
            for p in (parameters.named_children if parameters is not None else [])
        ]
        name = f"{name}({', '.join(types)})"
    return name


_ANNOTATION = re.compile(r"@[\w.]+(\([^()]*\))?\s*")
_ARGUMENTS = re.compile(r"<[^<>]*>")


def _erasure(text: str) -> str:
    """A Java type as overloads are told apart: no annotations, no type arguments."""
    text = _ANNOTATION.sub("", text)
    while _ARGUMENTS.search(text):
        text = _ARGUMENTS.sub("", text)
    return "".join(text.split())


_MEMBERS = {
    "rust": ({*_RUST_ITEMS, "impl_item", "function_signature_item"}, "declaration_list"),
    "java": (
        {*_JAVA_TYPES, "method_declaration", "constructor_declaration"},
        "class_body interface_body",
    ),
}


def _nested_definitions(language: str, root: Node) -> dict[str, str]:
    """Rust and Java: every item and member, named by its path (``Cart.total()``)."""
    kinds, bodies = _MEMBERS[language]
    found: dict[str, str] = {}
    stack = [(child, "") for child in root.named_children]
    while stack:
        node, owner = stack.pop()
        if node.type not in kinds:
            continue
        name = f"{owner}.{_member_name(node)}" if owner else _member_name(node)
        key = f"{language} {name}"
        found[key] = found.get(key, "") + _text(node) + "\0"
        body = node.child_by_field_name("body")
        if body is not None and body.type in bodies.split():
            stack.extend((child, name) for child in body.named_children)
    return found


def definitions(language: str, root: Node) -> dict[str, str]:
    """Every declared name (top level, or inside top-level if/try blocks) and its text.

    Rust and Java name their members too (a Java file's code is all inside classes).
    """
    if language in _MEMBERS:
        return _nested_definitions(language, root)
    found: dict[str, str] = {}
    stack = list(root.named_children)
    while stack:
        node = stack.pop()
        if node.type in _NESTS:
            stack.extend(node.named_children)
            continue
        if node.type in _DEFINES:
            name = _field(node, "name")
            if node.type == "method_declaration":
                name = f"{_field(node.child_by_field_name('receiver'), 'type')}.{name}"
            if name:
                key = f"{language} {name}"
                found[key] = found.get(key, "") + _text(node) + "\0"
    return found


def canonical(node: Node) -> str:
    """The node's tokens without layout; declarations at top level and in classes sorted."""
    if node.child_count == 0:
        return _text(node)
    parts = [canonical(child) for child in node.children]
    if node.type in _SORTED:
        parts.sort()
    return f"({node.type} {' '.join(parts)})"
