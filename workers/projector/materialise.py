"""Materialised views: each projection of each project as one KV entry with its sequence.

Layout in the projections bucket:

* ``<project>.<projection>`` → ``{"seq": N, "state": …}``: the state after applying every
  event of that project up to stream sequence ``N``.
* ``_checkpoint`` → ``N``: every state is flushed at least through ``N``.

On restart the projector resumes at ``_checkpoint + 1`` and skips, per state, events at or
below that state's own ``seq``. A crash between writing states and writing the checkpoint
therefore never applies an event twice, and a rebuild from sequence 1 gives the same bytes.
"""

from __future__ import annotations

from typing import Any

import msgspec
from loopbus.projections import Fold

CHECKPOINT_KEY = "_checkpoint"


class _Stored(msgspec.Struct):
    seq: int
    state: msgspec.Raw


def state_key(project: str, fold: Fold[Any]) -> str:
    return f"{project}.{fold.name}"


def encode_view(fold: Fold[Any], seq: int, state: Any) -> bytes:
    return b'{"seq":%d,"state":%s}' % (seq, fold.encode(state))


def decode_view(fold: Fold[Any], data: bytes) -> tuple[int, Any]:
    stored = msgspec.json.decode(data, type=_Stored)
    return stored.seq, fold.decode(bytes(stored.state))
