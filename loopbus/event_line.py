"""One event as one readable line (``tail``, ``replay``), on a terminal or in a pipe.

A person reading the log wants what happened, to what, and the ids a command takes; the
rest (signatures, keys, cache inputs, a whole ``loopbus.toml``) is in ``--json``. So every
value is flattened to one short line: no newline survives, a hash is cut to the 12
characters git shows, a long text ends in ``…``, a list of records names each one by its
id and outcome, a plan by its slice and units.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from datetime import UTC, datetime
from typing import Any, TextIO

from bus import Record
from loopbus.terminal_text import one_line
from schemas import (
    Event,
    FindingRaised,
    MessageQuarantined,
    event_to_builtins,
    format_target,
)
from schemas.decisions import BlockedRouted, DecisionRecorded
from schemas.lifecycle import FindingDismissed, FindingReopened
from schemas.subjects import parse_subject

Paint = Any
"""``paint(style, text) -> text``: :class:`Palette` (below), or plain."""

ENVELOPE = frozenset({"kind", "project", "actor", "id", "at", "v"})
"""Fields every event has: the line shows them in its prefix, or not at all."""

HIDDEN = frozenset(
    {
        "signature",  # the gate runner's ed25519 signature: proof for a program, noise here
        "public_key",
        "text",  # a config adoption's whole loopbus.toml
        "excerpt_b64",
        "blob",
        "digest",
        "inputs",  # cache keys: the tree and config a result was computed over
        "config_sha",
        "tree",
        "cost",
        "diff_digest",
        "failure_signature",
    }
)
"""Fields left out of the line (``--json`` has them): they identify, they do not inform."""

TEXT_LIMIT = 100
"""Characters a text value keeps before ``…``."""
MANY = 4
"""A nested record with more fields than this is counted, not listed."""

_HASH = re.compile(r"\b([0-9a-f]{12})[0-9a-f]{28,52}\b")
_SPACE = re.compile(r"\s+")
_NAMES = ("check", "id", "unit", "path", "name")
_STATES = ("outcome", "state", "verdict")


def record_line(record: Record, paint: Paint, show_project: bool = False) -> str:
    """One record as one readable line; ``show_project`` names its project after the time
    (``tail`` does when it follows more than one project)."""
    when = (record.time or datetime.now(UTC)).astimezone(UTC).strftime("%H:%M:%S")
    prefix = f"{paint('dim', f'#{record.seq:<6}')} {when}"
    event = record.event
    if show_project:
        parsed = parse_subject(record.subject)
        project = event.project if event is not None else parsed.project if parsed else "?"
        prefix = f"{prefix} {paint('project', one_line(project))}"
    if event is None:
        return (
            f"{prefix} {paint('error', 'undecodable')} {one_line(record.subject)}: "
            f"{text(record.error)}"
        )
    kind = paint("kind", event.kind.removesuffix(f".v{event.v}"))
    return f"{prefix} {kind} {body(event, paint)}"


def body(event: Event, paint: Paint) -> str:
    """What the line says after the kind: a phrase for the kinds people read most, else
    the event's own fields, each flattened by :func:`value`. Every value an agent could
    have written goes through :func:`text` (and so :func:`one_line`) before it is painted:
    the only escape sequences on the line are the palette's."""
    t = text
    match event:
        case FindingRaised():
            scope = f" unit={t(event.unit)}" if event.unit else ""
            criterion = f" [{t(event.criterion)}]" if event.criterion else ""
            return (
                f"{paint(event.severity, t(event.severity))} {t(event.producer)} {t(event.cls)} "
                f"{t(format_target(event.target))}{criterion}{scope}: {t(event.message)}"
                f" {paint('dim', f'(id {t(event.id)})')}"  # what `finding dismiss --id` takes
            )
        case FindingDismissed():
            why = t(event.why)
            return f"{t(event.finding)} dismissed as {t(event.reason)} by {t(event.by)}: {why}"
        case FindingReopened():
            return f"{t(event.finding)} reopened by {t(event.by)}: {t(event.why)}"
        case DecisionRecorded():
            was = f" supersedes {t(event.supersedes)}" if event.supersedes else ""
            return f"{t(event.id)} {t(event.question)} -> {t(event.chosen)}{was}"
        case BlockedRouted():
            reached = t(", ".join(event.reached) or "no unit yet")
            return f"{t(event.finding)} to {t(event.via)}, then {t(event.owner)}; holding {reached}"
        case MessageQuarantined():
            return f"seq {event.original_seq} on {t(event.original_subject)}: {t(event.reason)}"
    return one_line(fields(event))  # every value is text()'s already; the names too


