"""Time-ordered unique ids and the token rules shared by every subject.

An id is a ULID: 48 bits of milliseconds then 80 random bits, in Crockford base32, so ids
sort by creation time as plain strings and can be minted by any process without
coordination. Minting reads the clock and the OS random source; nothing else in
``schemas`` does.
"""

from __future__ import annotations

import os
import re
import time
from datetime import UTC, datetime
from typing import Annotated

import msgspec

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

# A subject token must not contain '.', '*', '>' or whitespace; we are stricter so that ids
# are also safe as KV keys, file names and shell words.
TOKEN_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
_TOKEN = re.compile(TOKEN_PATTERN)

Token = Annotated[str, msgspec.Meta(pattern=TOKEN_PATTERN)]
"""A string usable as one NATS subject token (project, unit, slice, check ids)."""

EventId = Annotated[str, msgspec.Meta(pattern=r"^[0-9A-HJKMNP-TV-Z]{26}$")]
"""A ULID in Crockford base32."""

UtcTime = Annotated[datetime, msgspec.Meta(tz=True)]
"""A timezone-aware instant. Decoding refuses a time without an offset: compared with an
aware one it raises ``TypeError``, which would stop every fold that orders events."""


def new_id(now_ns: int | None = None) -> str:
    """Mint a ULID for ``now_ns`` (nanoseconds since the epoch; the clock when omitted)."""
    ms = (time.time_ns() if now_ns is None else now_ns) // 1_000_000
    value = (ms << 80) | int.from_bytes(os.urandom(10), "big")
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
