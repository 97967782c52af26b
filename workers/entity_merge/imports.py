"""A file's imports and exports as a map of names, and the check a merge must pass.

Text merges of import statements go wrong in ways a parser does not notice: one side
splits ``from m import a, b`` while the other renames ``b``, and both statements
survive; one side drops a module and the other adds a name to it, and the merge imports
from a module that is gone. Seen as what they are, a file's imports are a map from each
name they bind to where it comes from (module, imported name). That map merges
three-way, name by name: a name one side changed takes that side's value; a name both
sides changed differently is a conflict. `import_fault` compares the clean merge's map
with that three-way merge and says why it must not be written, if it differs. Two more
rules guard what the map cannot: a module one side stopped importing altogether is never
imported by the merge, and a name one side stopped importing while the other side uses
it more than the base did is a conflict.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter, defaultdict
from collections.abc import Iterator

from tree_sitter import Node

from .languages import LanguageSpec, java, node_text, rust

__all__ = ["CLASH", "ImportMap", "import_fault", "import_map", "merged_value", "statements"]

# name bound -> sorted (module, imported name) pairs binding it (twice if imported twice)
ImportMap = dict[str, tuple[tuple[str, str], ...]]

# Python statements whose blocks still run at import time: imports guarded by a
# `try`/`except ImportError` or an `if` are the module's imports too.
_PY_BLOCKS = frozenset(
    {
        "try_statement",
        "except_clause",
        "else_clause",
        "finally_clause",
        "if_statement",
        "elif_clause",
        "block",
        "with_statement",
    }
)


def _unquote(node: Node | None) -> str:
    return node_text(node).strip("'\"`")


def _python(node: Node) -> Iterator[tuple[str, str, str, Node]]:
    """(bound name, module, imported name, statement) for Python's module-level imports."""
    for child in node.named_children:
        if child.type in _PY_BLOCKS:
            yield from _python(child)
        elif child.type in ("import_from_statement", "future_import_statement"):
            module = node_text(child.child_by_field_name("module_name")) or "__future__"
            names = child.children_by_field_name("name")
            if not names:  # `from m import *`
                yield f"* from {module}", module, "*", child
            for name in names:
                if name.type == "aliased_import":
                    imported = node_text(name.child_by_field_name("name"))
                    yield node_text(name.child_by_field_name("alias")), module, imported, child
                else:
                    yield node_text(name), module, node_text(name), child
        elif child.type == "import_statement":
            for name in child.children_by_field_name("name"):
                if name.type == "aliased_import":
                    module = node_text(name.child_by_field_name("name"))
                    yield node_text(name.child_by_field_name("alias")), module, "*", child
                else:
                    # `import a.b` binds `a`, but two such lines are two modules.
                    yield node_text(name), node_text(name), "*", child


def _ecmascript(root: Node) -> Iterator[tuple[str, str, str, Node]]:
    """The same for a JavaScript or TypeScript module's top-level imports and exports."""
    for child in root.named_children:
        source = _unquote(child.child_by_field_name("source"))
        if child.type == "import_statement":
            yield from _es_import(child, source)
        elif child.type == "export_statement" and child.child_by_field_name("declaration") is None:
            clause = next((c for c in child.named_children if c.type == "export_clause"), None)
            if clause is None:
                # `export * from 'm'` re-exports a module; `export default x` is code.
                if source:
                    yield f"export {node_text(child)}", source, "*", child
                continue
            for spec in clause.named_children:
                if spec.type != "export_specifier":
                    continue
                name = node_text(spec.child_by_field_name("name"))
                alias = node_text(spec.child_by_field_name("alias")) or name
                yield f"export {alias}", source, name, child


