"""The dispatcher's effects: the reads its decision asks its shell for, and the boot check.

Each read is reported back under its key (see :func:`.decide.reads_name`), and the step
that asked is decided again with it; the key names what the read answers, so a read is
made once while it is kept.

* :class:`ReadCriteria`: the pending criteria trunk declares, to answer a plan submission;
* :class:`ReadTrunk`: trunk's commit, to dispatch a unit (one attempt) against;
* :class:`ReadUnit`: a unit's configured commands and changed files, to complete its entry;
* :class:`Boot`: the boot check on trunk, before an accepted slice closes.
"""

from __future__ import annotations

from typing import TypeAlias

from projections.intents import Effect, IntentOf
from schemas.project_config import BOOT_CHECK

CRITERIA = "criteria"
TRUNK = "trunk"
UNIT_READS = "unit-reads"


class ReadCriteria(Effect, frozen=True, tag="dispatcher.read_criteria.v1"):
    """Read the pending criteria trunk declares (reported as a ``Criteria``)."""

    submission: str

    @property
    def key(self) -> str:
        return f"{self.project}:{CRITERIA}:{self.submission}"


class ReadTrunk(Effect, frozen=True, tag="dispatcher.read_trunk.v1"):
    """Read trunk's commit (reported as a ``TrunkRead``) for one dispatch of ``unit``."""

    accepted: str
    unit: str
    attempt: int

    @property
    def key(self) -> str:
        return f"{self.project}:{TRUNK}:{self.accepted}:{self.unit}:{self.attempt}"


class ReadUnit(Effect, frozen=True, tag="dispatcher.read_unit.v1"):
    """Read a unit's configured commands and files changed ``base``..``head`` (reported as
    ``UnitReads``) for the run-record entry of dispatch ``dispatch``."""

    dispatch: str
    base: str | None
    head: str

    @property
    def key(self) -> str:
        return f"{self.project}:{UNIT_READS}:{self.dispatch}"


class Boot(Effect, frozen=True, tag="dispatcher.boot.v1"):
    """Run the boot check on trunk for the slice accepted as ``accepted`` (reported as a
    ``BootResult``)."""

    accepted: str

    @property
    def key(self) -> str:
        return f"{self.project}:{BOOT_CHECK}:{self.accepted}"


DispatcherEffect = ReadCriteria | ReadTrunk | ReadUnit | Boot
"""Every effect the dispatcher asks for."""

DispatcherIntent: TypeAlias = IntentOf[DispatcherEffect]
"""What the dispatcher may ask for (``decide``, ``perform``): publishing, and its own effects."""
