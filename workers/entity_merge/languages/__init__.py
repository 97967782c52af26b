"""Which grammar parses a file, and what counts as an entity in it.

A language is a `LanguageSpec`: a tree-sitter grammar, the file extensions it owns,
and a `classify` function that names the nodes the merge treats as entities. The
merge itself is language-agnostic; adding a language means writing one module with
a classifier and listing it in `_SPECS` below (see docs/merge-driver.md).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache

from tree_sitter import Language, Node, Parser

__all__ = [
    "C_COMMENTS",
    "EntityInfo",
    "LanguageSpec",
    "NameList",
    "language_for_path",
    "node_text",
    "supported_extensions",
]


@dataclass(frozen=True, slots=True)
class EntityInfo:
    """What a classifier says about one node.

    `body` is the node whose children are nested entities (a class body, a Go
    ``import ( … )`` list); None keeps the entity a leaf that is merged by lines.
    `parent` overrides the enclosing container's name, for entities that belong to
    something they are not nested in (a Go method belongs to its receiver type).
    """

    kind: str
    name: str
    body: Node | None = None
    parent: str | None = None


@dataclass(frozen=True, slots=True)
class NameList:
    """The names an import or export statement lists, e.g. ``{ a, b as c }``.

    `items` are the byte spans of each listed name within the statement, in order;
    `imported` and `bound` give, per item, the name it takes from elsewhere and the
    name it binds here (``b`` and ``c`` for ``b as c``). Two sides that each changed
    the list of one statement merge by these names rather than by lines.
    """

    items: tuple[tuple[int, int], ...]
    imported: tuple[str, ...]
    bound: tuple[str, ...]


# The comment node types of grammars with `//` and `/* */` comments (Rust, Java).
C_COMMENTS = frozenset({"line_comment", "block_comment"})

# (node, kind of the enclosing entity or None at top level) -> EntityInfo or None.
# None means "a statement with no name": it still merges as a unit, keyed by its text.
Classifier = Callable[[Node, str | None], EntityInfo | None]


@dataclass(frozen=True, slots=True)
class LanguageSpec:
    """A grammar plus the rules that find entities in its trees."""

    name: str
    extensions: tuple[str, ...]
    grammar: Callable[[], object]
    classify: Classifier
    # Node types glued to the entity directly below them (comments, decorators),
    # so a doc comment travels with its function when either side moves or adds it.
    attached: frozenset[str] = field(default_factory=lambda: frozenset({"comment"}))
    # Node types that may trail code on the same line without making it ambiguous.
    trailing: frozenset[str] = field(default_factory=lambda: frozenset({"comment"}))
    # Rules the grammar is more lenient about than the language (tree-sitter-python
    # accepts a class with an empty body, for one); True means the tree is broken.
    # Checked only within the byte range given (a merge re-checks what it changed).
    rejects: Callable[[Node, int, int | None], bool] | None = None
    # The name list of an import/export statement node, or None if it has none.
    name_list: Callable[[Node], NameList | None] | None = None
    # The names a top-level statement binds: ``import x``, ``def f``, ``export f`` …
    # A clean merge binding one more often than both sides did is refused.
    binds: Callable[[Node], list[str]] | None = None
    # Why a clean merge (base, ours, theirs, merged trees) holds two sides' additions
    # that collide although their keys differ (Java overloads of one new name), or None.
    collides: Callable[[Node, Node, Node, Node], str | None] | None = None
    # The language's own compiler on a clean merge (ours, theirs, merged): why it
    # rejects the merged file while it accepts both sides, or None. For what the
    # grammar recovers from silently (a Python line at an indentation no block has).
    miscompiles: Callable[[bytes, bytes, bytes], str | None] | None = None
    # Whether indentation says which block a line is in (Python), rather than only
    # how it looks (braces): the word merge then keeps an edit off a line the other
    # side moved out of its block.
    blocks_by_indent: bool = False
    # (entry, literal) node types of the literals whose entries are looked up by key,
    # not by place (a dictionary's pairs): two sides each adding entries at one place
    # keep both (see `entries`). Empty: such clashes stay clashes.
    keyed_entries: frozenset[tuple[str, str]] = frozenset()
    # Names that bind nothing, so a file may declare them as often as it likes (Go's
    # `var _ I = (*T)(nil)`, Rust's `const _: () = …`). An entity with one of them is
    # known by its text: two sides adding the same line keep it once, two different
    # ones keep both. Elsewhere `_` is an ordinary name (Python's gettext, lodash).
    blank_names: frozenset[str] = frozenset()

    def parser(self) -> Parser:
        """A fresh parser for this grammar.

        Parsers cost under a microsecond to make and must not be shared between
        threads, so none is cached; the compiled `Language` is.
        """
        return Parser(_language(self.name))

    def broken(self, root: Node, start: int = 0, end: int | None = None) -> bool:
        """True when a parsed tree has errors under this grammar or its extra rules.

        The extra rules are only applied between bytes `start` and `end` (the whole
        tree by default): what lies outside was checked in the tree this one came from.
        """
        return root.has_error or (self.rejects is not None and self.rejects(root, start, end))

    def parses(self, data: bytes) -> bool:
        """True when `data` parses without errors under this grammar and its rules."""
        return not self.broken(self.parser().parse(data).root_node)


def node_text(node: Node | None) -> str:
    """The node's source text with runs of whitespace collapsed, for names and keys."""
    # Node.text copies the bytes out of the source on each call: once is enough.
    raw = node.text if node is not None else None
    if raw is None:
        return ""
    text = raw.decode("utf-8", errors="replace")
    # Most names are identifiers, which hold no whitespace to collapse.
    return text if text.isidentifier() else " ".join(text.split())


def _specs() -> tuple[LanguageSpec, ...]:
    # Imported here so each language module can import EntityInfo from this one.
    from . import ecmascript, go, java, python, rust

    return (python.SPEC, *ecmascript.SPECS, go.SPEC, rust.SPEC, java.SPEC)


@cache
def _by_extension() -> dict[str, LanguageSpec]:
    return {ext: spec for spec in _specs() for ext in spec.extensions}


@cache
def _language(name: str) -> Language:
    spec = next(s for s in _specs() if s.name == name)
    return Language(spec.grammar())


def language_for_path(path: str) -> LanguageSpec | None:
    """The language owning `path`'s extension, or None when no grammar covers it."""
    _, ext = os.path.splitext(path)
    return _by_extension().get(ext.lower())


def supported_extensions() -> tuple[str, ...]:
    """Every extension with an entity-level merge, e.g. ``(".py", ".js", …)``."""
    return tuple(_by_extension())