def _es_import(node: Node, source: str) -> Iterator[tuple[str, str, str, Node]]:
    clause = next((c for c in node.named_children if c.type == "import_clause"), None)
    if clause is None:
        require = next((c for c in node.named_children if c.type == "import_require_clause"), None)
        if require is not None:  # TypeScript's `import x = require('m')`
            name = require.named_children[0] if require.named_children else None
            module = _unquote(require.child_by_field_name("source"))
            yield node_text(name), module, "*", node
        else:  # `import 'm'` binds nothing but still loads the module
            yield f"import {source}", source, "", node
        return
    for part in clause.named_children:
        if part.type == "identifier":
            yield node_text(part), source, "default", node
        elif part.type == "namespace_import" and part.named_children:
            yield node_text(part.named_children[-1]), source, "*", node
        elif part.type == "named_imports":
            for spec in part.named_children:
                if spec.type != "import_specifier":
                    continue
                imported = node_text(spec.child_by_field_name("name"))
                alias = node_text(spec.child_by_field_name("alias")) or imported
                yield alias, source, imported, node


def _go(root: Node) -> Iterator[tuple[str, str, str, Node]]:
    """The same for a Go file's import specs."""
    stack = [c for c in root.named_children if c.type == "import_declaration"]
    while stack:
        current = stack.pop()
        if current.type == "import_spec":
            # Keyed by path: the name a package binds is only a guess from its path
            # (`go-version` binds `version`), and an alias is an edit of the same import.
            path = _unquote(current.child_by_field_name("path"))
            yield path, path, node_text(current.child_by_field_name("name")), current
        else:
            stack.extend(current.named_children)


def _rust(root: Node) -> Iterator[tuple[str, str, str, Node]]:
    """The same for a Rust file's top-level ``use`` declarations, leaf by leaf."""
    for child in root.named_children:
        if child.type == "use_declaration":
            for bound, module, imported in rust.use_bindings(child):
                yield bound, module, imported, child


def _java(root: Node) -> Iterator[tuple[str, str, str, Node]]:
    """The same for a Java file's imports: a simple name from a package (or class)."""
    for child in root.named_children:
        if child.type == "import_declaration":
            yield (*java.import_binding(child), child)


_READERS = {"python": _python, "go": _go, "rust": _rust, "java": _java}


def statements(spec: LanguageSpec, root: Node) -> Iterator[tuple[str, str, str, Node]]:
    """(bound name, module, imported name, statement) for each name the file imports."""
    return _entries(spec, root)


def _entries(spec: LanguageSpec, root: Node) -> Iterator[tuple[str, str, str, Node]]:
    if spec.name in _READERS:
        return _READERS[spec.name](root)
    if spec.name in ("javascript", "typescript", "tsx"):
        return _ecmascript(root)
    return iter(())  # a language without a reader here: its imports are not checked


def import_map(spec: LanguageSpec, root: Node) -> tuple[ImportMap, list[tuple[int, int]]]:
    """The file's import map and the byte spans of the statements it was read from."""
    found: defaultdict[str, list[tuple[str, str]]] = defaultdict(list)
    spans: dict[tuple[int, int], None] = {}
    for bound, module, imported, statement in _entries(spec, root):
        found[bound].append((module, imported))
        spans[(statement.start_byte, statement.end_byte)] = None
    return {name: tuple(sorted(pairs)) for name, pairs in found.items()}, list(spans)


def _modules(imports: ImportMap) -> set[str]:
    # An `export { a }` with no `from` reads a local name, not a module.
    return {module for pairs in imports.values() for module, _ in pairs if module}


def _by_source(imports: ImportMap) -> dict[tuple[str, str], set[str]]:
    found: defaultdict[tuple[str, str], set[str]] = defaultdict(set)
    for name, pairs in imports.items():
        for pair in pairs:
            found[pair].add(name)
    return found


def _unguarded(spec: LanguageSpec, root: Node) -> set[str]:
    """Modules the file imports at least once outside a ``try`` (Python)."""
    found = set()
    for _, module, _, statement in _entries(spec, root):
        parent = statement.parent
        while parent is not None and parent.type != "try_statement":
            parent = parent.parent
        if parent is None:
            found.add(module)
    return found


