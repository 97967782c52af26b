"""The projector's core: every projection of every project, folded and written as small values.

It keeps one state per (project, projection) with the last stream sequence folded into it,
folds each record into the states of its project (each fold under the kernel's rule: one
that raises skips that event), and *flushes*: encodes — at once, so the values describe
one moment — every value the folds may have changed since the last flush (see
:mod:`workers.projector.tracking`), and writes the ones that really changed, then
the checkpoint (see :mod:`bus.views`). It remembers a digest of every value it
wrote, so a flush costs what changed, never the size of the state.

On start it restores every state from the values the checkpoint covers and resumes after
the checkpoint's sequence; a view whose values no longer decode (its state's shape
changed) is folded again from sequence 1 while the others skip what they hold.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import msgspec
import structlog

from bus import Record, Views, ViewUnreadable
from bus.view_assemble import Stored, assemble
from bus.view_layout import (
    VIEW_PREFIX,
    Coll,
    Node,
    Path,
    Piece,
    count,
    head_body,
    key_of,
    layout_of,
    piece_at,
    pieces,
    token,
    view_prefix,
)
from bus.views import RECENT_KEY, Checkpoint, Write
from projections import FOLDS, Fold, FoldFailure, apply_guarded
from projections.base import is_forged
from workers.projector.tracking import Marks, adopt

log = structlog.get_logger()

RECENT_KEEP = 256
"""Entries per collection the recent index names."""
RECENT_EVERY_S = 1.0
"""The recent index is written at most this often (it samples; it need not be live)."""


@dataclass
class View:
    """One project's state of one projection, and what changed in it since the last flush."""

    project: str
    fold: Fold[Any]
    root: Node
    state: Any
    seq: int = 0
    """The last stream sequence folded into this state."""
    marks: Marks = field(default_factory=Marks)
    leaves: dict[str, int] = field(default_factory=dict)
    """Bottom entries of each collection cut more than one level deep."""
    touched: bool = False
    recent: dict[str, dict[str, None]] = field(default_factory=dict)
    """Root field -> the keys (after the view's prefix) of the entries written last, oldest
    first: the index ``status`` pages a big collection with."""
    recent_changed: bool = False
    recent_written: float = -RECENT_EVERY_S

    @property
    def prefix(self) -> str:
        return view_prefix(self.project, self.fold.name)

    def key(self, tokens: tuple[str, ...]) -> str:
        return key_of(self.prefix, tokens)


