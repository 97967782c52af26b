"""What halts a unit at once instead of climbing the ladder. Pure: no I/O.

Three things are not defects to repair but the gates doing their job:

* a secret in the diff (an added line matching one of a few high-signal patterns);
* an edit to a frozen artifact: an acceptance-criteria test file, ``loopbus.toml``
  (which holds the gate configuration and the pending list), or a path the project lists
  under ``[review] frozen``. The edits to ``loopbus.toml`` a unit may make are those of
  :mod:`workers.gates.trunkconfig` (clearing its own pending markers, adding a
  check). The gate runner's scope guard (:mod:`workers.gates.scope`) refuses the
  same edits for every unit before it is gated, whether or not a reviewer is configured;
  this guard stays as the reviewer's own second look;
* a security finding of high or critical severity (its criterion or class names security).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from workers.errors import CONFIG_FILE, ConfigError
from workers.gates.secrets import SECRET_PATTERNS
from workers.gates.trunkconfig import config_changes, refused
from workers.reviewer.diff import Diff, normalise_path

SECURITY_SEVERITIES = frozenset({"high", "critical"})


@dataclass(frozen=True, slots=True)
class Violation:
    """Why a unit halts: ``kind`` is ``secret``, ``frozen-artifact`` or ``security``."""

    kind: str
    path: str
    line: int
    detail: str


def find_secrets(diff: Diff) -> list[Violation]:
    """Every added line that carries a credential, with the pattern that matched it."""
    found: list[Violation] = []
    for changed in diff.files:
        for line, text in changed.added_text:
            for name, pattern in SECRET_PATTERNS:
                if pattern.search(text):
                    found.append(Violation("secret", changed.path, line, name))
                    break
    return found


def criteria_files(criteria: Iterable[str]) -> set[str]:
    """The test files acceptance criteria live in (``tests/x.py::test_y`` -> ``tests/x.py``)."""
    return {normalise_path(c.split("::", 1)[0]) for c in criteria if c.split("::", 1)[0]}


def find_frozen_edits(
    diff: Diff,
    *,
    all_criteria: Iterable[str],
    own_criteria: Sequence[str],
    frozen_globs: Sequence[str] = (),
    config_before: bytes | None = None,
    config_after: bytes | None = None,
) -> list[Violation]:
    """Edits the unit may not make: criteria test files, extra frozen paths, and any change
    to ``loopbus.toml`` other than clearing the unit's own pending markers."""
    found: list[Violation] = []
    tests = criteria_files(all_criteria)
    for path in diff.paths:
        if path in tests:
            found.append(Violation("frozen-artifact", path, 1, "an acceptance-criteria test"))
        elif path != CONFIG_FILE and any(fnmatch.fnmatchcase(path, g) for g in frozen_globs):
            found.append(Violation("frozen-artifact", path, 1, "listed under [review] frozen"))
    if CONFIG_FILE in diff.paths:
        problem = config_edit_problem(config_before, config_after, own_criteria)
        if problem is not None:
            found.append(Violation("frozen-artifact", CONFIG_FILE, 1, problem))
    return found


def config_edit_problem(
    before: bytes | None, after: bytes | None, own_criteria: Sequence[str]
) -> str | None:
    """``None`` when ``after`` differs from ``before`` only by the edits a unit may make
    (its own pending markers cleared, checks added, a capability floor tightened): the
    same rule the gate runner's scope guard applies to every unit, reviewer or not."""
    try:
        changes = config_changes(
            None if before is None else before.decode("utf-8"),
            None if after is None else after.decode("utf-8"),
            own_criteria,
        )
    except (UnicodeDecodeError, ConfigError) as exc:
        return f"loopbus.toml no longer parses ({exc})"
    problems = refused(changes)
    if not problems:
        return None
    return "the gate configuration changed: " + "; ".join(
        f"{c.field}: {c.detail}" for c in problems[:3]
    )


def is_security_finding(severity: str, criterion: str, cls: str) -> bool:
    """High or critical, and its criterion or class names security."""
    if severity not in SECURITY_SEVERITIES:
        return False
    return "security" in criterion.lower() or "security" in cls.lower()
