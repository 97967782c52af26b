"""Time-ordered unique ids and the token rules shared by every subject.

An id is a ULID: 48 bits of milliseconds then 80 random bits, in Crockford base32, so ids
sort by creation time as plain strings and can be minted by any process without
coordination. Minting reads the clock and the OS random source; nothing else in
``schemas`` does.
"""

import hashlib
import os
import re
import time
from datetime import UTC, datetime
from typing import Annotated

import msgspec

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

# A subject token must not contain '.', '*', '>' or whitespace; we are stricter so that ids
# are also safe as KV keys, file names and shell words. Every pattern here ends in
# `$(?!\n)`: Python's `$` also matches before a final newline, so "unit-1\n" passed (a
# newline in a subject ends the protocol line it is sent on); `\Z` would say the same
# in Python but is not a JSON Schema (ECMA-262) anchor, and the briefs agents receive
# carry these patterns as JSON Schema.
TOKEN_PATTERN = r"^[A-Za-z0-9_-]{1,64}$(?!\n)"
_TOKEN = re.compile(TOKEN_PATTERN)

Token = Annotated[str, msgspec.Meta(pattern=TOKEN_PATTERN)]
"""A string usable as one NATS subject token (project, unit, slice, check ids)."""

EventId = Annotated[str, msgspec.Meta(pattern=r"^[0-9A-HJKMNP-TV-Z]{26}$(?!\n)")]
"""A ULID in Crockford base32."""

UtcTime = Annotated[datetime, msgspec.Meta(tz=True)]
"""A timezone-aware instant. Decoding refuses a time without an offset: compared with an
aware one it raises ``TypeError``, which would stop every fold that orders events."""


def new_id(now_ns: int | None = None) -> str:
    """Mint a ULID for ``now_ns`` (nanoseconds since the epoch; the clock when omitted)."""
    ms = (time.time_ns() if now_ns is None else now_ns) // 1_000_000
    return _ulid(ms, int.from_bytes(os.urandom(10), "big"))


def answer_id(seed: str, salt: str) -> str:
    """A ULID fixed by ``seed`` (a ULID) and ``salt``: the same question, the same answer id.

    Its time part is the seed's and its random part a digest of both. A daemon derives the
    id of every answer from what it answers (a report, a unit's last event, a block), so
    two daemons racing, or one restarted between publishing and folding its own answer,
    publish the *same* id, and the log's Msg-Id de-duplication keeps one.
    """
    ms = int(id_time(seed).timestamp() * 1000)
    digest = int.from_bytes(hashlib.sha256(f"{seed}|{salt}".encode()).digest()[:10], "big")
    return _ulid(ms, digest)


def fixed_id(ms: int, key: str) -> str:
    """A ULID for an instant (``ms`` since the epoch) and a key: the same key, the same id.

    For a fact derived from something outside the log (a line of the server's own log),
    so that reading the same line twice publishes the same id and the log keeps one."""
    digest = int.from_bytes(hashlib.sha256(key.encode()).digest()[:10], "big")
    return _ulid(ms, digest)


def _ulid(ms: int, random80: int) -> str:
    value = (ms << 80) | random80
    chars = []
    for _ in range(26):
        chars.append(_CROCKFORD[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def id_time(event_id: str) -> datetime:
    """The UTC instant encoded in a ULID's first 48 bits."""
    ms = 0
    for ch in event_id[:10]:
        ms = ms * 32 + _CROCKFORD.index(ch)
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def utcnow() -> datetime:
    """The current instant, timezone-aware in UTC (events never carry naive times)."""
    return datetime.now(UTC)


def is_token(value: str) -> bool:
    """True when ``value`` can stand as one subject token."""
    return bool(_TOKEN.match(value))