@dataclass
class Projector:
    """The materialising core (the daemon around it is in :mod:`.daemon`)."""

    store: Views
    folds: tuple[Fold[Any], ...] = FOLDS
    checkpoint: Checkpoint = field(default_factory=Checkpoint)
    views: dict[tuple[str, str], View] = field(default_factory=dict)
    written: dict[str, int] = field(default_factory=dict)
    """Key -> digest of the value last written there."""
    children: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    holds: dict[str, int] = field(default_factory=dict)
    """Key of a bottom-level dict entry -> how many entries it held when written."""
    next_flush: int = 1
    pending: dict[str, bytes | None] = field(default_factory=dict)
    """Values of a flush that failed: written with the next one."""
    changed: dict[tuple[str, str], View] = field(default_factory=dict)
    """Views folded into (or to rewrite) since the last flush."""
    recent_due: dict[tuple[str, str], View] = field(default_factory=dict)
    """Views whose recent index changed but was written less than a second ago."""
    rebuild: bool = False
    applied: int = 0
    by_project: dict[str, list[View]] = field(default_factory=dict)
    """Project -> its views in the folds' order (:meth:`_views_of`)."""

    @classmethod
    async def open(cls, store: Views, folds: tuple[Fold[Any], ...] = FOLDS) -> Projector:
        """Restore every view the checkpoint covers."""
        restored = await store.restore()
        projector = cls(store=store, folds=folds, checkpoint=restored.checkpoint)
        projector.next_flush = max(restored.highest_flush, restored.checkpoint.f) + 1
        by_view: dict[tuple[str, str], list[tuple[list[str], bytes]]] = defaultdict(list)
        for key, data in restored.values.items():
            parts = key.split(".")
            if len(parts) >= 3:
                by_view[(parts[1], parts[2])].append((parts[3:], data))
        broken = {tuple(k.split(".")[1:3]) for k in restored.uncertain}
        by_name = {fold.name: fold for fold in folds}
        for (project, name), values in by_view.items():
            fold = by_name.get(name)
            if fold is None:
                continue  # a projection no longer kept: its values stay until cleaned up
            projector._restore_view(project, fold, values, (project, name) in broken)
        for project, name in broken - set(by_view):
            if name in by_name:
                projector._restore_view(project, by_name[name], [], True)
        for key, value in restored.torn.items():
            # Written by a flush that never reached its checkpoint: put back what the
            # checkpoint covers (a view being rebuilt rewrites its own values anyway).
            projector.pending[key] = _body(value) if value is not None else None
        if projector.rebuild:
            log.warning("projector.rebuilding", resume=1)
        return projector

    def _restore_view(
        self, project: str, fold: Fold[Any], values: list[tuple[list[str], bytes]], broken: bool
    ) -> None:
        view = View(project, fold, layout_of(fold.state_type), fold.initial())
        for tokens, data in values:
            key = view.key(tuple(tokens))
            self._note_written(key, _body(data))
        try:
            if broken:
                raise ViewUnreadable(fold.name, "a value past the checkpoint has no earlier one")
            decoded = [(tokens, _decode(fold.name, data)) for tokens, data in values]
            assembled = assemble(view.root, decoded)
            if assembled is None:
                raise ViewUnreadable(fold.name, "its summary is missing")
            view.state, view.seq = assembled.state(fold.state_type), assembled.seq
        except (ViewUnreadable, ValueError, TypeError) as exc:
            log.warning("projector.view_rebuilt", view=view.prefix, error=str(exc)[:300])
            view.state, view.seq = fold.initial(), 0
            view.marks.whole = True
            self.rebuild = True
            self.changed[(project, fold.name)] = view
        adopt(view.marks, (), view.root, view.state)
        if not view.marks.whole:
            view.marks.clear()  # wrapping what was read back changes nothing
        view.leaves = _leaves(view.root, view.state)
        self.holds.update(_holds(view))
        self.views[(project, fold.name)] = view

    @property
    def resume_from(self) -> int:
        return 1 if self.rebuild else self.checkpoint.seq + 1

    # -- folding ------------------------------------------------------------------------

    def apply(self, record: Record) -> list[FoldFailure]:
        """Fold one decoded record into every projection of its project; a fold that raises
        skips it (the kernel's rule, and replay's) and is returned."""
        event = record.event
        assert event is not None
        failures: list[FoldFailure] = []
        seq, changed = record.seq, self.changed
        forged = is_forged(event)  # judged once for the thirty folds (apply_guarded)
        for view in self._views_of(event.project):
            if seq <= view.seq:
                continue  # already folded before a restart (a view being rebuilt goes on)
            # A collection a fold replaced (``state.queue = [...]``) is found at the flush
            # (``_capture`` adopts it and rewrites it whole), not checked on every event.
            before = view.state
            view.state, failure = apply_guarded(view.fold, before, event, forged)
            if failure is not None:
                failures.append(failure)
            if view.state is not before:
                view.marks.whole = True
                adopt(view.marks, (), view.root, view.state)
            view.seq = seq
            if not view.touched:
                view.touched = True
                changed[(view.project, view.fold.name)] = view
        self.applied += 1
        return failures

    def _views_of(self, project: str) -> list[View]:
        """Every fold's view of ``project``, in the folds' order, made (empty, to write
        whole) for the folds that have none yet: found once per project, not once per fold
        and event (a dict lookup and a key per fold were a tenth of folding an event)."""
        found = self.by_project.get(project)
        if found is None:
            found = []
            for fold in self.folds:
                view = self.views.get((project, fold.name))
                if view is None:
                    view = View(project, fold, layout_of(fold.state_type), fold.initial())
                    adopt(view.marks, (), view.root, view.state)
                    view.marks.whole = True
                    self.views[(project, fold.name)] = view
                    self.changed[(project, fold.name)] = view
                found.append(view)
            self.by_project[project] = found
        return found

    @property
    def dirty(self) -> bool:
        return bool(self.pending or self.changed)

    @property
    def recent_pending(self) -> bool:
        """A recent index waits to be written (the flusher comes back for it)."""
        return bool(self.recent_due)

    # -- flushing -----------------------------------------------------------------------

    async def flush(self, through: int) -> int:
        """Write what changed since the last flush, then the checkpoint ``through`` (every
        view is folded through it); returns how many values were written."""
        flush, writes = self.capture()
        try:
            await self.store.write(flush, through, writes)
        except BaseException:
            self.pending = {w.key: w.body for w in writes}
            raise
        self.pending = {}
        self.checkpoint = Checkpoint(f=flush, seq=through)
        return len(writes)

    def capture(self) -> tuple[int, list[Write]]:
        """Encode, now and all at once, every value that changed: (flush number, values)."""
        flush = self.next_flush
        self.next_flush += 1
        writes = dict(self.pending)
        for view in self.changed.values():
            self._capture(view, writes)
        self.changed.clear()
        for name, view in list(self.recent_due.items()):
            if time.monotonic() - view.recent_written >= RECENT_EVERY_S:
                self._write_recent(view, writes)
                del self.recent_due[name]
        return flush, [Write(key, body) for key, body in writes.items()]

    def _capture(self, view: View, writes: dict[str, bytes | None]) -> None:
        adopt(view.marks, (), view.root, view.state)  # a collection a fold replaced
        marks = view.marks
        done: set[Path] = set()
        for path in [()] if marks.whole else sorted(marks.replaced, key=len):
            if not _under(path, done):
                done.add(path)
                self._rewrite(view, path, writes)
        for path in marks.paths:
            if _under(path, done):
                continue
            spot, piece = piece_at(view.root, view.state, path, view.seq)
            if spot.kind in ("head", "coll", "list"):
                continue  # heads are written below; a collection itself has no value
            key = view.key(spot.tokens)
            if piece is None:
                self._delete_tree(key, writes)
            else:
                self._put(key, piece, writes)
        for attr, sub in view.root.subs.items():
            body = head_body(sub, getattr(view.state, attr), ())
            self._put(view.key((attr,)), Piece((attr,), (attr,), body), writes)
        if view.recent_changed:
            self.recent_due[(view.project, view.fold.name)] = view
        summary = head_body(view.root, view.state, (), view.seq, view.leaves)
        self._put(view.prefix, Piece((), (), summary), writes, always=True)
        marks.clear()
        view.touched = False

    def _rewrite(self, view: View, path: Path, writes: dict[str, bytes | None]) -> None:
        """Write everything at and below ``path``, delete what is no longer there."""
        fresh = {view.key(p.tokens): p for p in pieces(view.root, view.state, view.seq, path)}
        if not path:
            base = view.prefix
        else:
            spot, _piece = piece_at(view.root, view.state, path, view.seq)
            base = view.key(spot.tokens)
        for key in self._tree(base):
            if key not in fresh:
                self._delete(key, writes)
        for key, piece in fresh.items():
            if piece.path or not path:
                self._put(key, piece, writes, always=not piece.path)

    def _write_recent(self, view: View, writes: dict[str, bytes | None]) -> None:
        """The recent index: for each collection, the entries written last (newest last)."""
        index = {attr: list(keys) for attr, keys in view.recent.items() if keys}
        body = b'"v":%s' % msgspec.json.encode(index)
        self._put(view.key((RECENT_KEY,)), Piece((), (RECENT_KEY,), body), writes)
        view.recent_changed = False
        view.recent_written = time.monotonic()

    def _noted(self, key: str, piece_path: Path | None, written: bool) -> None:
        """Keep the recent index of the entry at ``key`` (an entry of a collection)."""
        view = self._view_of(key)
        rest = key[len(view.prefix) + 1 :]
        attr = rest.split(".", 1)[0]
        if attr not in view.root.colls and attr not in view.root.lists:
            return
        keys = view.recent.setdefault(attr, {})
        keys.pop(rest, None)
        if written:
            keys[rest] = None
            if len(keys) > RECENT_KEEP:
                del keys[next(iter(keys))]
        view.recent_changed = True

    def _put(
        self, key: str, piece: Piece, writes: dict[str, bytes | None], always: bool = False
    ) -> None:
        if piece.holds is not None and self.holds.get(key) != piece.holds:
            attr = str(piece.path[0])
            leaves = self._view_of(key).leaves
            leaves[attr] = leaves.get(attr, 0) + piece.holds - self.holds.get(key, 0)
            self.holds[key] = piece.holds
        digest = hash(piece.body)
        if not always and self.written.get(key) == digest:
            return
        writes.pop(key, None)
        writes[key] = piece.body
        self._note_written(key, piece.body, digest)
        if piece.path and piece.holds is None and piece.path[0] != RECENT_KEY:
            self._noted(key, piece.path, True)

    def _note_written(self, key: str, body: bytes, digest: int | None = None) -> None:
        self.written[key] = hash(body) if digest is None else digest
        # Link the key under each level above it, up to its view's summary, so that a
        # subtree (an entity, a collection, a whole view) can be found and deleted.
        while key.count(".") > 2:
            parent = key.rsplit(".", 1)[0]
            siblings = self.children[parent]
            if key in siblings:
                return
            siblings.add(key)
            key = parent

    def _unlink(self, key: str) -> None:
        while key.count(".") > 2 and key not in self.written and not self.children.get(key):
            self.children.pop(key, None)
            parent = key.rsplit(".", 1)[0]
            siblings = self.children.get(parent)
            if siblings is None:
                return
            siblings.discard(key)
            key = parent

    def _delete(self, key: str, writes: dict[str, bytes | None]) -> None:
        if self.written.pop(key, None) is None and key not in writes:
            return
        writes.pop(key, None)
        writes[key] = None
        self._unlink(key)
        if key.count(".") > 3:
            self._noted(key, None, False)
        held = self.holds.pop(key, None)
        if held:
            view = self._view_of(key)
            attr = key[len(view.prefix) + 1 :].split(".", 1)[0]
            view.leaves[attr] = view.leaves.get(attr, 0) - held

    def _delete_tree(self, key: str, writes: dict[str, bytes | None]) -> None:
        for found in self._tree(key):
            self._delete(found, writes)

    def _tree(self, key: str) -> list[str]:
        """Every written key at and below ``key``."""
        found = [key] if key in self.written else []
        stack = [key]
        while stack:
            for child in self.children.get(stack.pop(), ()):
                if child in self.written:
                    found.append(child)
                stack.append(child)
        return found

    def _view_of(self, key: str) -> View:
        _prefix, project, fold = key.split(".", 3)[:3]
        return self.views[(project, fold)]


