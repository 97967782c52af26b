"""A unit's contract: is it ready? Pure, over the ``gates`` projection.

A unit is ready only when the suite the system asked for on its head (the answer to the
units daemon's own ``commit`` transition: every check, never a subset someone requested)
passed, and every criterion the accepted plan gives it ran in that suite and passed as
an ordinary test: not still pending, not skipped, not deselected, not missing. A unit with
no criteria needs the suite only. The evidence is each criterion's result id.
"""

from dataclasses import dataclass, field

from projections import gates as gates_fold


@dataclass(frozen=True)
class Contract:
    """What a suite says of a unit's contract."""

    suite: str
    suite_passed: bool
    evidence: dict[str, str] = field(default_factory=dict)
    """criterion -> the result id in which it ran and passed."""
    unmet: dict[str, str] = field(default_factory=dict)
    """criterion -> how it ended instead (``pending-failed``, ``skipped``, ``not collected``…)."""

    @property
    def holds(self) -> bool:
        return self.suite_passed and not self.unmet


def _instances(tests: dict[str, str], criterion: str) -> list[str]:
    """The endings of ``criterion`` and of each of its parametrisations."""
    return [e for n, e in tests.items() if n == criterion or n.startswith(criterion + "[")]


def judge(
    criteria: list[str], suite: gates_fold.SuiteView, state: gates_fold.GatesState
) -> Contract:
    """The contract of a unit with ``criteria`` under ``suite``."""
    evidence: dict[str, str] = {}
    seen: dict[str, str] = {}
    for entry in suite.checks:
        tests = gates_fold.tests_of(state, entry.result) or {}
        for criterion in criteria:
            endings = _instances(tests, criterion)
            if not endings:
                continue
            if all(e == "passed" for e in endings):
                evidence.setdefault(criterion, entry.result)
            else:
                bad = next(e for e in endings if e != "passed")
                seen.setdefault(criterion, bad)
    unmet = {
        c: seen.get(c, "not collected by any check of the suite")
        for c in criteria
        if c not in evidence
    }
    return Contract(suite.suite, suite.outcome == "pass", evidence, unmet)
