"""Go entities: package, imports, funcs, methods (parented by receiver), type/var/const."""

from __future__ import annotations

import re

import tree_sitter_go
from tree_sitter import Node

from . import EntityInfo, LanguageSpec, node_text

# A parenthesised declaration (`import ( … )`, `const ( … )`) has no single name. It
# is matched by kind and order, and what it holds is merged spec by spec.
GROUP = "(...)"

_SPEC_KIND = {
    "import_spec": "import",
    "var_spec": "var",
    "const_spec": "const",
    "type_spec": "type",
    "type_alias": "type",
}
_DECLARATION_KIND = {
    "import_declaration": "import",
    "var_declaration": "var",
    "const_declaration": "const",
    "type_declaration": "type",
}


def classify(node: Node, container: str | None) -> EntityInfo | None:
    """Name `node` if it is a Go entity; `container` is the enclosing entity's kind."""
    kind = node.type
    if kind == "package_clause":
        return EntityInfo("package", node_text(node.named_children[0]))
    if kind == "function_declaration":
        return EntityInfo("function", node_text(node.child_by_field_name("name")))
    if kind == "method_declaration":
        return EntityInfo(
            "method",
            node_text(node.child_by_field_name("name")),
            parent=_receiver_type(node),
        )
    if kind in _DECLARATION_KIND:
        return _declaration(node, _DECLARATION_KIND[kind])
    if kind in _SPEC_KIND:
        return _spec(node)
    if kind == "field_declaration":
        names = [node_text(c) for c in node.children_by_field_name("name")]
        # An embedded field has no name; its type is what identifies it.
        name = ", ".join(names) or node_text(node.child_by_field_name("type"))
        return EntityInfo("field", name)
    if kind == "method_elem":
        return EntityInfo("method", node_text(node.child_by_field_name("name")))
    return None


def _declaration(node: Node, kind: str) -> EntityInfo | None:
    grouped = next(
        (c for c in node.children if c.type in ("(", "import_spec_list", "var_spec_list")),
        None,
    )
    if grouped is not None:
        # import and var wrap their parentheses in a list node; const and type do not.
        body = grouped if grouped.type != "(" else node
        return EntityInfo(kind, GROUP, body=body)
    spec = next((c for c in node.named_children if c.type in _SPEC_KIND), None)
    return _spec(spec) if spec is not None else None


def _spec(node: Node) -> EntityInfo:
    kind = _SPEC_KIND[node.type]
    if kind == "import":
        # Keyed by the name it binds: Go rejects a name imported twice, so two sides
        # adding one import collapse into one, and two sides moving one import to
        # different versions (`…/v8`, `…/v9`) meet as one edit and conflict.
        return EntityInfo(kind, import_name(node))
    names = ", ".join(node_text(c) for c in node.children_by_field_name("name"))
    body = None
    if node.type == "type_spec":
        shape = node.child_by_field_name("type")
        if shape is not None and shape.type == "struct_type":
            body = next((c for c in shape.children if c.type == "field_declaration_list"), None)
        elif shape is not None and shape.type == "interface_type":
            body = shape
    return EntityInfo(kind, names, body=body)


_MAJOR = re.compile(r"v[2-9][0-9]*|v[1-9][0-9]+")


def import_name(spec: Node) -> str:
    """The name an import spec binds: its alias, else its package's likely name.

    A package's name is only known from its source, so this takes the path's last
    element, skipping a module major-version suffix (``redis/v8`` is ``redis``) and
    dropping a ``.vN`` one (``gopkg.in/yaml.v3`` is ``yaml``). Blank and dot imports
    bind nothing, so they are known by their path.
    """
    path = node_text(spec.child_by_field_name("path")).strip('"`')
    alias = node_text(spec.child_by_field_name("name"))
    if alias in ("_", "."):
        return f"{alias} {path}"
    if alias:
        return alias
    parts = path.split("/")
    last = parts[-1]
    if len(parts) > 1 and _MAJOR.fullmatch(last):
        last = parts[-2]
    return re.sub(r"\.v[0-9]+$", "", last)


