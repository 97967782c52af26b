"""The bounds every message on the log must respect, and how an error shows a bad value.

Anyone who can publish on ``loop.>`` can put any bytes there, and every daemon decodes
them. So decoding checks what msgspec alone would not: the size of the whole message, how
deeply it nests (msgspec recurses, and a few thousand levels raise ``RecursionError``), and
the length of each string. An error names the offending value once, cut to
:data:`SHOWN_CHARS`, so a reason stays small whatever the message held.
"""

import re
import reprlib
from collections.abc import Iterator
from itertools import accumulate
from typing import Any

MAX_EVENT_BYTES = 1024 * 1024
"""A whole message: nats-server's default ``max_payload``, so nothing larger is publishable."""

MAX_DEPTH = 64
"""Nesting of objects and arrays, the event itself counting as one. Every kind's own
structure needs at most four levels; the rest is room for free-form ``evidence``."""

MAX_TEXT_CHARS = 64 * 1024
"""Any one string (or object key). Producers cut logs and diffs far below this."""

SHOWN_CHARS = 200
"""How much of an offending value an error reason shows."""

MAX_REASON_CHARS = 1000
"""The longest reason an :class:`~schemas.errors.InvalidEvent` carries."""

MAX_FIELD_CHARS = 300
"""The longest field path an error names (paths into deep ``evidence`` grow long)."""

_repr = reprlib.Repr()
_repr.maxstring = SHOWN_CHARS
_repr.maxother = SHOWN_CHARS
_repr.maxlevel = 3
_repr.maxlist = _repr.maxtuple = _repr.maxdict = _repr.maxset = 8

# A JSON string (escapes included), so that brackets inside strings do not count as nesting.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = tuple(1 if b in b"[{" else -1 if b in b"]}" else 0 for b in range(256))


def shown(value: object) -> str:
    """``value`` as an error shows it: a bounded repr, with the length of a long string."""
    text = _repr.repr(value)
    if len(text) > SHOWN_CHARS:
        text = text[: SHOWN_CHARS - 1] + "…"
    if isinstance(value, str | bytes) and len(value) > SHOWN_CHARS:
        text += f" ({len(value)} chars)"
    return text


def bounded(text: str, limit: int = MAX_REASON_CHARS) -> str:
    """``text`` cut to ``limit`` characters, marked when it was cut."""
    if len(text) <= limit:
        return text
    return text[: limit - 1] + "…"


def oversize(data: bytes) -> str | None:
    """Why ``data`` is refused before decoding (too large, nested too deeply), or ``None``.

    Cheap for every ordinary message: the depth scan only runs when the message has more
    opening brackets than :data:`MAX_DEPTH`, and then it runs in C (a regex and
    ``itertools``), never a Python loop per byte.
    """
    if len(data) > MAX_EVENT_BYTES:
        return (
            f"the message is {len(data)} bytes, over the {MAX_EVENT_BYTES} byte limit; "
            "put large content in an artefact and reference it"
        )
    if data.count(b"{") + data.count(b"[") <= MAX_DEPTH:
        return None
    brackets = _STRING.sub(b"", bytes(data)).translate(None, _NOT_BRACKETS)
    depth = max(accumulate(map(_STEP.__getitem__, brackets)), default=0)
    if depth > MAX_DEPTH:
        return f"the message nests {depth} levels deep, over the {MAX_DEPTH} level limit"
    return None


def long_text(doc: Any) -> tuple[str, str] | None:
    """(path, string) of the first string or key in ``doc`` longer than the text limit."""
    for path, text in _strings(doc, "$"):
        if len(text) > MAX_TEXT_CHARS:
            return path, text
    return None


def _strings(doc: Any, root: str) -> Iterator[tuple[str, str]]:
    # Iterative: the document already passed the depth bound, but a walk that recursed
    # would still be one more place a crafted message could reach the recursion limit.
    stack: list[tuple[str, Any]] = [(root, doc)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, str):
            yield path, node
        elif isinstance(node, dict):
            for key, value in node.items():
                child = f"{path}.{key}" if len(key) <= SHOWN_CHARS else f"{path}.<key>"
                yield child, key
                stack.append((child, value))
        elif isinstance(node, list):
            stack.extend((f"{path}[{i}]", value) for i, value in enumerate(node))
