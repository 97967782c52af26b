"""The record of a message on the log that does not decode.

The log is immutable (DenyDelete), so the bad message stays where it is, addressable by
its stream sequence; this record, written once per bad sequence on its own subject, is
how every consumer skips it, how an auditor finds it, and how it is reported as a finding.
It carries a bounded reason and the first :data:`EXCERPT_BYTES` bytes of the message, never
the whole of it: a record holding a near-limit message would itself be over the limit.
"""

import base64
import binascii
from typing import Annotated, Any

import msgspec

from schemas import limits
from schemas.envelope import Actor, EventBase
from schemas.ids import Token, answer_id, is_token
from schemas.subjects import QUARANTINE, parse_subject

EXCERPT_BYTES = 1024
"""How much of the original message a record keeps (base64 in ``excerpt_b64``)."""

QUARANTINE_TOKEN = QUARANTINE
"""The subject token after the project: ``loop.<project>.quarantine.<seq>``."""

UNKNOWN_PROJECT = "_unknown"
"""Where the record of a message whose subject names no valid project is filed."""

Reason = Annotated[str, msgspec.Meta(max_length=limits.MAX_REASON_CHARS)]
FieldPath = Annotated[str, msgspec.Meta(max_length=limits.MAX_FIELD_CHARS)]
Excerpt = Annotated[str, msgspec.Meta(max_length=4 * (EXCERPT_BYTES // 3 + 1))]


class MessageQuarantined(EventBase, frozen=True, kw_only=True, tag="message.quarantined.v2"):
    """Stream sequence ``original_seq`` could not be decoded, for ``reason``.

    ``size`` is the original's length in bytes and ``excerpt_b64`` its first bytes; the
    whole message is read back from the log by its sequence.
    """

    original_seq: Annotated[int, msgspec.Meta(ge=1)]
    original_subject: str
    reason: Reason
    field: FieldPath | None = None
    size: Annotated[int, msgspec.Meta(ge=0)] = 0
    excerpt_b64: Excerpt = ""
    v: int = 2

    def subject_suffix(self) -> str:
        return f"{QUARANTINE_TOKEN}.{self.original_seq}"

    @property
    def excerpt(self) -> bytes:
        """The first bytes of the original message."""
        return base64.b64decode(self.excerpt_b64)


class FoldQuarantined(EventBase, frozen=True, kw_only=True, tag="fold.quarantined.v1"):
    """The fold ``fold`` raised on the event at stream sequence ``original_seq``.

    That event is skipped for that fold alone — by every daemon that keeps the fold and by
    ``replay`` alike, so a view still equals a replay — and every other fold, and every
    later event, is folded as usual. One record per (sequence, fold), on its own subject.
    """

    original_seq: Annotated[int, msgspec.Meta(ge=1)]
    original_subject: FieldPath
    original_kind: FieldPath
    fold: Token
    reason: Reason

    def subject_suffix(self) -> str:
        return f"{QUARANTINE_TOKEN}.{self.original_seq}.{self.fold}"


def fold_quarantine_record(
    subject: str, seq: int, event: EventBase, fold: str, error: BaseException, actor: Actor
) -> FoldQuarantined:
    """The record of ``fold`` raising ``error`` on ``event`` (stored at ``seq``). Its id is
    derived from the event and the fold, so every daemon that hits the same failure
    publishes the same record."""
    return FoldQuarantined(
        project=event.project,
        actor=actor,
        id=answer_id(event.id, f"fold-quarantined:{fold}"),
        original_seq=seq,
        original_subject=limits.bounded(subject, limits.MAX_FIELD_CHARS),
        original_kind=limits.bounded(str(getattr(event, "kind", "?")), limits.MAX_FIELD_CHARS),
        fold=fold,
        reason=limits.bounded(f"{type(error).__name__}: {error}"),
    )


def is_quarantine_subject(subject: str) -> bool:
    """True for ``loop.<project>.quarantine.<seq>[.<fold>]``: a broken record is never
    quarantined again, and a fold failing on a record is never recorded again."""
    parsed = parse_subject(subject)
    return parsed is not None and parsed.quarantined


def quarantine_record(
    subject: str, seq: int, data: bytes, error: BaseException | str | None, actor: Actor
) -> MessageQuarantined:
    """The record for the message at ``seq`` on ``subject`` that failed with ``error``.

    Filed under the subject's project when it names a valid one, else under
    :data:`UNKNOWN_PROJECT`; the reason and the field are cut to their bounds whatever the
    error carried.
    """
    parsed = parse_subject(subject)
    project = parsed.project if parsed and is_token(parsed.project) else UNKNOWN_PROJECT
    field = getattr(error, "field", None)
    return MessageQuarantined(
        project=project,
        actor=actor,
        original_seq=seq,
        original_subject=subject,
        reason=limits.bounded(str(error) if error else "undecodable"),
        field=limits.bounded(field, limits.MAX_FIELD_CHARS) if isinstance(field, str) else None,
        size=len(data),
        excerpt_b64=base64.b64encode(data[:EXCERPT_BYTES]).decode(),
    )


def upcast_quarantined_v1(doc: dict[str, Any]) -> dict[str, Any]:
    """v1 kept the whole original in ``data_b64`` and an unbounded reason: keep its size and
    an excerpt, and cut the reason, so that every v1 record still decodes."""
    doc = dict(doc)
    try:
        original = base64.b64decode(str(doc.pop("data_b64", "")))
    except (binascii.Error, ValueError):
        original = b""
    doc["size"] = len(original)
    doc["excerpt_b64"] = base64.b64encode(original[:EXCERPT_BYTES]).decode()
    if isinstance(doc.get("reason"), str):
        doc["reason"] = limits.bounded(doc["reason"])
    if isinstance(doc.get("field"), str):
        doc["field"] = limits.bounded(doc["field"], limits.MAX_FIELD_CHARS)
    doc["kind"] = "message.quarantined.v2"
    doc["v"] = 2
    return doc
