"""Shipping a slice: trunk's history scanned for secrets, a PR bundle, the ship command.

Facts only, all published by the shipper daemon (docs/ship.md):

* :class:`TrunkScanned` — the commits reachable from ``tip`` not reachable from an earlier
  scan's tip were scanned for credentials (``commits`` of them); each credential found is a
  finding published in the same atomic batch (``findings``). History is scanned, not only
  the tree: a secret added in one commit and deleted in the next is still in every clone.
* :class:`SliceBundled` — a closed slice became a branch, an annotated tag, a PR
  description and a ``git bundle`` file (with its sha256).
* :class:`ShipCommandRan` — the project's ``[ship] command`` was run on a bundle, and how
  it ended.

Subjects: ``trunkscan`` and ``ship.<slice>`` (never ``slice.<slice>``, whose sequence the
dispatcher's conditional publishes are keyed on).
"""

from typing import Annotated, Literal

import msgspec

from schemas.envelope import EventBase
from schemas.ids import EventId, Token

Count = Annotated[int, msgspec.Meta(ge=0)]
Sha = Annotated[str, msgspec.Meta(pattern=r"^[0-9a-f]{40}([0-9a-f]{24})?$(?!\n)")]

SECRET_CRITERION = "no-secrets-in-trunk"
"""The criterion of a finding about a credential in trunk's tree or history: while one is
open (neither resolved nor dismissed by an operator) the dispatcher starts no unit."""


class TrunkScanned(EventBase, frozen=True, kw_only=True, tag="trunk.scanned.v1"):
    """Every commit reachable from ``tip`` and from no earlier scanned tip was scanned."""

    trunk: str
    tip: Sha
    commits: Count
    moves: Count = 0
    """How many trunk-moving facts the scan answered (it is due again when there are more)."""
    findings: list[EventId] = []

    def subject_suffix(self) -> str:
        return "trunkscan"


class SliceBundled(EventBase, frozen=True, kw_only=True, tag="ship.bundled.v1"):
    """A closed slice as a branch and annotated tag at ``commit``, a PR description and a
    ``git bundle`` (``bundle``, ``sha256``) holding both refs."""

    slice: Token
    commit: Sha
    branch: str
    tag: str
    bundle: str
    sha256: Annotated[str, msgspec.Meta(pattern=r"^[0-9a-f]{64}$(?!\n)")]
    description: str
    cause: EventId

    def subject_suffix(self) -> str:
        return f"ship.{self.slice}"


ShipOutcome = Literal["pass", "fail", "error"]


class ShipCommandRan(EventBase, frozen=True, kw_only=True, tag="ship.command_ran.v1"):
    """The ``[ship] command`` ran on the bundle ``cause``: ``pass`` (exit 0), ``fail`` (it
    exited non-zero) or ``error`` (it could not start, or was killed at its timeout).
    ``output`` is the tail of what it printed (a draft PR's address, say)."""

    slice: Token
    command: str
    outcome: ShipOutcome
    exit_code: int | None = None
    output: str = ""
    cause: EventId

    def subject_suffix(self) -> str:
        return f"ship.{self.slice}"
