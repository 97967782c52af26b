"""Materialised views: where the projector keeps each projection of each project, in KV.

Layout in the projections bucket:

* ``<project>.<projection>`` → ``{"seq": N, "state": …}``: the state after applying every
  event of that project up to stream sequence ``N``;
* ``_checkpoint`` → ``N``: every state is written at least through ``N``.

The projector writes the states, then the checkpoint; on restart it resumes at
``checkpoint + 1`` and skips, per state, events at or below that state's own ``seq``, so a
crash between the two writes never applies an event twice. ``loopbus status`` reads the
same keys. A state is encoded by its fold (deterministic bytes: a rebuild from sequence 1
gives the same bytes).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Protocol

import msgspec
from loopbus.bus.connection import Bus
from loopbus.bus.errors import ViewUnreadable
from loopbus.bus.kv import Bucket
from loopbus.bus.provision import PROJECTION_BUCKET

CHECKPOINT_KEY = "_checkpoint"


class Codec(Protocol):
    """What a view needs of a fold: its name and how to encode and decode its state."""

    @property
    def name(self) -> str: ...

    def encode(self, state: Any) -> bytes: ...

    def decode(self, data: bytes) -> Any: ...


class _Stored(msgspec.Struct):
    seq: int
    state: msgspec.Raw


def view_key(project: str, fold: Codec) -> str:
    return f"{project}.{fold.name}"


def encode_view(fold: Codec, seq: int, state: Any) -> bytes:
    return b'{"seq":%d,"state":%s}' % (seq, fold.encode(state))


def decode_view(fold: Codec, data: bytes) -> tuple[int, Any]:
    """(seq, state) from stored bytes; :class:`ViewUnreadable` when they no longer decode
    (the state's shape changed since they were written)."""
    try:
        stored = msgspec.json.decode(data, type=_Stored)
        return stored.seq, fold.decode(bytes(stored.state))
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise ViewUnreadable(fold.name, str(exc)) from exc


class Views:
    """The materialised views in the projections bucket."""

    def __init__(self, bucket: Bucket) -> None:
        self.bucket = bucket

    @classmethod
    async def open(cls, bus: Bus) -> Views:
        return cls(await bus.bucket(PROJECTION_BUCKET))

    async def checkpoint(self) -> int:
        entry = await self.bucket.get(CHECKPOINT_KEY)
        return int(entry.value or b"0") if entry is not None else 0

    async def set_checkpoint(self, seq: int) -> None:
        await self.bucket.put(CHECKPOINT_KEY, str(seq).encode())

    async def read(self, project: str, fold: Codec) -> tuple[int, Any] | None:
        """(seq, state) of one view; ``None`` when it was never written."""
        entry = await self.bucket.get(view_key(project, fold))
        if entry is None or not entry.value:
            return None
        return decode_view(fold, entry.value)

    async def write(self, project: str, fold: Codec, seq: int, state: Any) -> None:
        await self.bucket.put(view_key(project, fold), encode_view(fold, seq, state))

    async def watch(self, project: str, fold: Codec) -> AsyncIterator[tuple[int, Any]]:
        """(seq, state) of one view each time it is written (its current value first)."""
        async for entry in self.bucket.watch(view_key(project, fold)):
            if entry is not None and entry.value and not entry.deleted:
                yield decode_view(fold, entry.value)
