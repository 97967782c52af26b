"""JSON as the key merge sees it: the standard library's ``json`` says what a text means, and
a small scanner says where each member and element sits (:mod:`.data_tree`).

A text the scanner would read differently from ``json.loads`` — an object that repeats a key
(``json`` keeps the last silently), ``NaN`` or ``Infinity`` (not JSON, though ``json``
reads them), a comment (JSONC) — is refused, so the merge falls back to lines rather than
merge something it misreads. Each value is read by ``json``'s own decoder, so a value means
exactly what ``json`` says; a container is cut into members only when the merge opens it.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .data_tree import Document, Member, Node, NotData, Parts

__all__ = ["EXTENSIONS", "parse"]

EXTENSIONS = (".json",)
_SPACE = re.compile(r"[ \t\r\n]*")
# The decoder's own string scanner, so a key ends exactly where json's does.
_scan_string: Any = getattr(json.decoder, "scanstring")  # noqa: B009 (untyped in typeshed)


def _no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        repeated = sorted({k for k in keys if keys.count(k) > 1})
        raise NotData(f"an object repeats the key {repeated[0]!r}")
    return dict(pairs)


def _no_constant(name: str) -> Any:
    raise NotData(f"holds {name}, which is not JSON")


# Repeats and constants are refused when the whole text is read, once; members are then
# decoded again, level by level, as the merge opens them.
_DECODER = json.JSONDecoder(parse_constant=_no_constant)


def parse(text: str) -> Document:
    """Cut ``text`` into nodes; :class:`NotData` when it is not JSON the model holds."""
    try:
        meaning = json.loads(text, object_pairs_hook=_no_repeats, parse_constant=_no_constant)
    except ValueError as exc:  # JSONDecodeError is a ValueError
        raise NotData(f"does not parse ({exc})") from exc
    scanner = _Scanner(text)
    start = scanner.skip(0)
    root, end = scanner.value(start, meaning)
    return Document(prefix=text[:start], root=root, suffix=text[end:])


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text

    def skip(self, i: int) -> int:
        match = _SPACE.match(self.text, i)
        return match.end() if match is not None else i

    def fail(self, i: int) -> NotData:
        return NotData(f"unexpected {self.text[i : i + 10]!r} at offset {i}")

    def value(self, i: int, data: Any = None) -> tuple[Node, int]:
        """The value starting at `i` (its data, when already read) and where it ends."""
        try:
            decoded, end = _DECODER.raw_decode(self.text, i)
        except ValueError as exc:
            raise self.fail(i) from exc
        data = decoded if data is None else data
        text = self.text[i:end]
        if isinstance(data, dict):
            return Node(kind="map", text=text, data=data, reader=lambda: self.parts(i, end)), end
        if isinstance(data, list):
            return Node(kind="seq", text=text, data=data, reader=lambda: self.parts(i, end)), end
        return Node(kind="scalar", text=text, data=data), end

    def parts(self, start: int, stop: int) -> Parts:
        """The members of the container at ``text[start:stop]`` and the text around them."""
        text = self.text
        is_map = text[start] == "{"
        i = self.skip(start + 1)
        if i == stop - 1:  # empty: the bracket, then the spacing and the closing bracket
            return (), (text[start : start + 1], text[start + 1 : stop])
        members: list[Member] = []
        gaps: list[str] = []
        last = start
        while True:
            gaps.append(text[last:i] if members else text[start:i])
            key: str | None = None
            at = 0
            if is_map:
                key, after = _scan_string(text, i + 1)
                colon = self.skip(after)
                if text[colon] != ":":
                    raise self.fail(colon)
                at = self.skip(colon + 1) - i
            value, end = self.value(i + at)
            members.append(Member(key=key, text=text[i:end], at=at, value=value))
            last = end
            i = self.skip(end)
            if text[i] == ",":
                i = self.skip(i + 1)
                continue
            if i == stop - 1:
                break
            raise self.fail(i)
        gaps.append(text[last:stop])
        return tuple(members), tuple(gaps)
