"""The front's one way onto the log: a claim.

A command publishes what an operator or an agent says (a report, an approval, a plan, a
choice) and the system's daemons turn it into facts or refusals. The front never speaks
for the system: a command handed a system fact refuses it here, before it reaches the
server (whose permissions would refuse it too, with a less useful message). Daemons
publish through their kernel (``workers/kernel``); ``tests/architecture/test_publishing.py``
holds both rules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from loopbus.errors import LoopbusError

if TYPE_CHECKING:
    from bus import Ack, Bus
    from schemas import Event


async def publish_claim(bus: Bus, claim: Event) -> Ack:
    """Publish ``claim`` and return where it was stored; :class:`LoopbusError` when it is a
    fact (an event only the system publishes)."""
    from schemas.authority import standing  # the command's own imports stay light

    if standing(claim) == "fact":
        raise LoopbusError(
            f"{claim.kind} by {claim.actor.role} is a fact only the system's daemons publish; "
            "a command publishes claims (run it with an operator's or an agent's credential)"
        )
    return await bus.publish(claim)
