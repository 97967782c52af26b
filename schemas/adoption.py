"""The adopted configuration: which ``loopbus.toml`` judges trunk, and who said so.

A commit must never choose how it is judged. Trunk's gates (trunk runs, merge candidates,
an outside push) are run with the configuration an operator adopted, never with the
``loopbus.toml`` of the commit being judged, whether or not trunk has ever been green.

* :class:`ConfigAdopted` (a fact) records an adoption: the file's text, its git blob id
  and sha256 digest, the commit it came from, who adopted it and why — ``first-start``
  (``loopbus up`` starting on a project with no adoption yet, the operator's act),
  ``operator`` (an operator's :class:`ConfigAdopt` claim, which the merger turned into
  this fact), or ``merge`` (a unit's allowed edit — its own criteria cleared from
  ``pending``, a check added, a parameter tightened — landed through the merger, having
  been judged itself under the adopted configuration).
* :class:`ConfigAdopt` (a claim) is the operator's explicit act, ``loopbus config adopt``.

Both live on one subject family, ``config``: the fact on ``loop.<p>.config.adopted`` (a
first-start adoption is published only while that subject is empty, so two starts cannot
both adopt), the claim under the operator's own claim subject.
"""

import hashlib
import re
from typing import Literal

from schemas.envelope import EventBase
from schemas.gates import GitSha
from schemas.ids import Token

AdoptionWhy = Literal["first-start", "operator", "merge", "revert", "contract", "proposal"]
"""``revert``: a merge that adopted its allowed edit was reverted (trunk red after it), and
the configuration in force before it is adopted again with the revert. ``contract``: a
slice's contract landed (schemas/contract.py); ``proposal``: an operator's approved
configuration proposal landed."""
ADOPTION_WHYS: tuple[AdoptionWhy, ...] = (
    "first-start",
    "operator",
    "merge",
    "revert",
    "contract",
    "proposal",
)

ADOPTED_SUBJECT = "config.adopted"


FULL_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?\Z")
"""An adoption names its commit in full: a short sha or a branch could resolve to another
commit by the time it is read (a push, or a crafted commit sharing the prefix)."""


def config_digest(text: str) -> str:
    """The digest an adoption and every run judged with it carry: sha256 of the text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class ConfigAdopted(EventBase, frozen=True, kw_only=True, tag="config.adopted.v1"):
    """From now on ``text`` (``loopbus.toml`` of ``commit``, blob ``blob``, sha256
    ``digest``) judges trunk. ``by`` is who adopted it (the operator's principal, the user
    who ran ``loopbus up``, or ``merger`` for a merge); ``cause`` the claim or the trunk
    advance it answers; ``unit`` the unit whose allowed edit a ``merge`` adoption takes."""

    commit: GitSha
    blob: GitSha
    digest: str
    text: str
    why: AdoptionWhy
    by: str
    unit: Token | None = None
    cause: str | None = None
    note: str = ""

    def subject_suffix(self) -> str:
        return ADOPTED_SUBJECT


class ConfigAdopt(EventBase, frozen=True, kw_only=True, tag="config.adopt.v1"):
    """ "Judge trunk with the ``loopbus.toml`` of ``commit`` from now on": an operator's
    claim, naming the commit by its full sha (``loopbus config adopt`` fills in trunk as the
    merger last gated it when none is given). The merger answers it with
    :class:`ConfigAdopted`, or refuses it with a finding (a role other than operator, a
    commit not named in full or not in the repository, a file that is missing or invalid).
    The field is loose on purpose, so that a malformed claim is refused with a finding."""

    commit: str = ""
    why: str = ""

    def subject_suffix(self) -> str:
        return "config.adopt"
