"""The units daemon's public face: what the front (the CLI, the page) may use of it.

A unit report's answer (its transition or its refusal) has an id derived from the report
with :data:`ANSWER_SALT`, so ``loopbus unit …`` can wait for exactly that answer.
"""

from workers.units.answer_ids import ANSWER_SALT

__all__ = ["ANSWER_SALT"]
