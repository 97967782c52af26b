"""JSON as the key merge sees it: the standard library's ``json`` says what a text means, and
a small scanner says where each member and element sits (:mod:`.data_tree`).

A text the scanner reads differently from ``json.loads`` — an object that repeats a key
(``json`` keeps the last silently), ``NaN``, a comment (JSONC) — is refused, so the merge
falls back to lines rather than merge something it misreads.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .data_tree import Document, Member, Node, NotData, same

__all__ = ["EXTENSIONS", "parse"]

EXTENSIONS = (".json",)
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_SPACE = re.compile(r"[ \t\r\n]*")
# The decoder's own string scanner, so a key or string ends exactly where json's does.
_scan_string: Any = getattr(json.decoder, "scanstring")  # noqa: B009 (untyped in typeshed)
_LITERALS = {"true": True, "false": False, "null": None}


def _no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        repeated = sorted({k for k in keys if keys.count(k) > 1})
        raise NotData(f"an object repeats the key {repeated[0]!r}")
    return dict(pairs)


def parse(text: str) -> Document:
    """Cut ``text`` into nodes; :class:`NotData` when it is not JSON the scanner holds."""
    try:
        meaning = json.loads(text, object_pairs_hook=_no_repeats)
    except ValueError as exc:  # JSONDecodeError is a ValueError
        raise NotData(f"does not parse ({exc})") from exc
    scanner = _Scanner(text)
    start = scanner.skip(0)
    root, end = scanner.value(start)
    if scanner.skip(end) != len(text) or not same(root.data, meaning):
        raise NotData("holds something the key merge does not read as json does")
    return Document(prefix=text[:start], root=root, suffix=text[end:])


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text

    def skip(self, i: int) -> int:
        match = _SPACE.match(self.text, i)
        return match.end() if match is not None else i

    def fail(self, i: int) -> NotData:
        return NotData(f"unexpected {self.text[i : i + 10]!r} at offset {i}")

    def value(self, i: int) -> tuple[Node, int]:
        text = self.text
        if i >= len(text):
            raise self.fail(i)
        c = text[i]
        if c in "{[":
            return self.container(i)
        data: Any
        if c == '"':
            data, end = _scan_string(text, i + 1)
        elif match := _NUMBER.match(text, i):
            end = match.end()
            number = match.group()
            data = int(number) if number.lstrip("-").isdigit() else float(number)
        else:
            word = next((w for w in _LITERALS if text.startswith(w, i)), None)
            if word is None:
                raise self.fail(i)
            end = i + len(word)
            data = _LITERALS[word]
        return Node(kind="scalar", text=text[i:end], data=data), end

    def container(self, start: int) -> tuple[Node, int]:
        text = self.text
        is_map = text[start] == "{"
        close = "}" if is_map else "]"
        members: list[Member] = []
        gaps: list[str] = []
        last = start + 1  # where the text since the previous member starts
        i = self.skip(start + 1)
        if i < len(text) and text[i] == close:
            node_text = text[start : i + 1]
            gaps = [text[start : start + 1], text[start + 1 : i + 1]]
            empty = Node(kind="map", text=node_text, data={}, gaps=tuple(gaps))
            if not is_map:
                empty = Node(kind="seq", text=node_text, data=[], gaps=tuple(gaps))
            return empty, i + 1
        while True:
            gaps.append(text[last if members else start : i])
            key: str | None = None
            at = 0
            if is_map:
                if i >= len(text) or text[i] != '"':
                    raise self.fail(i)
                key, after = _scan_string(text, i + 1)
                colon = self.skip(after)
                if colon >= len(text) or text[colon] != ":":
                    raise self.fail(colon)
                at = self.skip(colon + 1) - i
            value, end = self.value(i + at)
            members.append(Member(key=key, text=text[i:end], at=at, value=value))
            last = end
            i = self.skip(end)
            if i < len(text) and text[i] == ",":
                i = self.skip(i + 1)
                continue
            if i < len(text) and text[i] == close:
                break
            raise self.fail(i)
        gaps.append(text[last : i + 1])
        data: Any = [m.value.data for m in members]
        if is_map:
            data = {m.key: m.value.data for m in members}
        node = Node(
            kind="map" if is_map else "seq",
            text=text[start : i + 1],
            data=data,
            members=tuple(members),
            gaps=tuple(gaps),
        )
        return node, i + 1
