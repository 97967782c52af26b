"""Materialised views in KV: the projector's partitioned states, written and read back.

Each (project, projection) is many small values (the layout is in
:mod:`bus.view_layout`): ``view.<project>.<fold>`` is its *summary* (counters, the
sizes of its collections, and ``seq``, the last stream sequence folded into it), and below
it one value per entity, per open finding, per chunk of a list. Every value carries ``f``,
the number of the flush that wrote it.

A flush writes its values (pipelined, a deletion as a ``KV-Operation: DEL`` message that
carries ``f`` too), then the checkpoint ``view-checkpoint`` = ``{"f": F, "seq": S}``: every
value with ``f <= F`` is part of the state folded through ``S``. A crash between the two
leaves values of flush ``F + 1`` that the checkpoint does not cover; the bucket keeps two
revisions of each key (``history=2``, see :mod:`bus.provision`), so a restore takes,
per key, the latest revision with ``f <= F`` — exactly the state at ``S`` — and nothing is
folded twice. Readers (``loopbus status``) just read the latest values: a flush in progress
shows a little of the next state early, never an older one.

A value too big for one message (an entity holding near-limit findings) is split: the key
holds ``{"f": F, "parts": n}`` and ``<key>/1`` … ``<key>/n`` the bytes, each starting with
``F`` and a newline, so a restore joins the parts of the revision it took.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections import defaultdict
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import msgspec

from bus.connection import Bus
from bus.errors import ViewUnreadable
from bus.kv import Bucket
from bus.provision import PROJECTION_BUCKET
from bus.publisher import Pipeline
from bus.view_assemble import Assembled, Stored, assemble
from bus.view_layout import VIEW_PREFIX, key_of, layout_of, locate, view_prefix
from bus.view_scan import KvMessage, scan

CHECKPOINT_KEY = "view-checkpoint"
RECENT_KEY = "=recent"
"""Below a view's prefix: the projector's index of the entries it wrote last."""
MAX_VALUE = 256 * 1024
"""Bytes above which a value is stored in parts."""
WINDOW = 2_048
_F = re.compile(rb'^\{"f":(\d+)')
_DEL = {"KV-Operation": "DEL"}


class Codec(Protocol):
    """What a view needs of a fold: its name and its state's type."""

    @property
    def name(self) -> str: ...

    @property
    def state_type(self) -> type: ...


class _Recent(msgspec.Struct):
    v: dict[str, list[str]] = {}


class Checkpoint(msgspec.Struct):
    f: int = 0
    seq: int = 0


@dataclass(frozen=True, slots=True)
class Write:
    """One value of a flush: ``body`` is the value without its ``f`` (``None``: delete)."""

    key: str
    body: bytes | None


def flush_of(data: bytes) -> int:
    """The flush number a stored value or part names (0 for a plain deletion marker)."""
    match = _F.match(data)
    if match:
        return int(match.group(1))
    head, newline, _rest = data.partition(b"\n")
    return int(head) if newline and head.isdigit() else 0


@dataclass
class Restored:
    """What a restore found: the checkpoint, the committed value of every key, and the
    highest flush number any value carries (the next flush must use a higher one)."""

    checkpoint: Checkpoint
    values: dict[str, bytes] = field(default_factory=dict)
    highest_flush: int = 0
    uncertain: set[str] = field(default_factory=set)
    """Keys whose only revision is past the checkpoint while the bucket keeps one
    revision: the committed value is unknown (their view must be rebuilt)."""
    torn: dict[str, bytes | None] = field(default_factory=dict)
    """Keys whose latest value is past the checkpoint -> the value the checkpoint covers
    (``None``: none). Readers see the latest, so the next flush puts these back."""