def _under(path: Path, done: set[Path]) -> bool:
    return any(path[:length] in done for length in range(len(path) + 1))


def _body(data: bytes) -> bytes:
    """A stored value without its flush number: what the digests are taken of."""
    comma = data.find(b",")
    return data[comma + 1 : -1] if comma > 0 else b""


def _decode(fold: str, data: bytes) -> Stored:
    try:
        return msgspec.json.decode(data, type=Stored)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise ViewUnreadable(fold, str(exc)) from exc


def _holds(view: View) -> dict[str, int]:
    """Key -> size of every bottom-level dict entry of a view (read back, not written)."""
    found: dict[str, int] = {}

    def walk(coll: Coll, mapping: dict[str, Any], tokens: tuple[str, ...]) -> None:
        inner = coll.entry
        if not isinstance(inner, Coll):
            return
        for key in mapping:
            value = dict.__getitem__(mapping, key)
            here = (*tokens, token(key))
            if isinstance(inner.entry, Coll):
                walk(inner, value, here)
            else:
                found[view.key(here)] = len(value)

    for attr, coll in view.root.colls.items():
        walk(coll, getattr(view.state, attr), (attr,))
    return found


def _leaves(root: Node, state: Any) -> dict[str, int]:
    return {
        attr: count(coll, getattr(state, attr))
        for attr, coll in root.colls.items()
        if isinstance(coll.entry, Coll)
    }


__all__ = ["VIEW_PREFIX", "Projector", "View"]
