"""YAML as the key merge sees it, on the tree-sitter YAML grammar (:mod:`.data_tree`).

Block mappings and block sequences are containers; a member is whole lines: the comment and
blank lines above a key or ``-`` element, then its own lines (its value, nested containers
included). So a comment travels with the key below it, and joining members in any order
gives lines back. Everything else — a scalar, a block scalar (``|``, ``>``), a flow
collection (``[a, b]``, ``{a: 1}``) — is one value, compared by its text: two spellings of
one value (``"x"`` and ``x``) count as different, which can only make a conflict, never a
wrong merge.

What the model would misread is refused, and the file is merged by lines: anchors and
aliases (a value shared between keys), tags, directives, explicit ``?`` keys, a key written
twice, several documents in one file, and anything the grammar flags as an error.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import tree_sitter_yaml
from tree_sitter import Language, Parser, Query, QueryCursor
from tree_sitter import Node as TSNode

from .data_tree import Document, Member, Node, NotData

__all__ = ["EXTENSIONS", "parse"]

EXTENSIONS = (".yaml", ".yml")
_REFUSED = {
    "anchor": "an anchor",
    "alias": "an alias",
    "tag": "a tag",
    "yaml_directive": "a directive",
    "tag_directive": "a directive",
    "reserved_directive": "a directive",
    "?": "an explicit '?' key",
}
_ITEMS = ("block_mapping_pair", "block_sequence_item")
_BLOCKS = {"block_node", "block_mapping", "block_sequence", *_ITEMS}


@cache
def _parser() -> Parser:
    return Parser(Language(tree_sitter_yaml.language()))


def parse(text: str) -> Document:
    """Cut ``text`` into nodes; :class:`NotData` when the model cannot hold it."""
    data = text.encode("utf-8")
    tree = _parser().parse(data)
    if tree.root_node.has_error:
        raise NotData("does not parse")
    _refuse(tree.root_node)
    documents = [c for c in tree.root_node.children if c.type == "document"]
    if len(documents) != 1:
        raise NotData(f"holds {len(documents)} documents (the key merge takes exactly one)")
    values = [c for c in documents[0].children if c.type in ("block_node", "flow_node")]
    if len(values) != 1:
        raise NotData("its document holds no value")
    reader = _Reader(data)
    root, start, end = reader.value(values[0])
    return Document(prefix=reader.decode(0, start), root=root, suffix=reader.decode(end, len(data)))


def _refuse(root: TSNode) -> None:
    found = QueryCursor(_refused()).captures(root).get("refused", [])
    if found:
        first = min(found, key=lambda n: n.start_byte)
        line = first.start_point.row + 1
        raise NotData(
            f"uses {_REFUSED[first.type]} at line {line}, which the key merge does not follow"
        )


@cache
def _refused() -> Query:
    kinds = " ".join(f'"{k}"' if k == "?" else f"({k})" for k in _REFUSED)
    return Query(Language(tree_sitter_yaml.language()), f"[{kinds}] @refused")


def _content_end(node: TSNode) -> int:
    """Where a node's last non-comment token ends (trailing comments belong to what follows).

    Walks back from the last child only: listing every child of a large mapping at every
    level made reading a lock-file-sized document quadratic."""
    while node.type in _BLOCKS and node.child_count:
        last: TSNode | None = node.child(node.child_count - 1)
        while last is not None and last.type == "comment":
            last = last.prev_sibling
        if last is None:
            break
        node = last
    return node.end_byte


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def decode(self, start: int, end: int) -> str:
        return self.data[start:end].decode("utf-8")

    def eol(self, at: int) -> int:
        """The end of the line `at` is on, newline included."""
        if at > 0 and self.data[at - 1 : at] == b"\n":
            return at
        newline = self.data.find(b"\n", at)
        return len(self.data) if newline < 0 else newline + 1

    def value(self, node: TSNode) -> tuple[Node, int, int]:
        """A value node, with the byte span its text covers."""
        inner = next((c for c in node.children if c.type != "comment"), None)
        if (
            node.type == "block_node"
            and inner is not None
            and inner.type in ("block_mapping", "block_sequence")
        ):
            return self.container(inner)
        text = self.decode(node.start_byte, node.end_byte)
        kind = inner.type if inner is not None else node.type
        data: Any
        if kind in ("flow_mapping", "flow_sequence"):
            data = ("yaml-flow", " ".join(text.split()))
        elif kind == "block_scalar" and "+" not in text.split("\n", 1)[0]:
            # The grammar ends a block scalar at the file's end after its newline, elsewhere
            # before it; without keep chomping (``|+``) trailing newlines mean nothing.
            data = ("yaml", kind, text.rstrip("\r\n"))
        else:
            data = ("yaml", kind, text)
        return Node(kind="scalar", text=text, data=data), node.start_byte, node.end_byte

    def container(self, node: TSNode) -> tuple[Node, int, int]:
        items = [c for c in node.children if c.type in _ITEMS]
        line_start = self.data.rfind(b"\n", 0, items[0].start_byte) + 1
        indent = self.data[line_start : items[0].start_byte]
        inline = indent.strip(b" ") != b""  # the first item shares its line (``- a: 1``)
        start = items[0].start_byte if inline else line_start
        pad = " " * len(indent) if inline else ""
        members: list[Member] = []
        pos = start
        for n, item in enumerate(items):
            end = self.eol(_content_end(item))
            key, value, value_start = self.item(item, end)
            lead = pad if n == 0 else ""
            at = len(lead) + len(self.decode(pos, value_start))
            members.append(Member(key=key, text=lead + self.decode(pos, end), at=at, value=value))
            pos = end
        keys = [m.key for m in members]
        data: Any
        if node.type == "block_mapping":
            if len(set(keys)) != len(keys):
                twice = next(k for k in keys if keys.count(k) > 1)
                raise NotData(f"writes the key {twice!r} twice")
            data = {m.key: m.value.data for m in members}
        else:
            data = [m.value.data for m in members]
        result = Node(
            kind="map" if node.type == "block_mapping" else "seq",
            text=self.decode(start, pos),
            data=data,
            contents=(tuple(members), ("",) * (len(members) + 1)),
            lead_strip=len(pad),
        )
        return result, start, pos

    def item(self, item: TSNode, end: int) -> tuple[str | None, Node, int]:
        """A pair's key (``None`` for an element), its value and where the value starts."""
        if item.type == "block_sequence_item":
            key, found = (
                None,
                next((c for c in item.children if c.type in ("block_node", "flow_node")), None),
            )
        else:
            key_node, found = item.child_by_field_name("key"), item.child_by_field_name("value")
            key = self.key(key_node)
        if found is None:  # ``key:`` or ``-`` alone: null
            at = _content_end(item)
            return key, Node(kind="scalar", text="", data=("yaml", "null", "")), at
        value, value_start, _ = self.value(found)
        return key, value, value_start

    def key(self, node: TSNode | None) -> str:
        inner = node.children[0] if node is not None and node.children else None
        if node is None or inner is None or node.type != "flow_node":
            raise NotData("has a key that is not a plain or quoted scalar")
        text = self.decode(node.start_byte, node.end_byte)
        if inner.type == "plain_scalar":
            return text
        if inner.type == "single_quote_scalar":
            return text[1:-1].replace("''", "'")
        if inner.type == "double_quote_scalar":
            try:
                decoded = json.loads(text)
            except ValueError:
                raise NotData(f"has a quoted key the key merge cannot read: {text}") from None
            return str(decoded)
        raise NotData(f"has a key that is not a plain or quoted scalar: {text}")
