"""The investigator daemon's effects: what its decision asks its shell to do.

One effect: run the investigator command on a requested investigation's evidence. Its key
is the request's id, so a request is investigated once per process however often asked.
"""

from __future__ import annotations

from typing import TypeAlias

from projections import investigations as inv
from projections.intents import Effect, IntentOf

INVESTIGATE = "investigate"
"""The key prefix of :class:`Investigate`."""


class Investigate(Effect, frozen=True, tag="investigator.investigate.v1"):
    """Investigate ``view`` (a copy of the trigger's view: the fold goes on mutating its
    own)."""

    view: inv.TriggerView

    @property
    def key(self) -> str:
        return f"{INVESTIGATE}:{self.view.requested}"


InvestigatorEffect = Investigate
"""Every effect the investigator asks for."""

InvestigatorIntent: TypeAlias = IntentOf[InvestigatorEffect]
"""What the investigator may ask for (``decide``, ``perform``): publishing, and its own effects."""
