"""What a builder command is given and what it answers: the brief and the envelope.

The builder daemon runs a project's ``[build] command`` once per round of a unit. The
command reads one JSON :class:`Brief` on stdin and prints one JSON :class:`BuildEnvelope`
on stdout. Neither is an event: they never reach the log as such. The daemon turns the
envelope into the builder's claims (a commit, a block, a give-up, a usage report) and
into decision facts, so an agent never needs NATS or credentials.

Both documents carry a ``schema`` string (``loopbus.brief.v1``, ``loopbus.envelope.v2``)
so that a change of shape is a new version an agent can check for, like an event tag.
``loopbus.envelope.v2`` added each novel decision's ``autonomy`` class and requires it; a
``v1`` envelope still decodes, and its decisions count as class ``decision`` (an
unstated class is never taken as a harmless one). The brief's ``conflict`` is optional
and new within ``loopbus.brief.v1``: a field a reader may ignore, added where the brief's
existing fields keep their meaning (a builder that ignores it still sees the conflict as a
finding, and its files' markers in the worktree).
Their JSON Schemas (:func:`brief_schema`, :func:`envelope_schema`) are generated from the
Structs and printed in ``docs/agents.md``; a test keeps the two in step.
"""

import re
from typing import Annotated, Any, Literal

import msgspec

from schemas.errors import InvalidValue
from schemas.ids import TOKEN_PATTERN

BRIEF_SCHEMA = "loopbus.brief.v1"
ENVELOPE_SCHEMA = "loopbus.envelope.v2"

DecisionKey = Annotated[str, msgspec.Meta(pattern=TOKEN_PATTERN)]
"""A decision or option id: one token (letters, digits, '_' or '-', at most 64)."""

BuildStatus = Literal[
    "completed", "partial", "blocked", "needs_dependency", "scope_breach", "failed"
]
BUILD_STATUSES: tuple[BuildStatus, ...] = (
    "completed",
    "partial",
    "blocked",
    "needs_dependency",
    "scope_breach",
    "failed",
)
Confidence = Literal["high", "med", "low"]
BuildMode = Literal["long", "normal"]
BUILD_MODES: tuple[BuildMode, ...] = ("long", "normal")

AutonomyClass = Literal["safe", "risky", "decision", "irreversible"]
AUTONOMY_CLASSES: tuple[AutonomyClass, ...] = ("safe", "risky", "decision", "irreversible")
"""The seeds' action classes, least to most consequential: ``safe`` (nothing to undo),
``risky`` (reversible: undone by reverting the unit), ``decision`` (a direction someone
should own), ``irreversible`` (deletes data, migrates, or reaches production). A decision's
class is the higher of what the builder states and what loopbus reads in its options."""
UNSTATED_CLASS: AutonomyClass = "decision"
"""The class of a decision whose builder stated none (a ``loopbus.envelope.v1`` one)."""


# -- the brief (stdin) --------------------------------------------------------------------


class BriefCriterion(msgspec.Struct, frozen=True, kw_only=True):
    """A criterion test the unit must make pass, and the test's source text at base."""

    test: str
    text: str = ""


class BriefFinding(msgspec.Struct, frozen=True, kw_only=True):
    """An open finding the round must address."""

    id: str
    target: str
    severity: str
    criterion: str = ""
    message: str


