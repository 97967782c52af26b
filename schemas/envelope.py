"""The envelope every event shares: who, when, which project, which version.

Every event kind subclasses :class:`EventBase` with an explicit versioned tag
(``tag="finding.raised.v1"``). The tag is what is stored on the log, so renaming a class
never changes what is on disk; a new shape of an existing kind gets a new tag and an
upcaster in :mod:`schemas.upcasters`.
"""

from typing import Literal

import msgspec

from schemas.ids import EventId, Token, UtcTime, new_id, utcnow

Role = Literal[
    "system",  # a loopbus daemon: the only role whose events are facts
    "operator",  # a person deciding scope, loosening, misalignment
    "planner",
    "builder",
    "reviewer",
    "investigator",
    "standards",
]
"""Who is speaking. Facts come only from ``system``; every other role makes claims."""

ROLES: tuple[Role, ...] = (
    "system",
    "operator",
    "planner",
    "builder",
    "reviewer",
    "investigator",
    "standards",
)


class Actor(msgspec.Struct, frozen=True, forbid_unknown_fields=False):
    """The role speaking and the principal (a daemon instance, an agent, a person) behind it."""

    role: Role
    principal: str


class EventBase(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    tag_field="kind",
    omit_defaults=False,
):
    """Common envelope. ``id`` is a ULID so ids sort by time; ``at`` is always UTC-aware."""

    project: Token
    actor: Actor
    id: EventId = msgspec.field(default_factory=new_id)
    at: UtcTime = msgspec.field(default_factory=utcnow)
    v: int = 1

    def subject_suffix(self) -> str:
        """The subject tokens after ``loop.<project>.``; each kind overrides this."""
        raise NotImplementedError(f"{type(self).__name__} must define subject_suffix()")

    @property
    def kind(self) -> str:
        """The versioned tag this event is stored under."""
        return str(type(self).__struct_config__.tag)
