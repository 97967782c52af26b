"""No id, sha or token may end in a newline, however it reaches a reader.

Python's ``$`` matches before a final ``\\n`` too, so ``^[A-Za-z0-9_-]{1,64}$`` let
``"unit-1\\n"`` through: a forged event's unit became a subject token with a newline
in it, which ends the protocol line a daemon sends it on.
"""

from __future__ import annotations

import msgspec
import pytest

from schemas import Actor, FindingRaised, InvalidEvent, decode_event, encode_event, parse_target
from schemas.gates import Digest, GitSha
from schemas.ids import EventId, Token, is_token, new_id
from schemas.ship import Sha

VALID = [
    (Token, "unit-1"),
    (EventId, new_id()),
    (GitSha, "a" * 40),
    (GitSha, "b" * 64),
    (Digest, "c" * 64),
    (Sha, "d" * 40),
]


@pytest.mark.parametrize(("kind", "value"), VALID)
def test_the_value_passes_and_with_a_final_newline_is_refused(kind: object, value: str) -> None:
    assert msgspec.convert(value, type=kind) == value
    with pytest.raises(msgspec.ValidationError, match="matching regex"):
        msgspec.convert(value + "\n", type=kind)


def test_is_token_refuses_a_final_newline() -> None:
    assert is_token("unit-1")
    assert not is_token("unit-1\n")


def test_a_forged_event_whose_unit_ends_in_a_newline_is_refused_by_every_reader() -> None:
    good = FindingRaised(
        project="demo",
        actor=Actor(role="reviewer", principal="r1"),
        producer="reviewer",
        target=parse_target("code:src/app.py:10-14"),
        severity="high",
        message="unchecked None",
        unit="unit-1",
    )
    assert decode_event(encode_event(good)) == good
    forged = encode_event(good).replace(b'"unit-1"', b'"unit-1\\n"')
    with pytest.raises(InvalidEvent, match="unit"):
        decode_event(forged)


def _patterns(kind: object) -> list[str]:
    """Every string pattern under one msgspec type, recursively."""
    found: list[str] = []
    seen: set[int] = set()

    def walk(info: msgspec.inspect.Type) -> None:
        if id(info) in seen:
            return
        seen.add(id(info))
        if isinstance(info, msgspec.inspect.StrType) and info.pattern:
            found.append(info.pattern)
        for name in ("fields", "types"):
            for item in getattr(info, name, ()) or ():
                walk(item.type if isinstance(item, msgspec.inspect.Field) else item)
        for name in ("item_type", "key_type", "value_type", "cls"):
            inner = getattr(info, name, None)
            if isinstance(inner, msgspec.inspect.Type):
                walk(inner)

    walk(msgspec.inspect.type_info(kind))
    return found


def test_no_event_field_pattern_ends_in_a_bare_dollar() -> None:
    from schemas import Event

    patterns = _patterns(Event)
    assert len(patterns) >= 5  # the walk reaches the fields (tokens, ids, shas)
    bare = sorted({p for p in patterns if p.endswith("$")})
    assert bare == [], f"end these with $(?!\\n), not $: {bare}"
