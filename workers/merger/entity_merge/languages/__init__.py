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
    "EntityInfo",
    "LanguageSpec",
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
    rejects: Callable[[Node], bool] | None = None

    def parser(self) -> Parser:
        """A fresh parser for this grammar.

        Parsers cost under a microsecond to make and must not be shared between
        threads, so none is cached; the compiled `Language` is.
        """
        return Parser(_language(self.name))

    def broken(self, root: Node) -> bool:
        """True when a parsed tree has errors under this grammar or its extra rules."""
        return root.has_error or (self.rejects is not None and self.rejects(root))

    def parses(self, data: bytes) -> bool:
        """True when `data` parses without errors under this grammar and its rules."""
        return not self.broken(self.parser().parse(data).root_node)


def node_text(node: Node | None) -> str:
    """The node's source text with runs of whitespace collapsed, for names and keys."""
    if node is None or node.text is None:
        return ""
    return " ".join(node.text.decode("utf-8", errors="replace").split())


def _specs() -> tuple[LanguageSpec, ...]:
    # Imported here so each language module can import EntityInfo from this one.
    from . import ecmascript, go, python

    return (python.SPEC, *ecmascript.SPECS, go.SPEC)


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
