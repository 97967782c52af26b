"""TOML as the merge sees it: a document cut into statements, and arrays cut into elements.

TOML has no tree-sitter grammar here; the standard library's ``tomllib`` says what a text
means, and a small scanner says where each statement and each array element sits, so the
merge (:mod:`..toml_merge`) can combine two sides statement by statement and element by
element while every byte it does not touch stays as the file had it.

A document is a list of sections: the root (the keys before the first header), then one
per ``[table]`` or ``[[array-of-tables]]`` header. A section is its header statement and
its key/value statements. Every statement owns the comment and blank lines directly above
it (so a comment travels with the key it describes); what follows the last statement is
the document's tail. Joining every statement's text and the tail gives the file back,
byte for byte (:func:`parse` refuses a text for which that would not hold).

Identity: a table is known by its dotted path, an array-of-tables entry by its path and
position (the n-th ``[[x]]``), a key by its dotted path inside its section.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from typing import Any

__all__ = [
    "EXTENSIONS",
    "Document",
    "Element",
    "NotToml",
    "Section",
    "Statement",
    "array_of",
    "canon",
    "parse",
    "value_end",
]

EXTENSIONS = (".toml",)


class NotToml(Exception):
    """Raised when a text is not TOML the statement model can hold (the merge then falls
    back to lines)."""


@dataclass(frozen=True, slots=True)
class Statement:
    """One header or key/value statement, with the comment and blank lines above it."""

    key: tuple[str, ...]
    """A key's dotted path within its section; ``()`` for a section's header."""
    lead: str
    """The comment and blank lines directly above it."""
    body: str
    """The statement's own lines (a multi-line array or string spans several)."""
    value: Any = None
    """What ``tomllib`` reads for a key (``None`` for a header)."""

    @property
    def text(self) -> str:
        return self.lead + self.body


@dataclass(frozen=True, slots=True)
class Section:
    """The root, a ``[table]`` or one ``[[array-of-tables]]`` entry, and its statements."""

    key: tuple[Any, ...]
    """``("root",)``, ``("table", path)`` or ``("array", path, n)``."""
    header: Statement | None
    items: tuple[Statement, ...]

    @property
    def text(self) -> str:
        head = self.header.text if self.header is not None else ""
        return head + "".join(item.text for item in self.items)

    def name(self) -> str:
        """How a conflict names it: ``[a.b]``, ``[[a]] #2`` or ``(top level)``."""
        if self.key[0] == "root":
            return "(top level)"
        path = ".".join(self.key[1])
        return f"[{path}]" if self.key[0] == "table" else f"[[{path}]] #{self.key[2] + 1}"


@dataclass(frozen=True, slots=True)
class Document:
    sections: tuple[Section, ...]
    tail: str

    @property
    def text(self) -> str:
        return "".join(s.text for s in self.sections) + self.tail


def parse(text: str) -> Document:
    """Cut ``text`` into sections and statements; :class:`NotToml` when it is not TOML."""
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise NotToml(str(exc)) from exc
    lines = _lines(text)
    sections: list[Section] = []
    key: tuple[Any, ...] = ("root",)
    header: Statement | None = None
    items: list[Statement] = []
    seen: dict[tuple[str, ...], int] = {}
    lead: list[str] = []
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        if not stripped or stripped.startswith("#"):
            lead.append(lines[i])
            i += 1
            continue
        if stripped.startswith("["):
            sections.append(Section(key, header, tuple(items)))
            path, is_array = _header(lines[i])
            if is_array:
                key = ("array", path, seen.get(path, 0))
                seen[path] = seen.get(path, 0) + 1
            else:
                key = ("table", path)
            header, items = Statement((), "".join(lead), lines[i]), []
            lead, i = [], i + 1
            continue
        body, i = _statement(lines, i)
        path, value = _key_value(body)
        items.append(Statement(path, "".join(lead), body, value))
        lead = []
    sections.append(Section(key, header, tuple(items)))
    document = Document(tuple(sections), "".join(lead))
    if document.text != text:  # the model must give the file back exactly
        raise NotToml("the statements do not add up to the file")
    return document