def _newly_guarded(spec: LanguageSpec, roots: tuple[Node, Node, Node, Node]) -> str | None:
    """A module a side moved into a ``try`` that the merge still imports unguarded.

    The side wrapped it because the module may be missing; an unguarded import of it,
    kept from the other side's edit, would fail where the fallback was meant to work.
    """
    if spec.name != "python":
        return None
    base, ours, theirs, merged = (_unguarded(spec, root) for root in roots)
    for side, root in ((ours, roots[1]), (theirs, roots[2])):
        imported = {module for _, module, _, _ in _entries(spec, root)}
        for module in sorted((imported - side) & base & merged):
            return module
    return None


def _rebound(b: ImportMap, o: ImportMap, t: ImportMap) -> tuple[str, str] | None:
    """A (module, name) both sides bind under new, different names (``b as c``/``b as d``)."""
    base, ours, theirs = _by_source(b), _by_source(o), _by_source(t)
    for source in sorted(base.keys() & ours.keys() & theirs.keys()):
        was, mine, yours = base[source], ours[source], theirs[source]
        # A rename drops a base binding and adds a new one; additions alone are not.
        if was - mine and was - yours and mine - was and yours - was and mine != yours:
            return source[1], source[0]
    return None


def _rebound_dropped(b: ImportMap, o: ImportMap, t: ImportMap) -> tuple[str, str] | None:
    """A (module, name) one side binds under a new name and the other stopped importing.

    Renaming the binding (``LintContext`` to ``LintContext as _``) is an edit of the
    import; the name map sees a new name, which no deletion touches, so the import the
    other side removed would come back under it: a modify/delete, for people to settle.
    """
    base, ours, theirs = _by_source(b), _by_source(o), _by_source(t)
    for source in sorted(base):
        for kept, other in ((ours, theirs), (theirs, ours)):
            was, now = base[source], kept.get(source, set())
            if source not in other and was - now and now - was:
                return source
    return None


def _local(spec: LanguageSpec, module: str, path: str) -> bool:
    """Whether `module` may be one of the project's own, which a side could delete.

    A relative import always is; a Python module whose top package is a folder on the
    file's own path is too. A standard or third-party one (``typing``, ``react``) is not
    deleted by a change to one repository's files.
    """
    if module.startswith("."):
        return True
    if spec.name == "python":
        return module.split(".")[0] in path.replace("\\", "/").split("/")[:-1]
    if spec.name == "rust":
        return module.split("::")[0] in ("crate", "super", "self")
    # A Go path or a Java package does not say which module it belongs to.
    return spec.name in ("go", "java")


def _names(imports: ImportMap, module: str) -> set[tuple[str, str]]:
    return {(name, i) for name, pairs in imports.items() for mod, i in pairs if mod == module}


def _go_name(path: str, alias: str) -> str:
    """The name a Go import is used by: its alias, else its path's last element, cleaned."""
    if alias:
        return alias
    parts = path.split("/")
    last = parts[-1] if not re.fullmatch(r"v[0-9]+", parts[-1]) or len(parts) < 2 else parts[-2]
    return re.sub(r"[^\w]", "", re.sub(r"^go-|[.-]go$|\.v[0-9]+$", "", last))


def _identifiers(root: Node, spans: list[tuple[int, int]]) -> Counter[bytes]:
    """How often each identifier occurs in the tree outside its import statements.

    Identifiers only: a word in a string or a comment is not a use. One walk per tree,
    however many names are asked about, so a file dropping thousands of imports costs
    one pass, not one per name.
    """
    counts: Counter[bytes] = Counter()
    # Spans are syntax nodes' ranges, so nested or apart: the outermost ones, sorted,
    # answer "inside an import?" by one bisection (a file with thousands of imports
    # made a look through all of them per node take half a second).
    outer: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if outer and start < outer[-1][1]:
            outer[-1] = (outer[-1][0], max(outer[-1][1], end))
        else:
            outer.append((start, end))
    starts = [start for start, _ in outer]
    stack = [root]
    while stack:
        node = stack.pop()
        at = bisect_right(starts, node.start_byte) - 1
        if at >= 0 and node.end_byte <= outer[at][1]:
            continue
        if node.child_count == 0:
            if node.type.endswith("identifier") and node.text:
                counts[node.text] += 1
        else:
            stack.extend(node.children)
    return counts


