"""A slice's contract changes, and the operator's configuration proposals.

A plan may bring the contract its units will be judged by (:class:`ContractChanges`): new
acceptance-criterion tests (:class:`NewCriterion`, a pytest node id and the test's source),
new checks (:class:`NewCheck`, the fields of a ``[[check]]`` table) and capabilities. The
plan is a claim; nothing of it reaches trunk until the merger, trunk's only writer, lands
it as one system commit, adopts the ``loopbus.toml`` that commit carries and records
:class:`ContractLanded`. The dispatcher holds the slice's units until then, so every unit
is dispatched on a trunk that already holds its criteria (frozen for it, pending on trunk).

The operator changes what a unit may never change (``[build]``, ``[review]``, ``[plan]``
commands, or a gate the ratchet proposed) with a :class:`ConfigProposal` (the whole new
``loopbus.toml``) and a :class:`ConfigApprove`; the merger lands an approved proposal the
same way and records :class:`ConfigLanded`. Both claims are kept whoever makes them, so
the merger answers each: an agent's is refused with a finding.
"""

import msgspec

from schemas.envelope import EventBase
from schemas.gates import GitSha
from schemas.ids import Token

CONTRACT_TRAILER = "Loopbus-Contract"
"""The trailer of a contract commit (its value: the slice)."""
PROPOSAL_TRAILER = "Loopbus-Proposal"
"""The trailer of a commit landing an approved configuration proposal (its value: the id)."""


class NewCheck(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A check a contract adds: the fields of a ``[[check]]`` table in ``loopbus.toml``
    (``timeout`` in seconds). A contract adds checks only; an id that exists is refused."""

    id: Token
    command: str
    parser: str = "exit-code"
    timeout: float | None = None
    reads: list[str] | None = None
    env: dict[str, str] = {}
    pending: list[str] = []


class NewCriterion(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """An acceptance criterion a contract adds: the pytest node id
    (``tests/test_x.py::test_y``) and the test function's source, with its own imports.
    It is written into its file (created, or appended to a test file) and added to the
    ``pending`` list of ``check`` (default: the first pytest check)."""

    test: str
    text: str
    check: str = ""


class ContractChanges(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What a slice adds to the contract before any of its units starts."""

    checks: tuple[NewCheck, ...] = ()
    criteria: tuple[NewCriterion, ...] = ()
    capabilities: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.checks or self.criteria or self.capabilities)


class ContractLanded(EventBase, frozen=True, kw_only=True, tag="contract.landed.v1"):
    """The merger landed slice ``slice``'s contract as the system commit ``commit`` on
    trunk (from ``previous``), and adopted its ``loopbus.toml`` (digest ``config``) in the
    same batch; ``accepted`` is the plan acceptance it answers. The slice's units may be
    dispatched from now on."""

    slice: Token
    commit: GitSha
    tree: GitSha
    previous: GitSha
    accepted: str
    config: str
    criteria: list[str] = []
    checks: list[str] = []

    def subject_suffix(self) -> str:
        return "trunk"


class ConfigProposal(EventBase, frozen=True, kw_only=True, tag="config.proposal.v1"):
    """An operator's proposal: "trunk's ``loopbus.toml`` should be ``text``". It may change
    the ``[build]``, ``[review]`` and ``[plan]`` tables and add checks; the merger lands it
    once an operator approves it (:class:`ConfigApprove`). Fields are loose on purpose: a
    malformed proposal is refused with a finding, not dropped."""

    text: str = ""
    why: str = ""

    def subject_suffix(self) -> str:
        return "config.proposal"


class ConfigApprove(EventBase, frozen=True, kw_only=True, tag="config.approve.v1"):
    """An operator approves the configuration proposal ``proposal`` (``loopbus approve
    --config``); the merger lands it or refuses the approval with a finding."""

    proposal: str = ""
    why: str = ""

    def subject_suffix(self) -> str:
        return "config.approve"


class ConfigLanded(EventBase, frozen=True, kw_only=True, tag="config.landed.v1"):
    """The merger landed the approved proposal ``proposal`` as the system commit
    ``commit`` (from ``previous``) and adopted its file (digest ``config``) in the same
    batch; ``approval`` is the approval it answers."""

    proposal: str
    approval: str
    commit: GitSha
    tree: GitSha
    previous: GitSha
    config: str

    def subject_suffix(self) -> str:
        return "trunk"