def binds(node: Node) -> list[str]:
    """The names a top-level declaration binds (imports, funcs, methods, types, values)."""
    kind = node.type
    if kind == "function_declaration":
        name = node_text(node.child_by_field_name("name"))
        return [] if name in ("init", "_") else [name]
    if kind == "method_declaration":
        return [f"{_receiver_type(node)}.{node_text(node.child_by_field_name('name'))}"]
    found: list[str] = []
    stack = [node] if kind in _DECLARATION_KIND else []
    while stack:
        current = stack.pop()
        if current.type == "import_spec":
            # A package imported twice under two names compiles, but is two sides'
            # additions of one import both kept: count the path as well as the name.
            name = import_name(current)
            if not name.startswith(("_ ", ". ")):
                found.append(f"import {name}")
            found.append(f"import path {node_text(current.child_by_field_name('path'))}")
        elif current.type in _SPEC_KIND:
            names = [node_text(n) for n in current.children_by_field_name("name")]
            found += names
            if "_" in names and current.type == "var_spec":
                # `var _ Flag = (*extFlag)(nil)` binds nothing, so it is known by what it
                # says: two sides adding one such check, one in a `var ( … )` block and
                # one on its own line, would otherwise both be kept. (Not a const `_`: an
                # iota block's `_ = iota` repeats in every block by design.)
                found.append("blank " + " ".join(node_text(current).split()))
        else:
            stack.extend(current.named_children)
    return [name for name in found if name != "_"]


def _receiver_type(node: Node) -> str:
    receiver = node.child_by_field_name("receiver")
    stack = [receiver] if receiver is not None else []
    while stack:
        current = stack.pop(0)
        if current.type == "type_identifier":
            return node_text(current)
        stack.extend(current.named_children)
    return ""


def _types_and_methods(root: Node) -> tuple[set[str], dict[str, set[str]]]:
    """The type names a file declares at top level, and its methods by receiver type."""
    types: set[str] = set()
    methods: dict[str, set[str]] = {}
    for child in root.named_children:
        if child.type == "method_declaration":
            name = node_text(child.child_by_field_name("name"))
            methods.setdefault(_receiver_type(child), set()).add(name)
        elif child.type == "type_declaration":
            stack = list(child.named_children)
            while stack:
                current = stack.pop()
                if current.type in ("type_spec", "type_alias"):
                    types.add(node_text(current.child_by_field_name("name")))
                elif current.type not in _SPEC_KIND:
                    stack.extend(current.named_children)
    return types, methods


def collides(base: Node, ours: Node, theirs: Node, merged: Node) -> str | None:
    """Methods the merge keeps of a type one side deleted, or of one new type both wrote.

    A Go method sits outside its type, so the entity merge sees a method one side added
    and a type the other side deleted (with all its methods) as unrelated: the method
    would survive on a type that is gone. Likewise both sides adding one new type, each
    with methods the other lacks, is one thing written twice (an adapter for two
    versions of an interface), and the union of both method sets is neither.
    """
    (bt, _), (ot, om), (tt, tm), (mt, mm) = map(_types_and_methods, (base, ours, theirs, merged))
    for name in sorted(bt - mt):
        kept = mm.get(name)
        for types, methods, side in ((ot, om, "ours"), (tt, tm, "theirs")):
            if kept and name not in types and not methods.get(name):
                return f"keeps methods of {name}, a type {side} deleted with all its methods"
    for name in sorted((ot & tt & mt) - bt):
        mine, yours = om.get(name, set()), tm.get(name, set())
        if mine - yours and yours - mine:
            return f"both sides added type {name}, with different methods"
    return None


SPEC = LanguageSpec(
    name="go",
    extensions=(".go",),
    grammar=tree_sitter_go.language,
    classify=classify,
    binds=binds,
    collides=collides,
    keyed_entries=frozenset({("keyed_element", "literal_value")}),
    blank_names=frozenset({"_"}),
)
