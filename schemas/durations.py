"""Durations as people type them: ``90s``, ``5m``, ``2h``, ``1d``, ``1h30m``, or plain seconds."""

import re

from schemas.errors import InvalidValue

_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(text: str, field: str = "duration") -> float:
    """Seconds in ``text``; :class:`InvalidValue` naming ``field`` when it is not a duration."""
    cleaned = text.strip().lower()
    try:
        seconds = float(cleaned)
    except ValueError:
        pos, seconds = 0, 0.0
        for match in _PART.finditer(cleaned):
            if match.start() != pos:
                break
            seconds += float(match.group(1)) * _UNIT_S[match.group(2)]
            pos = match.end()
        if pos != len(cleaned) or not cleaned:
            raise InvalidValue(
                field, text, "expected a duration such as 90s, 5m, 2h, 1h30m or seconds"
            ) from None
    if seconds <= 0:
        raise InvalidValue(field, text, "a duration must be greater than zero")
    return seconds
