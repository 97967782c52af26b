"""Rust entities: use declarations, fns, structs, enums, traits, impl blocks, mods.

An ``impl`` block is named by what it implements for what (``Display for Cart``), so
two sides adding methods to one impl merge member by member, and a trait and an inherent
impl of one type stay apart. Attributes (``#[derive]``, ``#[cfg]``) and doc comments are
glued to the item below them: a ``#[cfg(test)]`` travels with its ``mod tests``.
"""

from __future__ import annotations

import tree_sitter_rust
from tree_sitter import Node

from . import C_COMMENTS, EntityInfo, LanguageSpec, NameList, node_text

_NAMED = {
    "function_item": "function",
    "function_signature_item": "function",
    "const_item": "const",
    "static_item": "static",
    "type_item": "type",
    "macro_definition": "macro",
}
# Items whose braces hold entities of their own.
_CONTAINERS = {
    "struct_item": ("struct", "field_declaration_list"),
    "union_item": ("union", "field_declaration_list"),
    "enum_item": ("enum", "enum_variant_list"),
    "trait_item": ("trait", "declaration_list"),
    "mod_item": ("mod", "declaration_list"),
}
_COMMENTS = C_COMMENTS


def classify(node: Node, container: str | None) -> EntityInfo | None:
    """Name `node` if it is a Rust entity; `container` is the enclosing entity's kind."""
    kind = node.type
    if kind in _NAMED:
        named = _NAMED[kind]
        if named == "function" and container in ("impl", "trait"):
            named = "method"
        return EntityInfo(named, node_text(node.child_by_field_name("name")))
    if kind in _CONTAINERS:
        named, body_type = _CONTAINERS[kind]
        body = node.child_by_field_name("body")
        return EntityInfo(
            named,
            node_text(node.child_by_field_name("name")),
            body=body if body is not None and body.type == body_type else None,
        )
    if kind == "impl_item":
        return EntityInfo("impl", impl_name(node), body=node.child_by_field_name("body"))
    if kind == "use_declaration":
        return EntityInfo("import", use_key(node))
    if kind == "extern_crate_declaration":
        return EntityInfo("extern crate", node_text(node))
    if kind in ("field_declaration", "enum_variant"):
        return EntityInfo(
            "field" if kind == "field_declaration" else "variant",
            node_text(node.child_by_field_name("name")),
        )
    return None


def impl_name(node: Node) -> str:
    """``Type`` for an inherent impl, ``Trait for Type`` for a trait's (generics kept)."""
    implemented = node_text(node.child_by_field_name("type"))
    trait = node.child_by_field_name("trait")
    negative = any(c.type == "!" for c in node.children)
    if trait is None:
        return implemented
    return f"{'!' if negative else ''}{node_text(trait)} for {implemented}"


def _visibility(node: Node) -> str:
    found = next((c for c in node.children if c.type == "visibility_modifier"), None)
    return f"{node_text(found)} " if found is not None else ""


def use_key(node: Node) -> str:
    """What a ``use`` is known by: its path up to the braces, or its whole path.

    ``use a::b::{c, d}`` is keyed by ``a::b``, so two sides editing that list meet in
    one merge of its names (see `name_list`); ``use a::b::c`` is its own entity, as two
    such lines are two imports.
    """
    argument = node.child_by_field_name("argument")
    if argument is not None and argument.type == "scoped_use_list":
        path = node_text(argument.child_by_field_name("path"))
        return f"{_visibility(node)}{path}::{{...}}"
    return f"{_visibility(node)}{node_text(argument)}"


def name_list(node: Node) -> NameList | None:
    """The names of ``use a::{b, c as d}``; None for a use with no braces."""
    if node.type != "use_declaration":
        return None
    argument = node.child_by_field_name("argument")
    if argument is None or argument.type != "scoped_use_list":
        return None
    listed = argument.child_by_field_name("list")
    if listed is None:
        return None
    items, imported, bound = [], [], []
    for item in listed.named_children:
        if item.type in _COMMENTS:
            return None  # a comment between names: leave the list to the line merge
        items.append((item.start_byte - node.start_byte, item.end_byte - node.start_byte))
        imported.append(node_text(item))
        bound.append(_bound(item))
    if not items:
        return None
    return NameList(tuple(items), tuple(imported), tuple(bound))


def _bound(item: Node) -> str:
    """The name one use-tree item binds, or its text when it binds several or none."""
    if item.type == "use_as_clause":
        return node_text(item.child_by_field_name("alias"))
    if item.type == "scoped_identifier":
        return node_text(item.child_by_field_name("name"))
    return node_text(item)


def use_bindings(node: Node) -> list[tuple[str, str, str]]:
    """(bound name, module path, imported name) for each leaf of a use declaration.

    A glob binds ``* from <path>``; ``self`` in a list binds the module itself.
    """
    argument = node.child_by_field_name("argument")
    found: list[tuple[str, str, str]] = []
    if argument is not None:
        _leaves(argument, "", found)
    return found


def _join(prefix: str, path: str) -> str:
    return f"{prefix}::{path}" if prefix and path else prefix or path


def _split(path: str) -> tuple[str, str]:
    module, _, name = path.rpartition("::")
    return module, name


def _leaves(node: Node, prefix: str, found: list[tuple[str, str, str]]) -> None:
    kind = node.type
    if kind == "scoped_use_list":
        listed = node.child_by_field_name("list")
        if listed is not None:
            _leaves(listed, _join(prefix, node_text(node.child_by_field_name("path"))), found)
    elif kind == "use_list":
        for child in node.named_children:
            _leaves(child, prefix, found)
    elif kind == "use_as_clause":
        module, name = _split(_join(prefix, node_text(node.child_by_field_name("path"))))
        found.append((node_text(node.child_by_field_name("alias")), module, name))
    elif kind == "use_wildcard":
        text = node_text(node)
        glob = _join(prefix, text[:-3] if text.endswith("::*") else "")
        found.append((f"* from {glob}", glob, "*"))
    elif kind == "self":
        module, name = _split(prefix)
        found.append((name, module, name))
    elif kind not in _COMMENTS:
        module, name = _split(_join(prefix, node_text(node)))
        found.append((name, module, name))


def binds(node: Node) -> list[str]:
    """The names a top-level item declares, by namespace, or imports."""
    kind = node.type
    if kind == "use_declaration":
        return [f"import {bound}" for bound, _, _ in use_bindings(node) if bound != "_"]
    if kind in _NAMED or kind in _CONTAINERS:
        named = _NAMED.get(kind) or _CONTAINERS[kind][0]
        return [f"{named} {node_text(node.child_by_field_name('name'))}"]
    return []


SPEC = LanguageSpec(
    name="rust",
    extensions=(".rs",),
    grammar=tree_sitter_rust.language,
    classify=classify,
    attached=frozenset({"line_comment", "block_comment", "attribute_item"}),
    trailing=_COMMENTS,
    name_list=name_list,
    binds=binds,
    keyed_entries=frozenset({("field_initializer", "field_initializer_list")}),
    blank_names=frozenset({"_"}),
)