def fields(event: Event) -> str:
    """``name=value`` for every field worth a reader's eye, in the event's own order."""
    parts = []
    for name, raw in event_to_builtins(event).items():
        if name in ENVELOPE or name in HIDDEN or raw in (None, [], {}, ""):
            continue
        # A finding's target is a Target (format_target's); a gate move's is a state name.
        if name == "target" and isinstance(raw, dict):
            shown = format_target(event.target)  # type: ignore[attr-defined]
        else:
            shown = value(raw)
        if shown:
            parts.append(f"{name}={shown}")
    return " ".join(parts)


def value(raw: Any) -> str:
    """One field's value on one short line."""
    if isinstance(raw, dict):
        return _record(raw)
    if isinstance(raw, list):
        return ",".join(_record(item) if isinstance(item, dict) else value(item) for item in raw)
    if isinstance(raw, float):
        return f"{raw:.3g}"
    if isinstance(raw, str):
        return text(raw)
    return str(raw)


def text(raw: object) -> str:
    """A text on one line (no control or bidi character acts: :func:`one_line`), its hashes
    cut as git shows them, cut at :data:`TEXT_LIMIT`."""
    flat = _HASH.sub(r"\1", _SPACE.sub(" ", one_line(raw))).strip()
    return flat if len(flat) <= TEXT_LIMIT else flat[: TEXT_LIMIT - 1] + "…"


def _record(raw: dict[str, Any]) -> str:
    """A nested record named, not dumped: a plan by its slice and units, a check result by
    its check and outcome (``tests:fail``), anything else by its scalar fields."""
    if "slice" in raw and isinstance(raw.get("units"), list):
        units = [text(u.get("id")) for u in raw["units"] if isinstance(u, dict)]
        return f"{text(raw['slice'])}({','.join(units)})"
    name = next((text(raw[k]) for k in _NAMES if isinstance(raw.get(k), str)), None)
    state = next((text(raw[k]) for k in _STATES if isinstance(raw.get(k), str)), None)
    if name is not None:
        cached = "(cached)" if raw.get("cached") is True else ""
        return f"{name}:{state}{cached}" if state else name
    scalars = {
        k: v
        for k, v in raw.items()
        if k not in HIDDEN and isinstance(v, str | int | float | bool) and v != ""
    }
    if len(scalars) > MANY:
        # e.g. every test of a run and its outcome: how many of each says it in one glance
        counts = Counter(value(v) for v in scalars.values())
        if len(counts) < len(scalars):
            return f"{len(scalars)}(" + ",".join(f"{n} {v}" for v, n in counts.items()) + ")"
        return f"{len(scalars)} entries"
    return "{" + ",".join(f"{text(k)}={value(v)}" for k, v in scalars.items()) + "}"


# -- how a record is shown (here, not in render.py: ``tail`` needs no fold) --------------

_RESET = "\x1b[0m"
_COLOURS = {
    "critical": "\x1b[1;31m",
    "high": "\x1b[31m",
    "medium": "\x1b[33m",
    "low": "\x1b[36m",
    "info": "\x1b[2m",
    "kind": "\x1b[1m",
    "dim": "\x1b[2m",
    "error": "\x1b[1;35m",
    "project": "\x1b[34m",
}


class Palette:
    """ANSI colour when writing to a terminal, plain text otherwise."""

    def __init__(self, enabled: bool):
        self.enabled = enabled

    @classmethod
    def for_stream(cls, stream: TextIO = sys.stdout) -> Palette:
        return cls(bool(getattr(stream, "isatty", lambda: False)()))

    def __call__(self, style: str, text: str) -> str:
        if not self.enabled or style not in _COLOURS:
            return text
        return f"{_COLOURS[style]}{text}{_RESET}"


def record_json(record: Record) -> dict[str, Any]:
    """One record as ``tail --json`` prints it: seq, subject, time, kind and the event's fields."""
    head: dict[str, Any] = {
        "seq": record.seq,
        "subject": record.subject,
        "time": record.time.isoformat() if record.time else None,
    }
    if record.event is None:
        head["kind"] = None
        head["error"] = str(record.error)
        return head
    return head | event_to_builtins(record.event)
