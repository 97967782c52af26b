"""Names in leasing: who holds a lease, and an item's subject token.

Apart from :mod:`.decide` because the kernel's project sharing needs them too, and
:mod:`.decide` imports the kernel.
"""

from __future__ import annotations

import hashlib
import os

from schemas import Actor
from schemas.ids import new_id


def holder_name(actor: Actor) -> str:
    """This process's name as a lease holder: its principal, pid and a random tail (two
    replicas on one host share a principal; a restarted one must not pass for the old)."""
    return f"{actor.principal}:{os.getpid()}:{new_id()[-6:]}"


def item_token(key: str) -> str:
    """A subject token for any item key (an effect key may hold ``:`` and be long)."""
    return hashlib.sha256(key.encode()).hexdigest()[:32]
