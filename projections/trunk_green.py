"""Is trunk green at a slice's close, and do the slice's criteria pass on it? Pure: over the
``gates`` fold (signed, verified suites and results only) and trunk's merges.

Trunk at the close is the commit the boot check ran on. It is green when verified gate
results exist on that commit (or on a commit with the same tree, as the merger tests a
candidate before trunk points at it), every one passed, and its latest suite did not fail;
a criterion of the slice passes when some result ran its test and every result that ran it
says ``passed``. What cannot be read is said, never assumed.
"""

from dataclasses import dataclass, field

from projections import gates
from projections.gates import CacheEntry, GatesState
from projections.slices import SliceView


@dataclass(frozen=True)
class TrunkGates:
    """What SHIP reads about trunk: the gates fold and each merge commit's tree."""

    gates: GatesState = field(default_factory=gates.initial)
    trees: dict[str, str] = field(default_factory=dict)


def results_on(seen: TrunkGates, commit: str) -> list[CacheEntry]:
    """Every verified, cached gate result on ``commit``, or on a commit of the same tree
    (the merger tests a candidate before trunk points at it)."""
    tree = seen.trees.get(commit)
    return sorted(
        (
            entry
            for entry in seen.gates.cache.values()
            if entry.commit == commit or (tree is not None and entry.tree == tree)
        ),
        key=lambda e: (e.check, e.at),
    )


def reasons(view: SliceView, seen: TrunkGates) -> list[str]:
    """Why trunk at the close is not known green with the slice's criteria passing."""
    commit = view.boot.commit if view.boot is not None else None
    if not commit:
        return ["trunk's commit at the close is unknown: green and criteria not established"]
    short = commit[:12]
    results = results_on(seen, commit)
    if not results:
        return [f"no verified gate result on trunk {short}: green is not established"]
    out = [
        f"trunk {short} is not green: check {entry.check} ended {entry.outcome}"
        for entry in results
        if entry.outcome != "pass"
    ]
    suite = gates.suite_for(seen.gates, commit)
    if suite is not None and suite.outcome != "pass":
        out.append(f"trunk {short} is not green: its latest gate suite ended {suite.outcome}")
    criteria = sorted({c for u in view.plan.units for c in u.criteria})
    for criterion in criteria:
        ended = [
            ending
            for entry in results
            for test, ending in entry.tests.items()
            if test == criterion or test.startswith(criterion + "[")
        ]
        if not ended or any(e != "passed" for e in ended):
            how = ", ".join(sorted(set(ended))) or "did not run"
            out.append(f"criterion {criterion} does not pass on trunk {short} ({how})")
    return out