def _lines(text: str) -> list[str]:
    """Split after every ``\\n`` only (``str.splitlines`` also splits at characters a
    TOML string may hold)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _header(line: str) -> tuple[tuple[str, ...], bool]:
    """The dotted path a header line names, and whether it is ``[[…]]``."""
    try:
        node: Any = tomllib.loads(line)
    except tomllib.TOMLDecodeError as exc:
        raise NotToml(f"header {line.strip()!r}: {exc}") from exc
    path: list[str] = []
    while isinstance(node, dict) and len(node) == 1:
        name, node = next(iter(node.items()))
        path.append(name)
        if isinstance(node, list):
            return tuple(path), True
    return tuple(path), False


def _statement(lines: list[str], start: int) -> tuple[str, int]:
    """The lines of the key/value statement starting at ``start``, and the next index."""
    text = "".join(lines[start:])
    equals = _key_end(text)
    end = value_end(text, equals + 1)
    newline = text.find("\n", end)
    stop = len(text) if newline < 0 else newline + 1
    body = text[:stop]
    return body, start + body.count("\n") + (0 if body.endswith("\n") or not body else 1)


def _key_end(text: str) -> int:
    """The index of the ``=`` that ends the key at the start of ``text``."""
    i = 0
    while i < len(text):
        char = text[i]
        if char == "=":
            return i
        if char in "\"'":
            i = _string_end(text, i)
            continue
        if char == "\n":
            break
        i += 1
    raise NotToml(f"no '=' in statement {text.splitlines()[0]!r}")


def _key_value(body: str) -> tuple[tuple[str, ...], Any]:
    """A statement's dotted key path and its value."""
    key_text = body[: _key_end(body)]
    try:
        node: Any = tomllib.loads(key_text + "= 0")
        parsed: Any = tomllib.loads(body)
    except tomllib.TOMLDecodeError as exc:
        raise NotToml(f"statement {body.strip()!r}: {exc}") from exc
    path: list[str] = []
    while isinstance(node, dict):
        name, node = next(iter(node.items()))
        path.append(name)
        parsed = parsed[name]
    return tuple(path), parsed


# -- the scanner -------------------------------------------------------------------------


def _string_end(text: str, i: int) -> int:
    """Just past the string starting at ``text[i]`` (basic, literal, or multi-line)."""
    quote = text[i]
    if text.startswith(quote * 3, i):
        close = text.find(quote * 3, i + 3)
        while close >= 0 and quote == '"' and _escaped(text, close):
            close = text.find(quote * 3, close + 1)
        if close < 0:
            raise NotToml("an unterminated multi-line string")
        end = close + 3
        while end < len(text) and text[end] == quote and end - close < 5:
            end += 1  # up to two quotes may end the content itself
        return end
    j = i + 1
    while j < len(text) and text[j] != quote and text[j] != "\n":
        j += 2 if quote == '"' and text[j] == "\\" else 1
    if j >= len(text) or text[j] != quote:
        raise NotToml("an unterminated string")
    return j + 1


def _escaped(text: str, at: int) -> bool:
    backslashes = 0
    while at - backslashes - 1 >= 0 and text[at - backslashes - 1] == "\\":
        backslashes += 1
    return backslashes % 2 == 1


def _skip_space(text: str, i: int, *, newlines: bool) -> int:
    """Past whitespace (and newlines, when ``newlines``)."""
    while i < len(text) and (text[i] in " \t" or (newlines and text[i] in "\r\n")):
        i += 1
    return i


