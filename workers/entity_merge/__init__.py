"""Entity-level three-way merge driver on tree-sitter (Python, JS, TS/TSX, Go), and by
key and element for configuration files: TOML (:mod:`.toml_merge`, on ``tomllib``), JSON
and YAML (:mod:`.data_merge`, on ``json`` and the tree-sitter YAML grammar).

`merge_file` is the pure core; `driver` plugs it into dulwich's merge-driver
registry and into git as ``loopbus merge-driver %O %A %B %P``.
"""

from .driver import (
    DRIVER_NAME,
    EntityMergeDriver,
    entity_merge_attributes,
    merge_driver_registry,
    register_merge_driver,
    run_git_driver,
)
from .languages import language_for_path, supported_extensions
from .merge import merge_file
from .result import ConflictHunk, ConflictReason, EntityConflict, MergeResult, Strategy

__all__ = [
    "DRIVER_NAME",
    "ConflictHunk",
    "ConflictReason",
    "EntityConflict",
    "EntityMergeDriver",
    "MergeResult",
    "Strategy",
    "entity_merge_attributes",
    "language_for_path",
    "merge_driver_registry",
    "merge_file",
    "register_merge_driver",
    "run_git_driver",
    "supported_extensions",
]
