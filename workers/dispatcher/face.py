"""The dispatcher's public face: what the front (the CLI, the page) may use of it.

``loopbus plan submit`` checks a plan the way the dispatcher will, before it is sent, so
an operator sees the refusal at once instead of as a finding later.
"""

from workers.dispatcher.answers import claim_problems

__all__ = ["claim_problems"]
