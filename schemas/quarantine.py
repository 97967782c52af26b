"""The record of a message on the log that does not decode.

The log is immutable (DenyDelete), so the bad message stays where it is; this record,
written once per bad sequence on its own subject, is how every consumer skips it, how an
auditor finds it, and how it is reported as a finding.
"""

from __future__ import annotations

import base64

from loopbus.schemas.envelope import Actor, EventBase
from loopbus.schemas.errors import InvalidEvent


class MessageQuarantined(EventBase, frozen=True, kw_only=True, tag="message.quarantined.v1"):
    """Stream sequence ``original_seq`` could not be decoded; ``data_b64`` holds its bytes."""

    original_seq: int
    original_subject: str
    reason: str
    field: str | None = None
    data_b64: str = ""

    def subject_suffix(self) -> str:
        return f"quarantine.{self.original_seq}"

    @classmethod
    def of(
        cls, project: str, seq: int, subject: str, data: bytes, error: InvalidEvent | None
    ) -> MessageQuarantined:
        """The quarantine record of the message stored at ``seq`` on ``subject``."""
        return cls(
            project=project,
            actor=Actor(role="system", principal="projector"),
            original_seq=seq,
            original_subject=subject,
            reason=str(error) if error else "undecodable",
            field=error.field if error else None,
            data_b64=base64.b64encode(data).decode(),
        )