class BriefOption(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    summary: str = ""


class BriefDecision(msgspec.Struct, frozen=True, kw_only=True):
    """A decision in force for the unit: what was asked, what was chosen, and by whom."""

    decision_id: str
    question: str
    chosen: str
    by: str
    rationale: str = ""


class BriefConflictRegion(msgspec.Struct, frozen=True, kw_only=True):
    """A part of one file the merge driver could not combine: the entity (function, class,
    TOML key …, or ``file``) it is named after, why, and the text of it on each side."""

    kind: str
    name: str
    reason: str
    """``both-modified``, ``modify-delete`` (the unit changed what trunk deleted),
    ``delete-modify``, ``both-added``, ``result-unparseable``, ``duplicate`` or ``binary``."""
    base: str = ""
    unit: str = ""
    trunk: str = ""


class BriefConflictFile(msgspec.Struct, frozen=True, kw_only=True):
    """A file the merge of trunk into the unit left conflicting: its version at the merge
    base, on trunk and in the unit (``None``: absent on that side, or not text), and the
    regions the driver could not combine."""

    path: str
    base: str | None = None
    trunk: str | None = None
    unit: str | None = None
    regions: list[BriefConflictRegion] = []


class BriefConflict(msgspec.Struct, frozen=True, kw_only=True):
    """The unit's head did not merge onto trunk: this round's worktree holds the merge of
    trunk's head into it, what the driver combined combined and each conflicting file with
    conflict markers (``<<<<<<< ours`` is the unit, ``>>>>>>> theirs`` trunk). The adapter
    records the result as a merge commit (parents: ``base`` and ``trunk``)."""

    trunk: str
    """Trunk's head, merged into the unit (the merge commit's second parent)."""
    merge_base: str | None = None
    """The unit's and trunk's common ancestor (``None``: none)."""
    finding: str = ""
    """The ``merge-conflict`` finding the merger raised."""
    files: list[BriefConflictFile] = []


class BriefSuperseded(msgspec.Struct, frozen=True, kw_only=True):
    """A decision that bore on the unit and was superseded since its last round: it is no
    longer in ``decisions`` (its successor is, when that bears on the unit too)."""

    decision_id: str
    question: str
    chosen: str
    """What the superseded decision had chosen (no longer in force)."""
    superseded_by: str
    """The id of the decision record that replaced it."""


class Brief(msgspec.Struct, frozen=True, kw_only=True):
    """Everything a builder command needs for one round of one unit."""

    schema: str = BRIEF_SCHEMA
    project: str
    slice: str
    unit: str
    title: str = ""
    files: list[str] = []
    """The files the unit owns: the only ones it may change."""
    criteria: list[BriefCriterion] = []
    design_ref: str | None = None
    design: str = ""
    """The content of ``design_ref`` at the round's base (empty when none)."""
    base: str
    """The commit the round's worktree starts from (the dispatch base, then the unit's head)."""
    round: int = 1
    findings: list[BriefFinding] = []
    rung: int = 0
    tactic: str = ""
    decisions: list[BriefDecision] = []
    superseded: list[BriefSuperseded] = []
    """Decisions that bore on the unit and were superseded since its last round."""
    lessons: list[str] = []
    """The project's lessons in force, one line each (what failed in earlier slices, the
    round it was caught, the gate that would have caught it sooner), recurring first."""
    problem: str = ""
    """Why the previous answer was refused (a malformed envelope, conflict markers left),
    when this is a retry."""
    conflict: BriefConflict | None = None
    """Set when the unit's merge conflicted with trunk: see :class:`BriefConflict`."""


# -- the envelope (stdout) ----------------------------------------------------------------


class DecisionOption(msgspec.Struct, frozen=True, kw_only=True):
    """One way to settle a novel decision and what it costs."""

    id: DecisionKey
    summary: str = ""
    user_impact: str = ""
    performance: str = ""
    speed: str = ""
    cost: str = ""


class NovelDecision(msgspec.Struct, frozen=True, kw_only=True):
    """A choice the builder met that nothing in its brief settles."""

    decision_id: DecisionKey
    question: str
    options: Annotated[list[DecisionOption], msgspec.Meta(min_length=2)]
    recommended_default: DecisionKey
    confidence: Confidence
    reasoning: str = ""
    autonomy: AutonomyClass | None = None
    """The class the builder gives the choice (required from ``loopbus.envelope.v2``)."""

    def __post_init__(self) -> None:
        ids = [option.id for option in self.options]
        if len(set(ids)) != len(ids):
            raise InvalidValue("options", ids, "every option needs its own id")
        if self.recommended_default not in ids:
            raise InvalidValue(
                "recommended_default",
                self.recommended_default,
                f"name one of the options ({', '.join(ids)})",
            )


class BuildEnvelope(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What a builder command prints on stdout when it ends."""

    schema: Literal["loopbus.envelope.v1", "loopbus.envelope.v2"] = "loopbus.envelope.v1"
    """Omitted, an envelope is read as ``v1`` (what every envelope was before v2)."""
    status: BuildStatus
    summary: str = ""
    novel_decisions: list[NovelDecision] = []
    tokens: Annotated[int, msgspec.Meta(ge=0)] = 0
    subject: str = ""

    def __post_init__(self) -> None:
        if self.schema == "loopbus.envelope.v1":
            return
        for index, decision in enumerate(self.novel_decisions):
            if decision.autonomy is None:
                raise InvalidValue(
                    f"novel_decisions[{index}].autonomy",
                    None,
                    f"a {self.schema} decision states its class: one of "
                    f"{', '.join(AUTONOMY_CLASSES)}",
                )


def stated_class(decision: NovelDecision) -> AutonomyClass:
    """The class the builder gave ``decision``, or :data:`UNSTATED_CLASS` when it gave none."""
    return decision.autonomy if decision.autonomy is not None else UNSTATED_CLASS
    """For ``blocked``: the finding it waits on; for ``needs_dependency``: the sibling unit."""


class EnvelopeProblem(msgspec.Struct, frozen=True, kw_only=True):
    """Why an answer is not an envelope: the field (``$`` for the whole), and what was wrong."""

    field: str
    value: str
    message: str

    def line(self) -> str:
        return f"envelope field {self.field} = {self.value}: {self.message}"


_envelope_decoder = msgspec.json.Decoder(BuildEnvelope)


def decode_envelope(stdout: bytes) -> BuildEnvelope | EnvelopeProblem:
    """The envelope in ``stdout`` (its last non-empty line, or the whole output), or the
    problem naming the field and value."""
    text = stdout.decode("utf-8", "replace").strip()
    if not text:
        return EnvelopeProblem(field="$", value="''", message="printed nothing on stdout")
    candidates = [text]
    last = text.splitlines()[-1].strip()
    if last != text:
        candidates.append(last)  # a command may log above its answer
    problem: EnvelopeProblem | None = None
    for candidate in candidates:
        try:
            return _envelope_decoder.decode(candidate)
        except msgspec.ValidationError as exc:
            problem = _problem(candidate, str(exc))
        except msgspec.DecodeError as exc:
            problem = problem or EnvelopeProblem(
                field="$", value=_short(repr(candidate)), message=f"not JSON ({exc})"
            )
    assert problem is not None
    return problem


def _problem(text: str, error: str) -> EnvelopeProblem:
    # msgspec says "... - at `$.novel_decisions[0].confidence`"; read the value there.
    where = error.rsplit(" - at `", 1)
    path = where[1].rstrip("`") if len(where) == 2 else "$"
    message = where[0]
    inner = re.match(r"^([\w.\[\]]+)=.* is not valid: (.*)$", message)
    if inner:  # an invariant of a (nested) Struct: name its own field
        path, message = f"{path}.{inner[1]}", inner[2]
    value: Any = msgspec.json.decode(text.encode())
    for step in _steps(path):
        try:
            value = value[step]
        except (KeyError, IndexError, TypeError):
            value = None
            break
    return EnvelopeProblem(
        field=path, value=_short(msgspec.json.encode(value).decode()), message=message
    )


def _steps(path: str) -> list[str | int]:
    steps: list[str | int] = []
    for part in path.removeprefix("$").replace("[", ".[").split("."):
        if not part:
            continue
        steps.append(int(part[1:-1]) if part.startswith("[") else part)
    return steps


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def brief_schema() -> dict[str, Any]:
    """The JSON Schema of the brief, generated from :class:`Brief`."""
    return msgspec.json.schema(Brief)


def envelope_schema() -> dict[str, Any]:
    """The JSON Schema of the envelope, generated from :class:`BuildEnvelope`."""
    return msgspec.json.schema(BuildEnvelope)
