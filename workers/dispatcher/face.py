"""The dispatcher's public face: what the front (the CLI, the page) may use of it.

``loopbus plan submit`` checks a plan the way the dispatcher will, before it is sent, so
an operator sees the refusal at once instead of as a finding later; it waits for the
dispatcher's health beacon, named ``NAME``.
"""

from workers.dispatcher.answers import claim_problems
from workers.dispatcher.name import NAME

__all__ = ["NAME", "claim_problems"]
