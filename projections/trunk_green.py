"""Is trunk green at a slice's close, and do the slice's criteria pass on it? Pure: over the
``gates`` fold (signed, verified suites and results only) and trunk's merges.

Trunk at the close is the commit the boot check ran on. It is green when the latest
verified gate suite on that commit (or on a commit with the same tree, as the merger tests
a candidate before trunk points at it) passed; a criterion of the slice passes when a
result of that suite says its test ``passed``. What cannot be read is said, never assumed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from loopbus.projections import gates
from loopbus.projections.gates import GatesState, SuiteView
from loopbus.projections.slices import SliceView


@dataclass(frozen=True)
class TrunkGates:
    """What SHIP reads about trunk: the gates fold and each merge commit's tree."""

    gates: GatesState = field(default_factory=gates.initial)
    trees: dict[str, str] = field(default_factory=dict)


def suite_on(seen: TrunkGates, commit: str) -> SuiteView | None:
    found = gates.suite_for(seen.gates, commit)
    if found is not None:
        return found
    tree = seen.trees.get(commit)
    same = [s for s in seen.gates.suites.values() if tree is not None and s.tree == tree]
    return max(same, key=lambda s: s.at) if same else None


def reasons(view: SliceView, seen: TrunkGates) -> list[str]:
    """Why trunk at the close is not known green with the slice's criteria passing."""
    commit = view.boot.commit if view.boot is not None else None
    if not commit:
        return ["trunk's commit at the close is unknown: green and criteria not established"]
    short = commit[:12]
    suite = suite_on(seen, commit)
    if suite is None:
        return [f"no verified gate suite ran on trunk {short}: green is not established"]
    out: list[str] = []
    if suite.outcome != "pass":
        out.append(f"trunk {short} is not green: its gate suite ended {suite.outcome}")
    endings: dict[str, list[str]] = {}
    for entry in suite.checks:
        for test, ending in (gates.tests_of(seen.gates, entry.result) or {}).items():
            endings.setdefault(test, []).append(ending)
    criteria = sorted({c for u in view.plan.units for c in u.criteria})
    for criterion in criteria:
        ended = endings.get(criterion, [])
        if "passed" not in ended:
            how = ", ".join(sorted(set(ended))) or "did not run"
            out.append(f"criterion {criterion} does not pass on trunk {short} ({how})")
    return out
