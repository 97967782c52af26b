"""Lease facts: which replica of a daemon holds a work item, for how long, and when it lapsed.

Replicas of one daemon (two gate runners, two builders) split their work by leasing each
item on the log. Every event of one item lives on its own subject,
``lease.<work>.<item>``, and is published conditionally on that subject's last sequence,
so of two replicas taking the same item at once exactly one is stored. A lease lives
``ttl_s`` seconds from its last taking or renewal (the event's ``at``); the holder renews
it while the work runs. A replica that finds a lease past its time takes the item over
with a :class:`LeaseTaken` that names the lapsed holder: the lapse is that event.

Leases are facts: only the system credential may publish on a fact subject, and every
fold skips a lease event from any other role (a forgery), so an agent can neither take
nor release one.
"""

from datetime import datetime
from typing import Annotated, Literal

import msgspec

from schemas.envelope import EventBase
from schemas.ids import Token

Work = Literal["gate", "check", "build", "review", "investigation", "project"]
"""The kinds of work item replicas split: a gate-run ask, one check's run on one tree and
configuration (its cache key), a builder round, a review, an investigation, or a whole
project (``project``: the item is a daemon's name, and its holder is the one replica of
that daemon that acts on the project; see :mod:`workers.leases.share`)."""

WORKS: tuple[Work, ...] = ("gate", "check", "build", "review", "investigation", "project")

Seconds = Annotated[float, msgspec.Meta(gt=0, le=86400)]

Released = Literal["done", "given-up", "lost", "overran"]
"""How a holder let a lease go: the work ended (``done``), the holder stopped before it
ended (``given-up``: another replica may take it at once), a renewal found the lease
already taken over (``lost``: said for the record only), or the work was still running at
the lease's deadline and was cancelled (``overran``: another replica takes it; the one
that overran leaves it to the others for one lease lifetime)."""


class LeaseTaken(EventBase, frozen=True, kw_only=True, tag="lease.taken.v1"):
    """``holder`` (one daemon process) took ``item`` for ``ttl_s`` seconds.

    ``lapsed`` names the previous holder when its lease ran out unrenewed (it stopped or
    died mid-item) and this taking is the takeover.

    ``deadline_s``: the holder gives the item up this many seconds after this taking,
    renewed or not (derived from the work's own time limits, plus a margin), so a holder
    that is alive but stuck cannot keep the item for ever; past it, another replica may
    take the item over even while renewals still arrive. ``None`` (every taking written
    before deadlines existed): no deadline."""

    work: Work
    item: Token
    holder: str
    ttl_s: Seconds
    what: str = ""
    """A short human description of the item (a commit and unit, a unit and round)."""
    lapsed: str | None = None
    deadline_s: Seconds | None = None

    def subject_suffix(self) -> str:
        return f"lease.{self.work}.{self.item}"


class LeaseRenewed(EventBase, frozen=True, kw_only=True, tag="lease.renewed.v1"):
    """``holder`` still works on ``item``: its lease lives ``ttl_s`` more seconds, but not
    past ``deadline`` (the taking's, repeated so a reader of the last event alone sees it;
    the fold keeps the taking's)."""

    work: Work
    item: Token
    holder: str
    ttl_s: Seconds
    deadline: datetime | None = None

    def subject_suffix(self) -> str:
        return f"lease.{self.work}.{self.item}"


class LeaseReleased(EventBase, frozen=True, kw_only=True, tag="lease.released.v1"):
    """``holder`` let ``item`` go (see :data:`Released`)."""

    work: Work
    item: Token
    holder: str
    how: Released = "done"

    def subject_suffix(self) -> str:
        return f"lease.{self.work}.{self.item}"


LeaseEvent = LeaseTaken | LeaseRenewed | LeaseReleased
