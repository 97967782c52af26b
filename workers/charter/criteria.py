"""Which of a charter's criteria hold on one trunk gate run. Pure.

The evidence is the system's only: the merger's trunk run (``merge.candidate_tested``,
stage ``trunk``, judged with the adopted configuration) and the signed gate results it
stands on, as the ``gates`` fold verified them. An agent can put neither on the log.

* a ``check`` criterion holds when that check passed in the run;
* a ``test`` criterion holds when the test (every parametrisation of it) *ran and
  passed* in a passing check of the run and is not pending there. A pending test's
  failing is green for trunk but meets nothing; a test that is missing, deselected (a
  ``conftest.py`` can deselect, never pass, a test: it is recorded as ``deselected``),
  skipped or not run does not meet its criterion either.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from loopbus.projections.gates import GatesState
from loopbus.projections.merges import Tested
from loopbus.schemas.charter import Charter, CharterCriterion

PASSED = "passed"
PENDING = "pending-"


@dataclass(frozen=True)
class Judgement:
    held: tuple[str, ...]
    failing: tuple[str, ...]
    detail: dict[str, str] = field(default_factory=dict)


def judge(charter: Charter, run: Tested, gates: GatesState) -> Judgement:
    held: list[str] = []
    failing: list[str] = []
    detail: dict[str, str] = {}
    for criterion in charter.criteria:
        why = _why_not(criterion, run, gates)
        if why is None:
            held.append(criterion.id)
        else:
            failing.append(criterion.id)
            detail[criterion.id] = why
    return Judgement(tuple(held), tuple(failing), detail)


def _why_not(criterion: CharterCriterion, run: Tested, gates: GatesState) -> str | None:
    if criterion.check:
        verdict = next((v for v in run.checks if v.check == criterion.check), None)
        if verdict is None:
            return f"check {criterion.check} did not run on this trunk (not in the adopted config)"
        return None if verdict.outcome == "pass" else f"check {criterion.check}: {verdict.outcome}"
    endings: dict[str, str] = {}
    for verdict in run.checks:
        if verdict.outcome != "pass":
            continue
        key = gates.by_result.get(verdict.result)
        entry = gates.cache.get(key) if key is not None else None
        if entry is None:
            continue  # not a verified gate result: it proves nothing
        for nodeid, ending in entry.tests.items():
            if nodeid == criterion.test or nodeid.startswith(criterion.test + "["):
                endings[nodeid] = ending
    if not endings:
        return f"test {criterion.test} did not run in a passing check on this trunk"
    pending = sorted(n for n, e in endings.items() if e.startswith(PENDING))
    if pending:
        return f"test {pending[0]} is pending in the adopted loopbus.toml: it meets nothing yet"
    other = sorted((n, e) for n, e in endings.items() if e != PASSED)
    if other:
        return f"test {other[0][0]} {other[0][1]}"
    return None
