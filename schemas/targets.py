"""Typed finding targets: what a finding is about decides what anchoring means.

Only a code target has a path and lines; the others name a plan, a record, a check, a
budget, a profile or a decision. Each is its own Struct, so a code target without a path,
or with a line range that ends before it starts, cannot be constructed or decoded.
The text form (``code:src/app.py:10-14``) is what the CLI accepts and prints.
"""

from typing import Annotated

import msgspec

from schemas.errors import InvalidValue

Line = Annotated[int, msgspec.Meta(ge=1)]

MAX_LINE = 2**31 - 1
"""The largest line number loopbus accepts from a person (``report finding --target``) or
exports (SARIF): consumers store a line as a 32-bit integer (the SARIF SDK's ``int``), and no
source file has more lines. Not a decode constraint: findings already on a log keep decoding
whatever their lines, so readers that export one clamp or drop what lies beyond."""


def inside_repository(path: str) -> str | None:
    """``path`` as a repository-relative path (leading ``./`` dropped, surrounding blanks
    trimmed), or ``None`` when it is empty, absolute, or climbs out with ``..``. One rule for
    a plan's ``files``, a finding's code target and a decision's ``--file``."""
    cleaned = path.strip()
    while cleaned.startswith("./"):
        cleaned = cleaned[2:]
    if not cleaned or cleaned.startswith("/") or ".." in cleaned.split("/"):
        return None
    return cleaned


def _require(field: str, value: str) -> None:
    # Constructors do not apply Meta constraints (only decoding does); without this an
    # empty target could be built in code, published, and then fail to decode on replay.
    if not value:
        raise InvalidValue(field, value, "must not be empty")


NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]


class CodeTarget(msgspec.Struct, frozen=True, tag_field="type", tag="code"):
    """Lines ``start``..``end`` (1-based, inclusive) of ``path`` relative to the repo root."""

    path: NonEmpty
    start: Line
    end: Line

    def __post_init__(self) -> None:
        # Constructors do not apply Meta constraints (only decoding does), so the
        # invariants that make a code target meaningful are checked here for both paths.
        if not self.path:
            raise InvalidValue("target.path", self.path, "a code target needs a file path")
        if self.start < 1:
            raise InvalidValue("target.start", self.start, "lines are numbered from 1")
        if self.end < self.start:
            raise InvalidValue(
                "target.end", self.end, f"a line range must not end before it starts ({self.start})"
            )


class PlanTarget(msgspec.Struct, frozen=True, tag_field="type", tag="plan"):
    """A slice plan (and optionally one item of it): where blocked-by-fact findings land."""

    slice: NonEmpty
    item: str = ""

    def __post_init__(self) -> None:
        _require("target.slice", self.slice)


class RecordTarget(msgspec.Struct, frozen=True, tag_field="type", tag="record"):
    """Any addressable record on the log, by id (an event id, a unit id, a run record)."""

    id: NonEmpty

    def __post_init__(self) -> None:
        _require("target.id", self.id)


class CheckTarget(msgspec.Struct, frozen=True, tag_field="type", tag="check"):
    """A gate check, by check id."""

    check: NonEmpty

    def __post_init__(self) -> None:
        _require("target.check", self.check)


class BudgetTarget(msgspec.Struct, frozen=True, tag_field="type", tag="budget"):
    """A machinery budget by name (``gate_wall_clock``, ``tokens_per_unit`` …)."""

    budget: NonEmpty

    def __post_init__(self) -> None:
        _require("target.budget", self.budget)


class ProfileTarget(msgspec.Struct, frozen=True, tag_field="type", tag="profile"):
    """A capability profile by name (``cli``, ``service:http`` …)."""

    profile: NonEmpty

    def __post_init__(self) -> None:
        _require("target.profile", self.profile)


class DecisionTarget(msgspec.Struct, frozen=True, tag_field="type", tag="decision"):
    """A durable decision record, by id."""

    decision: NonEmpty

    def __post_init__(self) -> None:
        _require("target.decision", self.decision)


Target = (
    CodeTarget
    | PlanTarget
    | RecordTarget
    | CheckTarget
    | BudgetTarget
    | ProfileTarget
    | DecisionTarget
)

TARGET_TYPES = ("code", "plan", "record", "check", "budget", "profile", "decision")


def format_target(target: Target) -> str:
    """The canonical text form; also the target part of a finding's convergence key."""
    match target:
        case CodeTarget(path=path, start=start, end=end):
            return f"code:{path}:{start}-{end}"
        case PlanTarget(slice=slice_id, item=item):
            return f"plan:{slice_id}:{item}" if item else f"plan:{slice_id}"
        case RecordTarget(id=record_id):
            return f"record:{record_id}"
        case CheckTarget(check=check):
            return f"check:{check}"
        case BudgetTarget(budget=budget):
            return f"budget:{budget}"
        case ProfileTarget(profile=profile):
            return f"profile:{profile}"
        case DecisionTarget(decision=decision):
            return f"decision:{decision}"
    raise AssertionError(f"unhandled target {target!r}")  # pragma: no cover


def parse_target(text: str) -> Target:
    """Parse the text form; raise :class:`InvalidValue` naming the expected shape."""
    kind, sep, rest = text.partition(":")
    if not sep or not rest:
        raise InvalidValue(
            "target", text, f"expected TYPE:VALUE with TYPE one of {', '.join(TARGET_TYPES)}"
        )
    try:
        match kind:
            case "code":
                return _parse_code(text, rest)
            case "plan":
                slice_id, _, item = rest.partition(":")
                return PlanTarget(slice=slice_id, item=item)
            case "record":
                return RecordTarget(id=rest)
            case "check":
                return CheckTarget(check=rest)
            case "budget":
                return BudgetTarget(budget=rest)
            case "profile":
                return ProfileTarget(profile=rest)
            case "decision":
                return DecisionTarget(decision=rest)
    except msgspec.ValidationError as exc:  # pragma: no cover - constructors do not validate
        raise InvalidValue("target", text, str(exc)) from exc
    raise InvalidValue("target", text, f"TYPE must be one of {', '.join(TARGET_TYPES)}")


def _parse_code(text: str, rest: str) -> CodeTarget:
    path, sep, lines = rest.rpartition(":")
    if not sep or not path:
        raise InvalidValue("target", text, "a code target is code:PATH:START-END or code:PATH:LINE")
    first, dash, last = lines.partition("-")
    if not first.isdigit() or (dash and not last.isdigit()):
        raise InvalidValue("target", text, "line numbers must be whole numbers, e.g. code:a.py:3-7")
    start = int(first)
    end = int(last) if dash else start
    if start < 1:
        raise InvalidValue("target", text, "lines are numbered from 1")
    return CodeTarget(path=path, start=start, end=end)
