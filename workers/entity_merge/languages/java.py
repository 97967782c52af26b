"""Java entities: package, imports, types and their members.

A method is named by its parameter types as well as its name (``add(int, String)``):
Java overloads are common, and an overload one side adds must not be taken for an edit
of its namesake. A changed signature is then a deleted method and a new one, which
conflicts with the other side's edit of the old one rather than merging into it.
Each import is its own entity, keyed by what it imports, so two sides' new imports are
a set: both kept, one kept when both added it. Annotations are part of the declaration
in this grammar; Javadoc and other comments are glued to the member below them.
"""

from __future__ import annotations

import tree_sitter_java
from tree_sitter import Node

from . import C_COMMENTS, EntityInfo, LanguageSpec, node_text

_TYPES = {
    "class_declaration": "class",
    "interface_declaration": "interface",
    "record_declaration": "record",
    "annotation_type_declaration": "annotation",
}
_COMMENTS = C_COMMENTS


def classify(node: Node, container: str | None) -> EntityInfo | None:
    """Name `node` if it is a Java entity; `container` is the enclosing entity's kind."""
    kind = node.type
    if kind == "package_declaration":
        return EntityInfo("package", "")
    if kind == "import_declaration":
        return EntityInfo("import", import_path(node))
    if kind in _TYPES:
        return EntityInfo(
            _TYPES[kind],
            node_text(node.child_by_field_name("name")),
            body=node.child_by_field_name("body"),
        )
    if kind == "enum_declaration":
        # Constants share lines and the `;` before the members: the enum merges by lines.
        return EntityInfo("enum", node_text(node.child_by_field_name("name")))
    if kind in ("method_declaration", "constructor_declaration"):
        name = node_text(node.child_by_field_name("name"))
        named = "constructor" if kind == "constructor_declaration" else "method"
        return EntityInfo(named, f"{name}({', '.join(parameter_types(node))})")
    if kind == "compact_constructor_declaration":
        return EntityInfo("constructor", node_text(node.child_by_field_name("name")))
    if kind in ("field_declaration", "constant_declaration"):
        names = [
            node_text(d.child_by_field_name("name"))
            for d in node.children_by_field_name("declarator")
        ]
        return EntityInfo("field", ", ".join(names))
    if kind == "annotation_type_element_declaration":
        return EntityInfo("element", node_text(node.child_by_field_name("name")))
    return None


def parameter_types(node: Node) -> list[str]:
    """A method's parameter types as Java tells overloads apart: ``["Map", "String..."]``.

    Annotations and type arguments are dropped (two methods whose parameters differ in
    those alone cannot both exist), so a side annotating a parameter (``@Nullable K``)
    edits the method rather than replacing it, and two sides adding one method, each
    with its own annotations, meet under one name.
    """
    parameters = node.child_by_field_name("parameters")
    found: list[str] = []
    for parameter in parameters.named_children if parameters is not None else ():
        if parameter.type == "formal_parameter":
            dimensions = parameter.child_by_field_name("dimensions")
            found.append(_erased(parameter.child_by_field_name("type")) + _erased(dimensions))
        elif parameter.type == "spread_parameter":
            shape = next(
                (c for c in parameter.named_children if c.type not in ("modifiers",)), None
            )
            found.append(f"{_erased(shape)}...")
    return found


_NOT_ERASED = frozenset({"annotation", "marker_annotation", "type_arguments", "modifiers"})


def _erased(node: Node | None) -> str:
    """A type's text without its annotations and type arguments, layout dropped."""
    tokens: list[str] = []
    stack = [node] if node is not None else []
    while stack:
        current = stack.pop()
        if current.type in _NOT_ERASED:
            continue
        if current.child_count == 0:
            tokens.append(node_text(current))
        else:
            stack.extend(reversed(current.children))
    return "".join(tokens)


def import_path(node: Node) -> str:
    """What an import names: ``java.util.List``, ``static org.junit.Assert.*``."""
    static = any(c.type == "static" for c in node.children)
    path = next((c for c in node.named_children if c.type != "asterisk"), None)
    wildcard = any(c.type == "asterisk" for c in node.named_children)
    return f"{'static ' if static else ''}{node_text(path)}{'.*' if wildcard else ''}"


def import_binding(node: Node) -> tuple[str, str, str]:
    """(bound name, package or class, imported name) of one import declaration."""
    path = import_path(node)
    static = path.startswith("static ")
    module, _, name = path.removeprefix("static ").rpartition(".")
    if name == "*":
        return f"{'static ' if static else ''}* from {module}", module, "*"
    return f"{'static ' if static else ''}{name}", module, name


_BODIES = frozenset({"class_body", "interface_body", "enum_body_declarations"})


def _methods(root: Node) -> dict[tuple[str, str], set[str]]:
    """(enclosing type path, method name) -> the parameter lists it is declared with."""
    found: dict[tuple[str, str], set[str]] = {}
    stack: list[tuple[Node, str]] = [(root, "")]
    while stack:
        node, owner = stack.pop()
        for child in node.named_children:
            if child.type in _TYPES or child.type == "enum_declaration":
                body = child.child_by_field_name("body")
                path = f"{owner}.{node_text(child.child_by_field_name('name'))}"
                if body is not None:
                    stack.append((body, path))
            elif child.type in _BODIES:
                stack.append((child, owner))
            elif child.type == "method_declaration":
                name = node_text(child.child_by_field_name("name"))
                found.setdefault((owner, name), set()).add(", ".join(parameter_types(child)))
    return found


def collides(base: Node, ours: Node, theirs: Node, merged: Node) -> str | None:
    """Both sides added a method of one new name with different parameters: both kept.

    Methods are keyed by their parameters, so two sides writing the same new test or
    helper, one with a parameter and one without, are two overloads to the entity merge;
    most often they are one method written twice, and the merge must not keep both.
    """
    b, o, t, m = (_methods(root) for root in (base, ours, theirs, merged))
    for key in sorted(m):
        if key in b or key not in o or key not in t or o[key] == t[key]:
            continue
        if len(m[key]) > max(len(o[key]), len(t[key])):
            return f"both sides added {key[1]} to {key[0].lstrip('.')}, with different parameters"
    return None


def binds(node: Node) -> list[str]:
    """The names a top-level declaration binds: imported simple names and type names."""
    if node.type == "import_declaration":
        bound, _, imported = import_binding(node)
        return [] if imported == "*" or bound.startswith("static ") else [f"import {bound}"]
    if node.type in _TYPES or node.type == "enum_declaration":
        return [f"type {node_text(node.child_by_field_name('name'))}"]
    return []


SPEC = LanguageSpec(
    name="java",
    extensions=(".java",),
    grammar=tree_sitter_java.language,
    classify=classify,
    attached=_COMMENTS,
    trailing=_COMMENTS,
    binds=binds,
    collides=collides,
)
