"""Gate findings about trunk, and when they stop holding: part of the ``merges`` fold. Pure.

The merger's gates judge two kinds of commit: each merge candidate and trunk itself. A red
check there raises gate findings for no unit (a failing test, a check that errored, a
suite that could not run), and those describe the project, so they stay open in
``status`` until something says they no longer hold. This state lets the merger say it:
a finding a red check raised on a commit the merger's gates judged is resolved once a
later trunk run passes that check (a suite-level finding, once a later trunk run runs its
checks at all).

* ``red``: open findings raised by red checks of judged commits: id -> where;
* ``waiting``: open gate findings for no unit on a commit not judged yet (the runner
  raises them before the merger records its verdict); at most :data:`WAITING_CAP`, the
  oldest dropped. An operator's own ``loopbus gate run`` on a commit the merger never
  judges waits here until it is resolved by hand or dropped: nothing the merger sees
  vouches for it;
* ``judged``: the red checks of the last :data:`JUDGED_CAP` commits the merger judged, so
  that a finding arriving after the verdict is still sorted.

A finding from a check that passed (a warning beside a green outcome) is never tracked:
a later green run would say nothing about it.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
from loopbus.schemas import FindingRaised
from loopbus.schemas.gates import SUITE_CRITERION
from loopbus.schemas.merges import CandidateTested, CheckVerdict

GATE_PRODUCER = "gate_runner"
WAITING_CAP = 1000
JUDGED_CAP = 64


class GateFinding(msgspec.Struct, frozen=True, kw_only=True):
    """Where one gate finding was raised: the commit, and the check (its criterion)."""

    commit: str
    check: str


class GateFindings(msgspec.Struct, kw_only=True):
    red: dict[str, GateFinding] = {}
    waiting: dict[str, GateFinding] = {}
    judged: dict[str, list[str]] = {}


def raised(state: GateFindings, event: FindingRaised) -> None:
    """A gate finding for no unit: tracked at once when its commit's judged red checks
    include its check, else it waits for the verdict of the run that raised it (a commit
    is judged again by a recheck, and a candidate's commit again as trunk)."""
    commit = event.evidence.get("commit")
    if event.producer != GATE_PRODUCER or event.unit is not None or not isinstance(commit, str):
        return
    where = GateFinding(commit=commit, check=event.criterion)
    if where.check in state.judged.get(commit, ()):
        state.red[event.id] = where
        return
    state.waiting[event.id] = where
    while len(state.waiting) > WAITING_CAP:
        del state.waiting[next(iter(state.waiting))]


def judged(state: GateFindings, event: CandidateTested) -> None:
    """The merger's verdict on a commit: its red checks sort the findings waiting on it."""
    red_checks = {v.check for v in event.checks if v.outcome != "pass"}
    if event.outcome != "pass":
        red_checks.add(SUITE_CRITERION)  # a suite that errored before its checks
    known = state.judged.pop(event.candidate, [])
    state.judged[event.candidate] = sorted(red_checks.union(known))
    while len(state.judged) > JUDGED_CAP:
        del state.judged[next(iter(state.judged))]
    for finding, where in list(state.waiting.items()):
        if where.commit == event.candidate:
            del state.waiting[finding]
            if where.check in state.judged[event.candidate]:
                state.red[finding] = where


def closed(state: GateFindings, finding: str) -> None:
    """Resolved or dismissed: nothing left to track."""
    state.red.pop(finding, None)
    state.waiting.pop(finding, None)


def no_longer_held(state: GateFindings, checks: Sequence[CheckVerdict]) -> dict[str, str]:
    """The tracked findings a trunk run vouches for: finding id -> the check it passed.

    Only a check it ran and passed counts (on the finding's own commit too: a recheck that
    runs it again past the cache); a suite-level finding resolves once a run ran checks.
    """
    passed = {v.check for v in checks if v.outcome == "pass"}
    if checks:
        passed.add(SUITE_CRITERION)
    return {
        finding: where.check
        for finding, where in sorted(state.red.items())
        if where.check in passed
    }
