"""Explicit upcasters: old stored shapes are rewritten into current ones on decode.

When a kind's shape changes, it gets a new tag (``foo.v2``) and an entry here mapping the
old tag to a function that turns the old document into the new one. Old events therefore
never fail to decode, and no class is ever renamed under data already on disk.
The mechanism is tested in ``tests/schemas/test_events.py``; every entry added here gets a
test there that decodes a stored document of the old shape.
"""

from collections.abc import Callable, Mapping
from typing import Any

from schemas.decisions import upcast_requested_v1
from schemas.quarantine import upcast_quarantined_v1
from schemas.reviews import upcast_verdict_v1

Document = dict[str, Any]
Upcaster = Callable[[Document], Document]

UPCASTERS: Mapping[str, Upcaster] = {
    "message.quarantined.v1": upcast_quarantined_v1,
    "decision.requested.v1": upcast_requested_v1,
    "review.verdict.v1": upcast_verdict_v1,
}
"""old tag -> function producing the next version's document (which may chain)."""


def upcast(doc: Document, upcasters: Mapping[str, Upcaster] = UPCASTERS) -> Document | None:
    """Upcast ``doc`` until its tag is current; ``None`` when no upcaster knows its tag."""
    tag = doc.get("kind")
    if not isinstance(tag, str) or tag not in upcasters:
        return None
    seen: set[str] = set()
    while isinstance(tag, str) and tag in upcasters:
        if tag in seen:  # a cycle in the table is a programming error, not a data error
            raise RuntimeError(f"upcaster cycle at {tag!r}")
        seen.add(tag)
        doc = upcasters[tag](doc)
        tag = doc.get("kind")
    return doc
