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
* ``judged``: the latest verdict on each of the last :data:`JUDGED_CAP` commits the
  merger judged, with their red checks, so that a finding arriving after the verdict is
  still sorted;
* ``runs`` and ``trunk_run``: verdicts are numbered as they are folded, so that only a
  trunk run *after* the one that found a check red can vouch for its findings.

A finding from a check that passed (a warning beside a green outcome) is never tracked:
a later green run would say nothing about it.
"""

from collections.abc import Sequence

import msgspec

from schemas import FindingRaised
from schemas.gates import SUITE_CRITERION
from schemas.merges import CandidateTested, CheckVerdict

GATE_PRODUCER = "gate_runner"
WAITING_CAP = 1000
JUDGED_CAP = 64


class GateFinding(msgspec.Struct, frozen=True, kw_only=True):
    """Where one gate finding was raised: the commit, the check (its criterion), and the
    number of the merger's verdict that found the check red (0 while it waits)."""

    commit: str
    check: str
    run: int = 0


class Judged(msgspec.Struct, kw_only=True):
    """The merger's latest verdict on one commit: its number, and the red checks of every
    verdict on that commit so far."""

    run: int
    red: list[str]


class GateFindings(msgspec.Struct, kw_only=True):
    red: dict[str, GateFinding] = {}
    waiting: dict[str, GateFinding] = {}
    judged: dict[str, Judged] = {}
    runs: int = 0
    """Verdicts folded so far (candidate and trunk): each verdict's number."""
    trunk_run: int = 0
    """The number of the latest trunk verdict: only a later one vouches for a finding."""


def raised(state: GateFindings, event: FindingRaised) -> None:
    """A gate finding for no unit: tracked at once when its commit's judged red checks
    include its check, else it waits for the verdict of the run that raised it (a commit
    is judged again by a recheck, and a candidate's commit again as trunk)."""
    commit = event.evidence.get("commit")
    if event.producer != GATE_PRODUCER or event.unit is not None or not isinstance(commit, str):
        return
    where = GateFinding(commit=commit, check=event.criterion)
    verdict = state.judged.get(commit)
    if verdict is not None and where.check in verdict.red:
        state.red[event.id] = msgspec.structs.replace(where, run=verdict.run)
        return
    state.waiting[event.id] = where
    while len(state.waiting) > WAITING_CAP:
        del state.waiting[next(iter(state.waiting))]


def judged(state: GateFindings, event: CandidateTested) -> None:
    """The merger's verdict on a commit: its red checks sort the findings waiting on it."""
    state.runs += 1
    if event.stage == "trunk":
        state.trunk_run = state.runs
    red_checks = {v.check for v in event.checks if v.outcome != "pass"}
    if event.outcome != "pass":
        red_checks.add(SUITE_CRITERION)  # a suite that errored before its checks
    known = state.judged.pop(event.candidate, None)
    verdict = Judged(
        run=state.runs, red=sorted(red_checks.union(known.red if known is not None else ()))
    )
    state.judged[event.candidate] = verdict
    while len(state.judged) > JUDGED_CAP:
        del state.judged[next(iter(state.judged))]
    for finding, where in list(state.waiting.items()):
        if where.commit == event.candidate:
            del state.waiting[finding]
            if where.check in verdict.red:
                state.red[finding] = msgspec.structs.replace(where, run=verdict.run)


def closed(state: GateFindings, finding: str) -> None:
    """Resolved or dismissed: nothing left to track."""
    state.red.pop(finding, None)
    state.waiting.pop(finding, None)


def no_longer_held(state: GateFindings, checks: Sequence[CheckVerdict]) -> dict[str, str]:
    """The tracked findings the latest trunk run (its ``checks``) vouches for: finding id ->
    the check it passed.

    Only a trunk run after the verdict that found a check red counts (a candidate found red
    after trunk's last run waits for the next one), on the finding's own commit too (a
    recheck that runs the check again past the cache), and only for a check it ran and
    passed; a suite-level finding resolves once a later run ran checks at all.
    """
    passed = {v.check for v in checks if v.outcome == "pass"}
    if checks:
        passed.add(SUITE_CRITERION)
    return {
        finding: where.check
        for finding, where in sorted(state.red.items())
        if where.check in passed and where.run < state.trunk_run
    }