class Views:
    """The materialised views in the projections bucket."""

    def __init__(self, bus: Bus, bucket: Bucket) -> None:
        self.bus = bus
        self.bucket = bucket
        self.parts: dict[str, int] = {}
        """Key -> parts it was last written in (0 or absent: whole)."""

    @classmethod
    async def open(cls, bus: Bus, name: str = PROJECTION_BUCKET) -> Views:
        return cls(bus, await bus.bucket(name))

    # -- the checkpoint -----------------------------------------------------------------

    async def checkpoint(self) -> Checkpoint:
        entry = await self.bucket.get(CHECKPOINT_KEY)
        if entry is None or not entry.value:
            return Checkpoint()
        try:
            return msgspec.json.decode(entry.value, type=Checkpoint)
        except msgspec.DecodeError:
            return Checkpoint()

    async def history(self) -> int:
        """How many revisions of a key the bucket keeps."""
        info = await self.bus.js.stream_info(f"KV_{self.bucket.name}")
        return int(info.config.max_msgs_per_subject or 1)

    # -- writing ------------------------------------------------------------------------

    async def write(self, flush: int, seq: int, writes: Sequence[Write]) -> None:
        """Store one flush's values, then the checkpoint ``(flush, seq)`` covering them."""
        subjects: list[str] = []
        payloads: list[bytes] = []
        ids: list[str] = []
        headers: list[dict[str, str] | None] = []

        def add(key: str, payload: bytes, extra: dict[str, str] | None = None) -> None:
            subjects.append(f"$KV.{self.bucket.name}.{key}")
            payloads.append(payload)
            ids.append(f"{flush}:{key}")
            headers.append(extra)

        for write in writes:
            before = self.parts.get(write.key, 0)
            if write.body is None:
                add(write.key, b'{"f":%d}' % flush, _DEL)
                after = 0
            else:
                value = b'{"f":%d,%s}' % (flush, write.body)
                after = 0 if len(value) <= MAX_VALUE else -(-len(value) // MAX_VALUE)
                for index in range(1, after + 1):
                    part = value[(index - 1) * MAX_VALUE : index * MAX_VALUE]
                    add(f"{write.key}/{index}", b"%d\n%s" % (flush, part))
                add(write.key, value if not after else b'{"f":%d,"parts":%d}' % (flush, after))
            for index in range(after + 1, before + 1):
                add(f"{write.key}/{index}", b'{"f":%d}' % flush, _DEL)
            if after:
                self.parts[write.key] = after
            else:
                self.parts.pop(write.key, None)
        if subjects:
            await Pipeline(self.bus, subjects, payloads, ids, WINDOW, headers).run()
        # Only once every value is stored (acknowledged): the checkpoint covers them.
        await self.bucket.put(CHECKPOINT_KEY, msgspec.json.encode(Checkpoint(f=flush, seq=seq)))

    # -- restoring (the projector) ------------------------------------------------------

    async def restore(self) -> Restored:
        """Every view as the checkpoint covers it (see the module docstring)."""
        checkpoint = await self.checkpoint()
        keeps = await self.history()
        restored = Restored(checkpoint=checkpoint)
        revisions: dict[str, list[KvMessage]] = defaultdict(list)
        async for message in scan(self.bus, self.bucket.name, f"{VIEW_PREFIX}.>", history=True):
            revisions[message.key].append(message)
        chosen: dict[str, KvMessage] = {}
        torn: set[str] = set()
        for key, found in revisions.items():
            flushes = [flush_of(m.data) for m in found]
            restored.highest_flush = max(restored.highest_flush, *flushes)
            committed = [m for m, f in zip(found, flushes, strict=True) if f <= checkpoint.f]
            if committed:
                chosen[key] = committed[-1]
            elif keeps < 2 and not found[-1].deleted:
                restored.uncertain.add(key)
            if flushes[-1] > checkpoint.f and "/" not in key:
                torn.add(key)
                self.parts[key] = _parts(found[-1].data)  # its parts are cleaned up too
        for key, message in chosen.items():
            if message.deleted or "/" in key:
                continue
            value = _joined(key, message.data, chosen)
            if value is None:
                restored.uncertain.add(key)
                continue
            restored.values[key] = value
            parts = _parts(message.data)
            if parts:
                self.parts[key] = max(parts, self.parts.get(key, 0))
        restored.torn = {key: restored.values.get(key) for key in torn}
        return restored

    # -- reading (status, tests) --------------------------------------------------------

    async def summaries(self, project: str) -> dict[str, Stored]:
        """Fold name -> its summary, for every projection of ``project`` ever written."""
        found: dict[str, Stored] = {}
        async for message in scan(self.bus, self.bucket.name, f"{VIEW_PREFIX}.{project}.*"):
            if not message.deleted:
                fold = message.key.rsplit(".", 1)[-1]
                with contextlib.suppress(ViewUnreadable):
                    found[fold] = _stored(fold, message.data)
        return found

    async def read_project(
        self, project: str, folds: Sequence[Codec], *, limit: int | None = None
    ) -> dict[str, tuple[Any, Assembled]]:
        """Fold name -> (state, what was assembled) of every view of ``project`` ever
        written. With ``limit``, a collection holding more than that many entries is read
        only in part: its first values, in the order they were last written."""
        summaries = await self.summaries(project)
        known = [fold for fold in folds if fold.name in summaries]
        totals = {fold.name: _total(summaries[fold.name]) for fold in known}
        found: dict[str, tuple[Any, Assembled]] = {}
        small = limit is None or sum(totals.values()) <= limit
        values = await self._values(f"{VIEW_PREFIX}.{project}", ">", None) if small else []
        for fold in known:
            try:
                if small:
                    state = _state(fold, [(t[1:], v) for t, v in values if t[0] == fold.name])
                else:
                    state = await self.read(
                        project, fold, limit=limit, summary=summaries[fold.name]
                    )
            except ViewUnreadable:
                continue  # its shape changed: the projector is rebuilding it
            if state is not None:
                found[fold.name] = state
        return found

    async def read(
        self,
        project: str,
        fold: Codec,
        *,
        limit: int | None = None,
        summary: Stored | None = None,
    ) -> tuple[Any, Assembled] | None:
        """One view: the (possibly partial, see :meth:`read_project`) state and what was
        assembled of it; ``None`` when it was never written."""
        prefix = view_prefix(project, fold.name)
        if summary is None:
            entry = await self.bucket.get(prefix)
            if entry is None or not entry.value:
                return None
            summary = _stored(fold.name, entry.value)
        values: list[tuple[list[str], Stored | bytes]] = [([], summary)]
        if limit is None or _total(summary) <= limit:
            values += await self._values(prefix, ">", None)
            return _state(fold, values)
        root = layout_of(fold.state_type)
        sizes = summary.n if isinstance(summary.n, dict) else {}
        recent = await self._recent(prefix)
        for attr in root.sized:
            size = sizes.get(root.names[attr], 0)
            if size > limit and recent.get(attr):
                values += await self._entries(prefix, recent[attr][-limit:])
            elif size:
                values += await self._values(prefix, f"{attr}.>", limit)
        for attr in root.subs:
            values += await self._values(prefix, attr, None)
            values += await self._values(prefix, f"{attr}.>", limit)
        return _state(fold, values)

    async def read_entries(
        self, project: str, fold: Codec, paths: Iterable[tuple[str, ...]]
    ) -> tuple[Any, Assembled] | None:
        """The summary of one view and only the entries at ``paths`` (with what is cut
        below them): one unit's entries without reading the others."""
        prefix = view_prefix(project, fold.name)
        entry = await self.bucket.get(prefix)
        if entry is None or not entry.value:
            return None
        values: list[tuple[list[str], Stored | bytes]] = [([], entry.value)]
        root = layout_of(fold.state_type)
        for path in paths:
            tokens = ".".join(locate(root, path).tokens)
            values += await self._values(prefix, tokens, None)
            values += await self._values(prefix, f"{tokens}.>", None)
        return _state(fold, values)

    async def _recent(self, prefix: str) -> dict[str, list[str]]:
        """The projector's index of the entries it wrote last, per collection (it pages a
        big collection in a few direct reads instead of a scan over all its keys)."""
        entry = await self.bucket.get(f"{prefix}.{RECENT_KEY}")
        if entry is None or not entry.value:
            return {}
        try:
            index = msgspec.json.decode(entry.value, type=_Recent).v
        except (msgspec.DecodeError, msgspec.ValidationError):
            return {}
        return index

    async def _entries(
        self, prefix: str, tokens: Sequence[str]
    ) -> list[tuple[list[str], Stored | bytes]]:
        """The values at ``tokens`` (after ``prefix``) and at the entries above them."""
        wanted: dict[str, None] = {}
        for path in tokens:
            steps = path.split(".")
            for length in range(2, len(steps) + 1):
                wanted[".".join(steps[:length])] = None
        keys = list(wanted)
        found = await asyncio.gather(*(self.bucket.get(f"{prefix}.{key}") for key in keys))
        out: list[tuple[list[str], Stored | bytes]] = []
        for key, entry in zip(keys, found, strict=True):
            if entry is not None and entry.value and not entry.deleted and not _parts(entry.value):
                out.append((key.split("."), entry.value))
        return out

    async def latest(self, pattern: str) -> dict[str, bytes]:
        """Key -> latest value (parts joined) of every live key matching ``pattern``."""
        raw: dict[str, bytes] = {}
        async for message in scan(self.bus, self.bucket.name, pattern):
            if message.deleted:
                raw.pop(message.key, None)
            else:
                raw[message.key] = message.data
        joined = {k: _joined_latest(k, v, raw) for k, v in raw.items() if "/" not in k}
        return {k: v for k, v in joined.items() if v is not None}

    async def _values(
        self, prefix: str, pattern: str, limit: int | None
    ) -> list[tuple[list[str], Stored | bytes]]:
        raw: dict[str, bytes] = {}
        async for message in scan(self.bus, self.bucket.name, f"{prefix}.{pattern}", limit=limit):
            if message.deleted:
                raw.pop(message.key, None)
            else:
                raw[message.key] = message.data
        out: list[tuple[list[str], Stored | bytes]] = []
        skip = len(prefix) + 1
        for key, data in raw.items():
            if "/" in key:
                continue
            value = _joined_latest(key, data, raw)
            if value is not None:
                out.append((key[skip:].split(".") if len(key) > skip else [], value))
        return out

    async def watch_seq(self, project: str, fold: Codec) -> AsyncIterator[int]:
        """The ``seq`` of one view's summary each time it is written (the current first)."""
        async for entry in self.bucket.watch(view_prefix(project, fold.name)):
            if entry is not None and entry.value and not entry.deleted:
                yield _stored(fold.name, entry.value).seq or 0


def entry_key(project: str, fold: str, *tokens: str) -> str:
    return key_of(view_prefix(project, fold), tokens)


def _stored(fold: str, data: bytes) -> Stored:
    try:
        return msgspec.json.decode(data, type=Stored)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise ViewUnreadable(fold, str(exc)) from exc


def _total(summary: Stored) -> int:
    sizes = summary.n if isinstance(summary.n, dict) else {}
    return sum(size for size in sizes.values() if isinstance(size, int))


def _state(
    fold: Codec, values: Sequence[tuple[list[str], Stored | bytes]]
) -> tuple[Any, Assembled] | None:
    decoded = [(t, v if isinstance(v, Stored) else _stored(fold.name, v)) for t, v in values]
    assembled = assemble(layout_of(fold.state_type), decoded)
    if assembled is None:
        return None
    try:
        return assembled.state(fold.state_type), assembled
    except (msgspec.ValidationError, TypeError, ValueError) as exc:
        raise ViewUnreadable(fold.name, str(exc)) from exc


def _parts(data: bytes) -> int:
    match = re.match(rb'^\{"f":\d+,"parts":(\d+)\}$', data)
    return int(match.group(1)) if match else 0


def _joined(key: str, data: bytes, chosen: dict[str, KvMessage]) -> bytes | None:
    """The value of ``key`` with its parts joined (restore: the parts of its revision)."""
    parts = _parts(data)
    if not parts:
        return data
    flush = flush_of(data)
    pieces = []
    for index in range(1, parts + 1):
        part = chosen.get(f"{key}/{index}")
        if part is None or part.deleted or flush_of(part.data) != flush:
            return None
        pieces.append(part.data.partition(b"\n")[2])
    return b"".join(pieces)


def _joined_latest(key: str, data: bytes, raw: dict[str, bytes]) -> bytes | None:
    parts = _parts(data)
    if not parts:
        return data
    pieces = []
    for index in range(1, parts + 1):
        part = raw.get(f"{key}/{index}")
        if part is None:
            return None
        pieces.append(part.partition(b"\n")[2])
    return b"".join(pieces)
