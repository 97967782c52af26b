"""Gate findings a later round of the unit no longer raises are resolved. Pure.

A unit's gate findings (a failing test or lint line, a check that errored, a scope breach,
a suite that passed without the unit's criteria) were raised by the suite the system asked
for on one of its heads. Once the suite asked for on a later head has run, each of them
that this suite does not raise again is resolved, naming the suite. Only what the suite
can vouch for is resolved:

* a finding of a check the suite did not run stays open (a check dropped from the suite,
  or a suite refused before running anything, says nothing about it);
* a finding of a check that is red again stays open when that check raised the same key
  (target, severity, criterion) again;
* a finding in a file the unit's criteria live in stays open until each of those criteria
  ran and passed in this suite: a criterion test is the unit's contract, and a round that
  simply did not run it (deselected, not collected, a check that no longer selects it)
  never subtracts its failure;
* a scope or contract finding names the head it was raised for, and resolves once a suite
  that ran every check answers a later head.

Reviewer findings are resolved by the reviewer when a later verdict no longer raises them
(``workers/reviewer/rounds.py``); this covers the gate runner's.
"""

from __future__ import annotations

from datetime import datetime

from projections import contract as contract_fold
from projections import gates as gates_fold
from projections import reviews as reviews_fold
from projections.findings import FindingsState, OpenFinding, key_text, open_findings
from projections.reviews import BESIDE_CHECKS
from projections.units import UnitView
from schemas import Actor, FindingResolved
from schemas.gates import SuiteEntry
from schemas.ids import answer_id
from workers.gates.scope import criteria_files

SALT = "no-longer-raised"


def no_longer_raised(
    view: UnitView,
    suite: gates_fold.SuiteView,
    findings: FindingsState,
    gates: gates_fold.GatesState,
    reviews: reviews_fold.ReviewsState,
    *,
    project: str,
    actor: Actor,
    now: datetime,
) -> list[FindingResolved]:
    """The resolutions ``suite`` (the system's suite on ``view``'s head) warrants."""
    if suite.error or not suite.checks or suite.commit is None:
        return []  # refused or errored before running: it vouches for nothing
    candidates = [
        f
        for f in open_findings(findings, view.unit)
        if f.producer == "gate_runner" and suite.commit not in f.target
    ]  # the unit's gate findings about an earlier head
    if not candidates:
        return []  # the common case, decided without reading the other folds
    ran = {entry.check: entry for entry in suite.checks}
    raised, unknown = _raised_keys(suite, reviews)
    passed_criteria = contract_fold.judge(view.criteria, suite, gates).evidence
    guarded = {
        path: [c for c in view.criteria if c.split("::", 1)[0].lstrip("/") == path]
        for path in criteria_files(view.criteria)
    }
    tests_by_key = _tests_by_key(reviews)
    resolved: list[FindingResolved] = []
    for finding in candidates:
        if finding.reopened_at is not None and finding.reopened_at >= suite.at:
            continue  # an operator reopened it after this suite: only a later one may say
        key = key_text(finding.target, finding.severity, finding.criterion)
        if key in raised or finding.criterion in unknown or not _vouched(finding, ran):
            continue
        if finding.cls in BESIDE_CHECKS and suite.outcome != "pass":
            continue  # raised beside the suite, not by a check: only a green suite clears it
        if _unproven(finding, tests_by_key, guarded, view.criteria, passed_criteria):
            continue  # a criterion's failure stays until that criterion runs and passes
        resolved.append(
            FindingResolved(
                id=answer_id(suite.suite, f"{SALT}:{finding.id}"),
                at=now,
                project=project,
                actor=actor,
                finding=finding.id,
                why=f"not raised again: suite {suite.suite} on {suite.commit[:12]} ran "
                f"{_what(finding, ran)} and did not raise it",
                unit=view.unit,
            )
        )
    return resolved


def _tests_by_key(reviews: reviews_fold.ReviewsState) -> dict[str, set[str]]:
    """Finding key -> the tests of every gate finding raised with it. One open finding
    stands for every test that failed at the same place (same key)."""
    tests: dict[str, set[str]] = {}
    for found in reviews.gate_findings.values():
        if found.nodeid is not None:
            key = key_text(found.target, found.severity, found.criterion)
            tests.setdefault(key, set()).add(found.nodeid)
    return tests


def _unproven(
    finding: OpenFinding,
    tests_by_key: dict[str, set[str]],
    guarded: dict[str, list[str]],
    criteria: list[str],
    passed: dict[str, str],
) -> bool:
    """True when ``finding`` may be about a criterion that did not run and pass: it points
    into a criteria file, or (its frame elsewhere, in the code under test) its test is one."""
    path = _path(finding.target)
    if path in guarded and any(c not in passed for c in guarded[path]):
        return True
    tests = tests_by_key.get(key_text(finding.target, finding.severity, finding.criterion), set())
    about = [c for c in criteria for t in tests if t == c or t.startswith(c + "[")]
    return any(c not in passed for c in about)


def _vouched(finding: OpenFinding, ran: dict[str, SuiteEntry]) -> bool:
    """True when the suite ran what raised ``finding``: its check, or (a scope or contract
    finding, about a head) every check."""
    if finding.criterion in ran:
        return True
    return finding.target.startswith("record:commit:")


def _what(finding: OpenFinding, ran: dict[str, SuiteEntry]) -> str:
    entry = ran.get(finding.criterion)
    if entry is None:
        return "every check"
    return f"check {entry.check} ({entry.outcome})"


def _raised_keys(
    suite: gates_fold.SuiteView, reviews: reviews_fold.ReviewsState
) -> tuple[set[str], set[str]]:
    """The keys the suite's red checks raised (a passing check raises none that count),
    and the red checks whose findings cannot all be read back (a result answered from
    cache whose findings are not in view): those vouch for none of their findings."""
    keys: set[str] = set()
    unknown: set[str] = set()
    for entry in suite.checks:
        if entry.outcome == "pass":
            continue
        failing = reviews.failing.get(entry.result)
        if failing is None:
            unknown.add(entry.check)
            continue
        for finding_id in failing.findings:
            found = reviews.gate_findings.get(finding_id)
            if found is None:
                unknown.add(entry.check)
            else:
                keys.add(key_text(found.target, found.severity, found.criterion))
    return keys, unknown


def _path(target: str) -> str | None:
    """The file of a ``code:path:start-end`` target, else ``None``."""
    if not target.startswith("code:"):
        return None
    return target[len("code:") :].rsplit(":", 1)[0]
