"""Which entity of one version is which entity of another, and in what order they go.

Matching is by key (kind, owner, name, occurrence), repaired where keys mislead:
repeats of one name are paired by content, and an entity that vanished is paired
with a look-alike that appeared in its place (an edit of an unnamed statement, a
rename). The order the matched entities go in is `ordering`'s.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from dataclasses import replace

from .entities import Entity, Key
from .line_merge import split_lines

__all__ = [
    "align_repeats",
    "pair_additions",
    "rematch",
    "replacements",
    "similarity",
]


# Entity kinds a file may repeat for one name (one module imported in two statements).
_REPEATABLE = frozenset({"import", "export"})


def align_repeats(
    base: tuple[Entity, ...], side: tuple[Entity, ...], *, blank_names: frozenset[str]
) -> tuple[Entity, ...]:
    """Match entities that share kind, owner and name by content, not by position.

    Extraction numbers repeats (overloads, Go `init` functions) in order, so a side
    adding one in front would shift every number after it and pair each repeat with
    its neighbour. Here the side's repeats are aligned with the base's by their text:
    equal texts pair up, unpaired ones between them pair in order (edits), and those
    left over are additions, keyed by their text so that two sides adding different
    ones both keep theirs while two identical additions collapse into one.
    `blank_names` are the language's names that bind nothing (`LanguageSpec`).
    """
    groups: dict[tuple[str, str, str], list[int]] = {}
    for i, e in enumerate(side):
        groups.setdefault((e.kind, e.owner, e.name), []).append(i)
    base_groups: dict[tuple[str, str, str], list[Entity]] = {}
    for e in base:
        base_groups.setdefault((e.kind, e.owner, e.name), []).append(e)
    result = list(side)
    for ident, positions in groups.items():
        originals = base_groups.get(ident, [])
        # One of a kind in base and side: paired by key as is. But a file may import
        # from one module in several statements, and declare a name that binds nothing
        # as often as it likes, so a side adding one of those where the base had none
        # is keyed by its text too, or it would not meet the other side's same one when
        # that side added two.
        single = len(positions) < 2 and len(originals) < 2
        repeatable = ident[0] in _REPEATABLE or ident[2] in blank_names
        if single and (originals or not repeatable):
            continue
        texts = [side[p].text for p in positions]
        matcher = difflib.SequenceMatcher(None, [e.text for e in originals], texts, autojunk=False)
        added: dict[str, int] = {}
        for tag, b0, b1, s0, s1 in matcher.get_opcodes():
            paired = 0 if tag == "insert" else min(b1 - b0, s1 - s0)
            for offset in range(s1 - s0):
                p = positions[s0 + offset]
                if offset < paired:
                    occurrence: int | str = originals[b0 + offset].occurrence
                else:
                    text = side[p].text.decode("utf-8", errors="replace")
                    seen = added.get(text, 0)
                    added[text] = seen + 1
                    occurrence = f"added {seen}: {text}"
                result[p] = replace(side[p], occurrence=occurrence)
    return tuple(result)


# How alike an added entity must be to one the same side deleted from the same place
# to count as that entity renamed or edited beyond recognition by key.
_RENAME_SIMILARITY = 0.6
# Entities of at most this many lines are compared character by character: one line
# (an import moved to another module, a version bumped) is all or nothing by lines.
_SHORT = 3
# Look-alikes scoring within this of the best one are as good a match as it (about one
# character in sixty of a short text).
_TIE = 0.03


def similarity(old: bytes, new: bytes, *, at_least: float = 0.0) -> float:
    """How alike two entity texts are, from 0 to 1.

    Short texts: difflib's ratio over characters. Longer ones: the share of lines the
    two have in common, counted as multisets (difflib's `quick_ratio` over lines),
    which ignores order but costs one pass instead of difflib's quadratic search.

    With `at_least`, short texts whose characters, counted as multisets, already fall
    short of it skip difflib's search, and that count's score (an upper bound of
    difflib's ratio, so also below `at_least`) comes back instead. A score that reaches
    `at_least` is always the full one. Callers that only compare with a threshold pass
    it; about half of their short pairs end at the bound.
    """
    a, b = split_lines(old), split_lines(new)
    if len(a) <= _SHORT and len(b) <= _SHORT:
        x, y = old.strip(), new.strip()
        if at_least and x and y:
            bound = 2 * sum((Counter(x) & Counter(y)).values()) / (len(x) + len(y))
            if bound < at_least:
                return bound
        return difflib.SequenceMatcher(None, x, y, autojunk=False).ratio()
    shared = sum((Counter(a) & Counter(b)).values())
    return 2 * shared / (len(a) + len(b))


def _likeness_type(old: Entity, new: Entity) -> bool:
    return old.anonymous and new.anonymous and old.node_type == new.node_type


def _likeness(old: Entity, new: Entity) -> float | None:
    """How alike `new`, found where `old` was, is to `old`, or None if it cannot be `old`."""
    if old.anonymous or new.anonymous:
        if old.anonymous and new.anonymous and old.node_type == new.node_type:
            return similarity(old.text, new.text)
        return None
    if (old.kind, old.owner) != (new.kind, new.owner):
        return None
    score = similarity(old.text, new.text, at_least=_RENAME_SIMILARITY)
    return score if score >= _RENAME_SIMILARITY else None


def _slot(base: tuple[Entity, ...], i: int, position: dict[Key, int], size: int) -> range:
    """Positions of a side between the side's copies of base[i]'s nearest kept neighbours."""
    before = next(
        (position[base[j].key] for j in range(i - 1, -1, -1) if base[j].key in position), -1
    )
    after = next(
        (position[base[j].key] for j in range(i + 1, len(base)) if base[j].key in position),
        size,
    )
    return range(before + 1, after)


def _unnamed(entity: Entity) -> bytes:
    """The entity's text without its own name (``def (x):`` for ``def f(x):``): the first
    occurrence of the name as a whole word, not inside ``def`` or ``void``."""
    name = entity.name.split("(", 1)[0].rsplit(".", 1)[-1].encode()
    if not name:
        return entity.text
    return re.sub(rb"(?<![\w$])" + re.escape(name) + rb"(?![\w$])", b"", entity.text, count=1)


def _guessed(vanished: Entity, candidates: list[Entity]) -> bool:
    """Whether pairing a vanished named entity with its best look-alike would be a guess.

    `candidates` are the new entities alike enough to be it. Two of them as like it as
    each other once names are set aside (a class deleted where seven similar ones were
    added, a test split in two copies): which one it became is a guess, and a wrong
    guess moves the other side's edit of it into an entity it never saw. Left unpaired,
    it is a deletion, which conflicts with an edit. Names are set aside because in a
    short text they weigh most: ``flag_add`` is nearer ``add`` than ``subcommand_add``
    is, whatever their bodies. Not for unnamed statements, which are keyed by their
    text, nor imports: every new import of the file is a candidate, many look alike,
    and the imports check judges the merged imports as sets of names.
    """
    if len(candidates) < 2 or vanished.anonymous or vanished.kind in _REPEATABLE:
        return False
    old = _unnamed(vanished)
    scores = [similarity(old, _unnamed(c)) for c in candidates]
    top = max(scores)
    return sum(score >= top - _TIE for score in scores) > 1


def rematch(base: tuple[Entity, ...], side: tuple[Entity, ...]) -> tuple[Entity, ...]:
    """Give an entity that looks like an edit of a vanished base entity that one's key.

    An edited unnamed statement (keyed by its text), a renamed function or an import
    moved to another module looks like a delete plus an add. Pairing a vanished base
    entity with the most alike new one of the same kind in the same slot (between the
    same surviving neighbours) — for named entities only when their text is mostly
    the same — turns that back into a modification. Then a rename on one side and a
    body edit on the other merge, and two sides editing one statement meet in one
    merge instead of both surviving.
    """
    side_keys = {e.key for e in side}
    missing = [i for i, e in enumerate(base) if e.key not in side_keys]
    if not missing:
        return side
    base_keys = {e.key for e in base}
    position = {e.key: i for i, e in enumerate(side)}
    result = list(side)
    taken: set[int] = set()
    for i in missing:
        # Imports are often re-sorted or regrouped: one moved to another module may
        # land anywhere among them, so any new import of the side may be its edit.
        where = (
            range(len(side)) if base[i].kind in _REPEATABLE else _slot(base, i, position, len(side))
        )
        slot = [p for p in where if p not in taken and result[p].key not in base_keys]
        scores: list[tuple[float, int]] = []
        for p in slot:
            if base[i].anonymous and len(slot) == 1:
                # One candidate: no need to score it, only to check its type.
                score = 1.0 if _likeness_type(base[i], result[p]) else None
            else:
                score = _likeness(base[i], result[p])
            if score is not None:
                scores.append((score, p))
        best = max(scores, key=lambda sp: sp[0], default=None)
        if best is not None and _guessed(base[i], [result[p] for _, p in scores]):
            best = None
        if best is not None:
            p = best[1]
            result[p] = replace(result[p], name=base[i].name, occurrence=base[i].occurrence)
            taken.add(p)
    return tuple(result)


def _anchor(side: tuple[Entity, ...], p: int, common: set[Key]) -> Key | None:
    """The nearest entity above position `p` that both sides and the base have."""
    return next((side[q].key for q in range(p - 1, -1, -1) if side[q].key in common), None)


def _alike(a: Entity, b: Entity) -> bool:
    if a.node_type != b.node_type:
        return False
    head_a, head_b = (e.text.strip().split(b"\n", 1)[0] for e in (a, b))
    return (
        head_a == head_b
        or similarity(a.text, b.text, at_least=_RENAME_SIMILARITY) >= _RENAME_SIMILARITY
    )


def pair_additions(
    base: tuple[Entity, ...], ours: tuple[Entity, ...], theirs: tuple[Entity, ...]
) -> tuple[Entity, ...]:
    """Give theirs' additions the key of a look-alike ours added at the same place.

    Unnamed statements are keyed by their text, so two sides adding near-identical
    ones (one docstring each, one ``if`` block each) would both be kept and both run;
    so would one function both sides added under two spellings of its name. Paired,
    they meet as one entity both sides added, which merges only if they agree.
    """
    common = {e.key for e in base} & {e.key for e in ours} & {e.key for e in theirs}
    theirs_keys = {e.key for e in theirs}
    ours_keys = {e.key for e in ours}
    base_keys = {e.key for e in base}
    candidates: dict[Key | None, list[Entity]] = {}
    for p, e in enumerate(ours):
        # An unnamed one may be a base statement theirs rewrote (it is not in theirs);
        # a named one only an addition, as theirs' is.
        new = e.key not in common if e.anonymous else e.key not in base_keys
        if new and e.key not in theirs_keys:
            candidates.setdefault(_anchor(ours, p, common), []).append(e)
    if not candidates:
        return theirs
    result = list(theirs)
    for p, e in enumerate(theirs):
        if e.key in base_keys or e.key in ours_keys:
            continue
        mates = candidates.get(_anchor(theirs, p, common), [])
        alike = _alike if e.anonymous else _one_addition
        mate = next((m for m in mates if m.anonymous == e.anonymous and alike(m, e)), None)
        if mate is not None:
            mates.remove(mate)
            result[p] = replace(e, name=mate.name, occurrence=mate.occurrence)
    return tuple(result)


# How alike two names must be (difflib's ratio) for one to be taken for the other
# misspelt: `findMatchesModifiable` and `findMatchesModifiabale` score 0.98.
_MISSPELT = 0.85


def _one_addition(ours: Entity, theirs: Entity) -> bool:
    """Whether two named additions at one place are one addition: one text under two
    spellings of its name, or two versions under one comment of their own."""
    return _same_but_its_name(ours, theirs) or _same_note(ours, theirs)


# Fewer words than this say too little to tell one entity from another (``// TODO``).
_NOTE_WORDS = 3
_COMMENT_STARTS = (b"//", b"/*", b"*", b"# ", b'"""', b"'''")


def _note(entity: Entity) -> bytes:
    """The comment lines attached above an entity, stripped; attributes and decorators
    (``#[test]``, ``@Override``), which two new members of one kind share, left out."""
    lines = split_lines(entity.text[: entity.attached])
    return b"\n".join(
        s for line in lines if (s := line.strip()).startswith(_COMMENT_STARTS) or s == b"#"
    )


def _same_note(ours: Entity, theirs: Entity) -> bool:
    """Whether two named additions of one kind, one name apart, carry one comment of some
    words.

    bat's src/config.rs (seventh held-out set): under ``/// Name of file to display when
    printing`` ours added ``filenames: Option<Vec<&'a str>>`` and theirs ``filename:
    Option<&'a str>`` at the same place of a struct; keyed by name they were two fields,
    and the struct got both. One comment over two names that say one thing is one
    addition. A shared comment alone is not: routine ones (``// TODO: implement this``, an
    ``eslint-disable`` line) sit above unrelated new things.
    """
    if ours.kind != theirs.kind or ours.kind in _REPEATABLE or not ours.attached:
        return False
    if not _one_name_apart(ours.name, theirs.name):
        return False
    note = _note(ours)
    return len(_WORD.findall(note)) >= _NOTE_WORDS and note == _note(theirs)


# How alike two names must be (difflib's ratio) to be taken for one name in two forms.
_NAME_APART = 0.8


def _one_name_apart(mine: str, yours: str) -> bool:
    """Whether two names are one in two forms: one starts with the other (``filename``,
    ``filenames``; ``timeout``, ``timeoutMs``) or they differ in a character or two."""
    mine, yours = mine.lower(), yours.lower()
    if not mine or not yours:
        return False
    if mine.startswith(yours) or yours.startswith(mine):
        return True
    return difflib.SequenceMatcher(None, mine, yours).ratio() >= _NAME_APART


def _same_but_its_name(ours: Entity, theirs: Entity) -> bool:
    """Whether two named additions are one text under two spellings of one name.

    commons-lang's RegExUtils.java (sixth held-out set): both sides added the same
    twenty-line method at the end of the class, one of them with a typo in its name;
    keyed by name they were two methods, both kept.
    """
    if ours.kind != theirs.kind or ours.node_type != theirs.node_type:
        return False
    if ours.kind in _REPEATABLE:
        return False  # an import's name is its module: two alike paths are two modules
    mine, yours = (e.name.split("(", 1)[0].strip() for e in (ours, theirs))
    if not mine or not yours or mine == yours:
        return False
    matcher = difflib.SequenceMatcher(None, mine, yours, autojunk=False)
    if matcher.ratio() < _MISSPELT or not _a_typo(mine, yours, matcher):
        return False
    return ours.code.replace(mine.encode(), b"\0") == theirs.code.replace(yours.encode(), b"\0")


def _a_typo(mine: str, yours: str, matcher: difflib.SequenceMatcher[str]) -> bool:
    """Whether two names differ as a slip of the keys does: in letters only, inside the
    name. Names that differ in a digit or at their end (`test_issue_101` and `…102`,
    `fetchUserA` and `fetchUserB`, `getUser` and `getUsers`) are a series, not a typo."""
    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        if tag == "equal":
            continue
        changed = mine[a0:a1] + yours[b0:b1]
        if not changed.isalpha() or a1 >= len(mine) or b1 >= len(yours):
            return False
    return True


def _shares_lines(old: Entity, new: Entity) -> bool:
    """Whether most of `old`'s lines, indentation aside, reappear in `new` (a wrap, a move)."""
    mine = [line.strip() for line in split_lines(old.text) if line.strip()]
    if len(mine) < 2:
        return False
    theirs = {line.strip() for line in split_lines(new.text)}
    return sum(line in theirs for line in mine) * 2 >= len(mine)


_WORD = re.compile(rb"[A-Za-z_$][\w$]*")


def _shares_a_name(old: Entity, new: Entity) -> bool:
    """Whether `new` holds a word of two or more characters that `old`'s text holds."""
    words = {w for w in _WORD.findall(old.text) if len(w) > 1}
    return any(w in words for w in _WORD.findall(new.text))


def _mentions(old: Entity, new: Entity) -> bool:
    """Whether `new` uses `old`'s name (``DEBUG = False`` rewritten as an ``if`` setting it)."""
    if old.anonymous or not old.name.isidentifier():
        return False
    return re.search(rb"\b" + re.escape(old.name.encode()) + rb"\b", new.text) is not None


def replacements(
    base: tuple[Entity, ...], side: tuple[Entity, ...], *, loose: bool
) -> dict[Key, list[Key]]:
    """For each base entity `side` dropped, what `side` added in its place in its stead.

    An addition in a vanished entity's slot replaces it when it holds most of its lines
    (it was wrapped in a condition, or rewritten around them), when it uses the vanished
    entity's name (``DEBUG = False`` turned into an ``if`` setting ``DEBUG``) or, with
    `loose`, when it is an unnamed statement of the same type (an ``if`` for an ``if``)
    or, where an unnamed statement vanished, the one new entity in its place that uses
    one of its words.
    """
    side_keys = {e.key for e in side}
    base_keys = {e.key for e in base}
    position = {e.key: i for i, e in enumerate(side)}
    claimed: set[int] = set()
    found: dict[Key, list[Key]] = {}
    for i, old in enumerate(base):
        if old.key in side_keys:
            continue
        slot = [p for p in _slot(base, i, position, len(side)) if side[p].key not in base_keys]
        for p in slot:
            new = side[p]
            if p in claimed:
                continue
            same_statement = old.anonymous and new.anonymous and old.node_type == new.node_type
            # The one new entity where an unnamed statement was, using one of its names, is
            # its rewrite whatever its sort: `module.exports = Hook;` as `export default
            # Hook;`. (Not an unrelated function added where `setup()` was deleted.)
            lone = old.anonymous and len(slot) == 1 and _shares_a_name(old, new)
            if (
                _shares_lines(old, new)
                or _mentions(old, new)
                or (loose and (same_statement or lone))
            ):
                found.setdefault(old.key, []).append(new.key)
                claimed.add(p)
    return found
