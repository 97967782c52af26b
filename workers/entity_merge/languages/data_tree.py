"""A configuration document (JSON, YAML) as the key merge sees it: values with their text.

Each format's reader (:mod:`.json_doc`, :mod:`.yaml_doc`) cuts a text into a tree of
:class:`Node`: a mapping or a sequence holds :class:`Member` pieces (a key with its value,
or one element) and the text between them, so the merge (:mod:`..data_merge`) can rebuild a
container from pieces that each side wrote, and every byte it does not rebuild stays as the
file had it. ``data`` is what a node means, compared with :func:`same` (key order does not
matter; ``1``, ``1.0`` and ``true`` differ).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Document", "Member", "Node", "NotData", "Parts", "same"]


class NotData(Exception):
    """Raised when a text is not a document the key merge can hold (it is then merged by
    lines); the message says why, for the merge result's note."""


Parts = tuple[tuple["Member", ...], tuple[str, ...]]
"""A container's members, and the text around and between them: ``len(members) + 1``
pieces (for JSON the brackets, commas and spacing; for YAML block containers all empty)."""


@dataclass(frozen=True, slots=True)
class Node:
    kind: Literal["map", "seq", "scalar"]
    text: str
    """The value's own text (a YAML block container: whole lines, indentation included)."""
    data: Any
    lead_strip: int = 0
    """Characters to drop from the first member's text: a YAML block container that starts
    mid-line (``- a: 1``) has members written as whole lines, indentation included."""
    contents: Parts = ((), ())
    reader: Callable[[], Parts] | None = None
    """Reads ``contents`` when first asked (JSON): the merge opens only the containers
    whose text differs between the sides, so a large file is not cut up whole."""

    @property
    def members(self) -> tuple[Member, ...]:
        return self._read()[0]

    @property
    def gaps(self) -> tuple[str, ...]:
        return self._read()[1]

    def _read(self) -> Parts:
        if self.reader is not None:
            object.__setattr__(self, "contents", self.reader())
            object.__setattr__(self, "reader", None)
        return self.contents


@dataclass(frozen=True, slots=True)
class Member:
    key: str | None
    """The key in a mapping; ``None`` for a sequence element."""
    text: str
    """The member as written: key and value (JSON ``"k": v``; YAML its lines, with the
    comment and blank lines above it)."""
    at: int
    """Where the value's text starts within ``text``."""
    value: Node


@dataclass(frozen=True, slots=True)
class Document:
    prefix: str
    root: Node
    suffix: str


def same(a: Any, b: Any) -> bool:
    """Whether two values mean the same data: :func:`.toml.canon` equality without building
    either canonical form, and stopping at the first difference (a lock file's two versions
    are compared level by level, so building forms made the merge quadratic in practice)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, tuple):  # YAML scalars: (kind, text)
        return bool(a == b)
    return a is b or repr(a) == repr(b)