def _skip_blank(text: str, i: int, *, newlines: bool) -> int:
    """Past whitespace (and, inside an array, newlines and comments)."""
    while i < len(text):
        char = text[i]
        if char in " \t" or (newlines and char in "\r\n"):
            i += 1
        elif newlines and char == "#":
            newline = text.find("\n", i)
            i = len(text) if newline < 0 else newline
        else:
            break
    return i


def value_end(text: str, i: int) -> int:
    """Just past the value that starts at or after ``text[i]``."""
    i = _skip_blank(text, i, newlines=False)
    if i >= len(text):
        raise NotToml("a key with no value")
    char = text[i]
    if char in "\"'":
        return _string_end(text, i)
    if char in "[{":
        close = "]" if char == "[" else "}"
        i = _skip_blank(text, i + 1, newlines=True)
        while i < len(text) and text[i] != close:
            if char == "{":
                i = _key_end(text[i:]) + i + 1
            i = _skip_blank(text, value_end(text, i), newlines=True)
            if i < len(text) and text[i] == ",":
                i = _skip_blank(text, i + 1, newlines=True)
        if i >= len(text):
            raise NotToml(f"an unclosed {char!r}")
        return i + 1
    j = i
    while j < len(text) and text[j] not in ",]}#\r\n":
        j += 1
    while j > i and text[j - 1] in " \t":
        j -= 1
    return j


@dataclass(frozen=True, slots=True)
class Element:
    """One element of an array as written: its text, the comment lines above it and the
    comment after it on its line (both only in a multi-line array)."""

    text: str
    value: Any
    lead: tuple[str, ...] = ()
    comment: str = ""


@dataclass(frozen=True, slots=True)
class ArrayText:
    """Where an array sits in a statement's body, and its elements."""

    open: int
    close: int
    elements: tuple[Element, ...]
    tail: tuple[str, ...]
    """Comment lines after the last element, before ``]``."""

    def multiline(self, body: str) -> bool:
        return "\n" in body[self.open : self.close]


def array_of(body: str) -> ArrayText | None:
    """The array a key/value statement holds as written (``None``: its value is no array,
    or is written in a way the scanner does not follow)."""
    try:
        return _array_of(body)
    except (NotToml, tomllib.TOMLDecodeError, KeyError):
        return None


def _array_of(body: str) -> ArrayText | None:
    start = _skip_blank(body, _key_end(body) + 1, newlines=False)
    if not body.startswith("[", start):
        return None
    close = value_end(body, start) - 1
    elements: list[Element] = []
    pending: list[str] = []
    i = _comments(body, start + 1, pending)
    while i < close:
        end = value_end(body, i)
        text = body[i:end]
        value = tomllib.loads(f"v = {text}")["v"]
        i = _skip_blank(body, end, newlines=False)
        if body.startswith(",", i):
            i = _skip_blank(body, i + 1, newlines=False)
        comment = ""
        if body.startswith("#", i):
            newline = body.find("\n", i)
            comment = body[i : newline if newline >= 0 else len(body)].rstrip()
            i = newline if newline >= 0 else len(body)
        elements.append(Element(text, value, tuple(pending), comment))
        pending = []
        i = _comments(body, i, pending)
    return ArrayText(start, close, tuple(elements), tuple(pending))


def _comments(body: str, i: int, into: list[str]) -> int:
    """Past blank space, collecting each comment line (stripped) into ``into``."""
    while True:
        i = _skip_space(body, i, newlines=True)
        if not body.startswith("#", i):
            return i
        newline = body.find("\n", i)
        into.append(body[i : newline if newline >= 0 else len(body)].rstrip())
        i = newline if newline >= 0 else len(body)


def canon(value: Any) -> Any:
    """A form of a TOML value in which equal means the same TOML (``1``, ``1.0`` and
    ``true`` differ; a table's key order does not matter)."""
    if isinstance(value, dict):
        return ("table", tuple(sorted((k, canon(v)) for k, v in value.items())))
    if isinstance(value, list):
        return ("array", tuple(canon(v) for v in value))
    return (type(value).__name__, repr(value))
