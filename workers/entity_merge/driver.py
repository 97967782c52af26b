"""Glue between `merge_file` and the two things that call merge drivers.

* dulwich: `EntityMergeDriver` satisfies dulwich's ``MergeDriver`` protocol;
  `register_merge_driver` puts it in a registry under ``loopbus``, and
  `entity_merge_attributes` routes every supported extension to it without the
  repository having to carry a ``.gitattributes`` line.
* git: `run_git_driver` implements ``loopbus merge-driver %O %A %B %P [%L]``,
  git's merge-driver calling convention (result written into %A, exit status 0
  when clean).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from dulwich.attrs import AttributeValue, GitAttributes, Pattern
from dulwich.config import Config
from dulwich.merge_drivers import MergeDriverRegistry, get_merge_driver_registry

from .merge import merge_file

__all__ = [
    "DRIVER_NAME",
    "USAGE",
    "EntityMergeDriver",
    "entity_merge_attributes",
    "merge_driver_registry",
    "register_merge_driver",
    "run_git_driver",
]

DRIVER_NAME = "loopbus"
USAGE = "usage: loopbus merge-driver BASE OURS THEIRS PATH [MARKER_SIZE]  (git: %O %A %B %P %L)"


class EntityMergeDriver:
    """dulwich merge driver running the entity merge.

    dulwich only hands back (content, clean); for the conflicts' evidence, call
    `merge_file` on a conflicted path again — it is pure, so it gives the same answer.
    """

    def merge(
        self,
        ancestor: bytes,
        ours: bytes,
        theirs: bytes,
        path: str | None = None,
        marker_size: int = 7,
    ) -> tuple[bytes, bool]:
        """Merge three versions of `path`; returns (content, True when clean)."""
        result = merge_file(ancestor, ours, theirs, path or "", marker_size=marker_size)
        return result.content, result.clean


def register_merge_driver(
    registry: MergeDriverRegistry | None = None, name: str = DRIVER_NAME
) -> MergeDriverRegistry:
    """Register the entity merge driver as `name` and return the registry.

    Without `registry`, dulwich's process-wide registry is used: dulwich's
    ``merge_blobs`` (behind ``three_way_merge``, ``Merger`` and ``porcelain.merge``)
    looks drivers up there and nowhere else, so that is the one the merger daemon
    registers in, once, at start-up. Registering again replaces the entry.
    """
    target = registry if registry is not None else get_merge_driver_registry()
    target.register_driver(name, EntityMergeDriver())
    return target


def merge_driver_registry(config: Config | None = None) -> MergeDriverRegistry:
    """A new registry holding only the entity merge driver (plus `config`'s drivers)."""
    return register_merge_driver(MergeDriverRegistry(config))


class _DefaultedAttributes(GitAttributes):
    """Attributes with defaults underneath a repository's own.

    Subclassed rather than rebuilt from the repository's pattern lists because
    those lists are private to `GitAttributes`; `match_path` is the public seam
    dulwich's merge code calls.
    """

    def __init__(
        self,
        defaults: list[tuple[Pattern, Mapping[bytes, AttributeValue]]],
        repository: GitAttributes | None,
    ) -> None:
        super().__init__(defaults)
        self._repository = repository

    def match_path(self, path: bytes) -> dict[bytes, AttributeValue]:
        """The defaults for `path`, overridden by whatever the repository says."""
        attributes = super().match_path(path)
        if self._repository is not None:
            attributes.update(self._repository.match_path(path))
        return attributes


def entity_merge_attributes(
    repository: GitAttributes | None = None, name: str = DRIVER_NAME
) -> GitAttributes:
    """Attributes sending every path to driver `name`.

    Every path, not only those with a grammar: the driver line-merges the rest, and
    dulwich's built-in text merge needs the optional ``merge3`` package, without
    which it raises instead of merging. The repository's own attributes (e.g.
    ``repo.get_gitattributes()``) win where they say anything about ``merge``, as a
    later ``.gitattributes`` line overrides an earlier one, so a repository can
    still send a path elsewhere.
    """
    defaults: list[tuple[Pattern, Mapping[bytes, AttributeValue]]] = [
        (Pattern(b"*"), {b"merge": name.encode()})
    ]
    return _DefaultedAttributes(defaults, repository)


def _fail(message: str) -> int:
    print(f"loopbus merge-driver: {message}", file=sys.stderr)
    return 2


def run_git_driver(argv: Sequence[str]) -> int:
    """Run as git's merge driver: ``BASE OURS THEIRS PATH [MARKER_SIZE]``.

    `argv` excludes the program name. Writes the merge into OURS (git's %A) and
    returns 0 when clean, 1 when conflict markers were written, 2 on bad arguments
    or unreadable files (OURS is then left untouched).
    """
    if len(argv) not in (4, 5):
        return _fail(f"expected 4 or 5 arguments, got {len(argv)}; {USAGE}")
    base_path, ours_path, theirs_path, path = argv[:4]
    marker_size = 7
    if len(argv) == 5:
        if not argv[4].isdigit() or int(argv[4]) < 1:
            return _fail(f"MARKER_SIZE must be a positive integer, got {argv[4]!r}; {USAGE}")
        marker_size = int(argv[4])
    try:
        base = Path(base_path).read_bytes()
        ours = Path(ours_path).read_bytes()
        theirs = Path(theirs_path).read_bytes()
    except OSError as exc:
        return _fail(f"cannot read {exc.filename}: {exc.strerror}; {USAGE}")
    result = merge_file(base, ours, theirs, path, marker_size=marker_size)
    Path(ours_path).write_bytes(result.content)
    if result.strategy == "line" and result.language is not None and result.note:
        # A file the driver could read as its language but merged by lines says why.
        print(f"loopbus merge-driver: {path}: {result.note}", file=sys.stderr)
    for conflict in result.conflicts:
        print(
            f"loopbus merge-driver: {path}: conflict in {conflict.label} ({conflict.reason})",
            file=sys.stderr,
        )
    return 0 if result.clean else 1