_Value = tuple[tuple[str, str], ...] | None
# What `merged_value` returns when both sides changed one name's import differently.
CLASH: tuple[tuple[str, str], ...] = (("", ""),)


def merged_value(base: _Value, ours: _Value, theirs: _Value) -> _Value:
    """Where the merge should import one name from, or `CLASH` if the sides disagree."""
    if ours == theirs or theirs == base:
        return ours
    if ours == base:
        return theirs
    if ours is None or theirs is None:
        return None  # one side moved or edited what the other stopped importing
    return CLASH


def import_fault(
    spec: LanguageSpec, roots: tuple[Node, Node, Node, Node], path: str = ""
) -> str | None:
    """Why the merged file's imports are not the three-way merge of the sides', or None.

    `roots` are the trees of base, ours, theirs and, last, the merged file; `path` the
    file's, which tells the project's own modules (that a side may have deleted).
    """
    (b, b_spans), (o, o_spans), (t, t_spans), (m, _) = (import_map(spec, r) for r in roots)
    spans = (b_spans, o_spans, t_spans)
    counted: dict[tuple[str, int], Counter[bytes]] = {}

    looks = [0]

    def grew(version: int, word: bytes) -> bool:
        """A cheap first look: does the text (strings and comments too) hold `word` more?

        One search per name while there are few; past a handful, every word of both
        texts is counted once, so thousands of dropped names cost two passes.
        """
        looks[0] += 1
        if looks[0] <= 16:
            found = re.compile(rb"(?<![\w$])" + re.escape(word) + rb"(?![\w$])")
            return len(found.findall(roots[version].text or b"")) > len(
                found.findall(roots[0].text or b"")
            )
        for v in (0, version):
            if ("words", v) not in counted:
                counted[("words", v)] = Counter(re.findall(rb"[\w$]+", roots[v].text or b""))
        return counted[("words", version)][word] > counted[("words", 0)][word]

    def uses(version: int) -> Counter[bytes]:
        if ("uses", version) not in counted:
            counted[("uses", version)] = _identifiers(roots[version], spans[version])
        return counted[("uses", version)]

    for name in sorted(b.keys() | o.keys() | t.keys() | m.keys()):
        base, ours, theirs = b.get(name), o.get(name), t.get(name)
        expected = merged_value(base, ours, theirs)
        if expected is CLASH:
            return f"imports {name}, whose import both sides changed differently"
        if m.get(name) != expected:
            return f"imports {name} otherwise than both sides' changes say"
        if base is not None and expected is None:
            # One side dropped the name; the other, which kept it, must not use it more.
            keeper = 1 if ours is not None else 2 if theirs is not None else 0
            used = _go_name(name, base[0][1]) if spec.name == "go" else name
            if spec.name == "go" and any(
                _go_name(path, pairs[0][1]) == used for path, pairs in m.items()
            ):
                continue  # another import (the package at a new path) binds the name
            word = used.encode()
            if (
                keeper
                and grew(keeper, word)  # the walk below only when the text grew
                and uses(keeper)[word] > uses(0)[word]
            ):
                user = "ours" if keeper == 1 else "theirs"
                return f"drops the import of {name}, which {user} newly uses"
    guarded = _newly_guarded(spec, roots)
    if guarded is not None:
        return f"imports from {guarded} outside the try/except one side put around its import"
    rebound = _rebound(b, o, t)
    if rebound is not None:
        source, imported = rebound[1] or "a local", rebound[0]
        return f"binds {source} {imported!r}, which both sides renamed differently"
    dropped = _rebound_dropped(b, o, t)
    if dropped is not None:
        module = dropped[0] or "a local"
        return f"binds {dropped[1]!r} of {module} anew on one side; the other side dropped it"
    for dropper, other in ((o, t), (t, o)):
        # A module `dropper` stopped importing (with it, maybe, deleted) while `other`
        # kept its import of it and added names: those names may come from nowhere now.
        for module in sorted((_modules(b) - _modules(dropper)) & _modules(m)):
            if _names(b, module) & _names(other, module) and _local(spec, module, path):
                return f"imports from {module}, which one side no longer imports"
    return None
