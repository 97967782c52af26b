"""What a merge returns: the file content and, for each real collision, its evidence.

msgspec Structs, so the merger daemon can put a conflict straight into a finding.
"""

from __future__ import annotations

from typing import Literal

import msgspec

__all__ = ["ConflictHunk", "ConflictReason", "EntityConflict", "MergeResult", "Strategy"]

# both-modified: both sides changed the same lines of one entity.
# modify-delete / delete-modify: ours changed what theirs deleted, or the reverse.
# both-added: each side added an entity of the same kind and name, differently.
# result-unparseable: the pieces merged, but the file they make does not parse.
# duplicate: the pieces merged, but the file binds a name (a declaration, an import,
#   an export) more often than either side did: two edits of one thing both kept.
# binary: both sides changed a file that is not text (ours is kept, unmarked).
ConflictReason = Literal[
    "both-modified",
    "modify-delete",
    "delete-modify",
    "both-added",
    "result-unparseable",
    "duplicate",
    "binary",
]
Strategy = Literal["entity", "line"]


class ConflictHunk(msgspec.Struct, frozen=True, kw_only=True):
    """The three versions of one disputed region, as text."""

    base: str
    ours: str
    theirs: str


class EntityConflict(msgspec.Struct, frozen=True, kw_only=True):
    """A collision that needs an author, named by the entity it happened in.

    `kind` is the entity kind (``function``, ``method``, ``class`` …), ``comment``
    for the text between entities, or ``file`` when the whole file was merged by
    lines; `name` is qualified by its parent (``Cart.total``) or is the file's path.
    """

    kind: str
    name: str
    reason: ConflictReason
    hunks: tuple[ConflictHunk, ...]

    @property
    def label(self) -> str:
        """Kind and name as the conflict markers show them, e.g. ``function total``."""
        return f"{self.kind} {self.name}"


class MergeResult(msgspec.Struct, frozen=True, kw_only=True):
    """The merged file, how it was merged, and what could not be merged.

    `note` says why the line strategy was used when an entity merge was possible in
    principle (no grammar, a version that does not parse …); it is empty otherwise.
    """

    content: bytes
    conflicts: tuple[EntityConflict, ...]
    strategy: Strategy
    language: str | None
    note: str = ""

    @property
    def clean(self) -> bool:
        """True when `content` holds no conflict and may be committed as is."""
        return not self.conflicts
