"""The ``risk`` projection: per slice, what is least verified, in plain words.

An inverted report: instead of listing what passed, it leads with what nothing checked.
:func:`report` orders it least verified first:

1. ``uncovered`` — a file the slice changed that no configured check reads, a criterion
   of the slice with no passing run on the log;
2. ``not-run`` — what was not run and why: the run record's own "not run" lines (gates
   never run, a suite that could not run, a configured check in no suite), a check whose
   latest run on the commit the unit ended on failed or ran to ``error`` (timed out, could
   not start) or that never ran on that commit, a suite the gates rule refused
   (unsigned or forged: claimed, so it did not count), the boot check that did not pass;
3. ``unreached`` — what the code-cold verifier says it could not reach (an input: the
   caller passes those lines, this fold does not invent them);
4. ``cached`` — a check answered from the gate cache (it ran once, on the same inputs,
   earlier — not for this slice);
5. ``dismissed`` — findings about the slice an operator dismissed (wont-fix is a waiver);
6. ``auto-decided`` — decisions no person made: recorded ``auto`` (long mode took the
   builder's default) or by the system;
7. ``verified`` — checks whose latest run on the commit the unit ended on (for a merged
   unit, the commit that merged) ran fresh and passed: once per unit and check, however
   many rounds ran it (the one section that says "passed").

Hostile-agent rules: it names a command only when a system-written run record says it ran
(a check configured but never run is named by its id, under ``not-run``, never with its
command and never as passed); it folds the run record, decisions and dismissals only when
the system published them, and gate results only as the ``slices`` fold accepts them
(signed by a registered runner key). A claim cannot add a line here or remove one.

The report reads the ``slices`` fold (plans, run record, boot result) and this one, which
keeps what ``slices`` does not: latest test outcomes from verified gate results (judged by
the gates projection's rule on the key registrations it has seen), findings about a slice,
their dismissals, and the decisions recorded for a slice or its units. It is in ``FOLDS``,
so the projector materialises it and the operator page reads it like any view.
"""

from collections.abc import Mapping, Sequence
from fnmatch import fnmatchcase
from typing import Literal

import msgspec

from projections import gates
from projections.base import Fold
from projections.slices import SlicesState, SliceView
from schemas import Event, FindingRaised
from schemas.decisions import DecisionRecorded
from schemas.gates import (
    GateResultRecorded,
    GateRunnerKeyRegistered,
    GateSuiteCompleted,
)
from schemas.lifecycle import FindingDismissed
from schemas.slices import CommandRun, RunEntryCompleted, SlicePlanAccepted
from schemas.verify import WaveVerified

Band = Literal[
    "uncovered", "not-run", "unreached", "cached", "dismissed", "auto-decided", "verified"
]
BANDS: tuple[Band, ...] = (
    "uncovered",
    "not-run",
    "unreached",
    "cached",
    "dismissed",
    "auto-decided",
    "verified",
)
"""Least verified first: the order :func:`report` sorts by."""

BAND_TITLES: dict[Band, str] = {
    "uncovered": "No check covers",
    "not-run": "Not run",
    "unreached": "The verifier could not reach",
    "cached": "Answered from the cache, not run again",
    "dismissed": "Findings dismissed",
    "auto-decided": "Decided without a person",
    "verified": "Ran and passed",
}

MESSAGE_KEPT = 160
"""Characters of a finding's message kept for the line its dismissal takes."""


class Decided(msgspec.Struct, frozen=True, kw_only=True):
    """A decision in force for a slice, as the PR description and the report tell it."""

    id: str
    question: str
    chosen: str
    owner: str
    serves: str = ""
    unit: str | None = None


class Dismissal(msgspec.Struct, frozen=True, kw_only=True):
    finding: str
    message: str
    reason: str
    why: str
    by: str


class RiskState(msgspec.Struct, kw_only=True):
    runner_keys: gates.GatesState = msgspec.field(default_factory=gates.initial)
    unit_slice: dict[str, str] = {}
    """Unit -> the slice whose accepted plan holds it (the system's acceptance only)."""
    tests: dict[str, str] = {}
    """Latest outcome of each test node id in a verified gate result."""
    findings: dict[str, tuple[str, str]] = {}
    """Finding id -> (slice, message), for findings about a slice or one of its units."""
    dismissed: dict[str, list[Dismissal]] = {}
    decisions: dict[str, list[Decided]] = {}
    refused: dict[str, list[str]] = {}
    """Slice -> gate suites about its units the gates rule refused (unsigned, forged): a
    run someone claims, which therefore did not count."""
    unreached: dict[str, list[str]] = {}
    """Slice -> what the code-cold verifier could not reach, in its words, per wave, and
    each wave it could not verify at all (from the system's ``verify.wave_verified.v1``)."""


class RiskItem(msgspec.Struct, frozen=True, kw_only=True):
    band: Band
    text: str


def initial() -> RiskState:
    return RiskState()


def apply(state: RiskState, event: Event) -> RiskState:
    match event:
        case GateRunnerKeyRegistered():
            gates.apply(state.runner_keys, event)
        case SlicePlanAccepted() if event.actor.role == "system":
            for unit in event.plan.units:
                state.unit_slice[unit.id] = event.plan.slice
        case GateResultRecorded() if gates.judge(state.runner_keys, event) is None:
            state.tests.update(event.tests)
        case GateSuiteCompleted(unit=unit) if unit is not None:
            why = gates.judge(state.runner_keys, event)
            where = state.unit_slice.get(unit)
            if why is not None and where is not None:
                state.refused.setdefault(where, []).append(
                    f"unit {unit}: a gate suite on {(event.commit or '?')[:12]} was refused "
                    f"and did not count ({why})"
                )
        case FindingRaised():
            where = _slice_of(state, event.slice, event.unit)
            if where is not None:
                # Kept for a dismissal to name; a line is enough (the view stays small).
                state.findings[event.id] = (where, event.message[:MESSAGE_KEPT])
        case WaveVerified() if event.actor.role == "system":
            lines = state.unreached.setdefault(event.slice, [])
            told = [f"wave {event.wave}: {what}" for what in event.unreached]
            if event.error:
                told.append(f"wave {event.wave} was not verified: {event.error[:MESSAGE_KEPT]}")
            lines.extend(line for line in told if line not in lines)
        case FindingDismissed() if event.actor.role == "system":
            found = state.findings.get(event.finding)
            if found is not None:
                state.dismissed.setdefault(found[0], []).append(
                    Dismissal(
                        finding=event.finding,
                        message=found[1],
                        reason=event.reason,
                        why=event.why,
                        by=event.by,
                    )
                )
        case DecisionRecorded() if event.actor.role == "system":
            where = _slice_of(state, event.slice, event.unit)
            if where is not None:
                state.decisions.setdefault(where, []).append(
                    Decided(
                        id=event.id,
                        question=event.question,
                        chosen=event.chosen,
                        owner=event.owner,
                        serves=event.serves,
                        unit=event.unit,
                    )
                )
    return state


def _slice_of(state: RiskState, slice_id: str | None, unit: str | None) -> str | None:
    if slice_id is not None:
        return slice_id
    return state.unit_slice.get(unit) if unit is not None else None


FOLD = Fold(name="risk", state_type=RiskState, initial=initial, apply=apply)


def entries(view: SliceView, state: SlicesState) -> list[RunEntryCompleted]:
    """The latest system-written completion of each unit of the slice, in dispatch order."""
    latest: dict[str, RunEntryCompleted] = {}
    for entry in state.record:
        done = entry.completion
        if entry.slice == view.slice and done is not None and done.actor.role == "system":
            latest[entry.unit] = done
    return [latest[u] for u in view.order if u in latest]


def report(
    slices_state: SlicesState,
    state: RiskState,
    slice_id: str,
    checks: Mapping[str, Sequence[str]] | None = None,
    unreached: Sequence[str] | None = None,
) -> list[RiskItem]:
    """The slice's risk report, least verified first (see the module docstring).

    ``checks`` maps each configured check to the paths it reads (``("*",)``: the whole
    tree), as trunk's ``loopbus.toml`` declares them; ``None`` when the configuration could
    not be read, which is itself reported. ``unreached`` is what the verifier could not
    reach, in its own words (default: what the state folded for the slice).
    """
    view = slices_state.slices.get(slice_id)
    if view is None:
        return []
    done = entries(view, slices_state)
    items: list[RiskItem] = []
    items += _uncovered(state, view, done, checks)
    items += _not_run(view, done, checks)
    items += [RiskItem(band="not-run", text=line) for line in state.refused.get(slice_id, [])]
    if unreached is None:
        unreached = state.unreached.get(slice_id, [])
    items += [RiskItem(band="unreached", text=line) for line in unreached]
    items += _ran(done)
    for dismissal in state.dismissed.get(slice_id, []):
        items.append(
            RiskItem(
                band="dismissed",
                text=f"finding {dismissal.finding[:12]} ({dismissal.message}) dismissed as "
                f"{dismissal.reason} by {dismissal.by}: {dismissal.why}",
            )
        )
    for decided in auto_decided(state, slice_id):
        who = "auto (the builder's default, long mode)" if decided.owner == "auto" else "system"
        items.append(
            RiskItem(
                band="auto-decided",
                text=f"{decided.question} -> {decided.chosen} (by {who}"
                + (f", unit {decided.unit})" if decided.unit else ")"),
            )
        )
    order = {band: i for i, band in enumerate(BANDS)}
    return sorted(items, key=lambda item: order[item.band])  # stable within a band


def auto_decided(state: RiskState, slice_id: str) -> list[Decided]:
    return [
        d
        for d in state.decisions.get(slice_id, [])
        if d.owner == "auto" or d.owner == "system" or d.owner.startswith("system:")
    ]


def _uncovered(
    state: RiskState,
    view: SliceView,
    done: list[RunEntryCompleted],
    checks: Mapping[str, Sequence[str]] | None,
) -> list[RiskItem]:
    items: list[RiskItem] = []
    if checks is None:
        items.append(
            RiskItem(
                band="uncovered",
                text="trunk's loopbus.toml could not be read: which files the checks read "
                "is unknown",
            )
        )
    else:
        changed = sorted({path for entry in done for path in entry.files_changed})
        for path in changed:
            if not any(_reads(path, reads) for reads in checks.values()):
                items.append(
                    RiskItem(band="uncovered", text=f"{path}: changed, and no check reads it")
                )
    criteria = [c for unit in view.plan.units for c in unit.criteria]
    for criterion in dict.fromkeys(criteria):
        outcome = state.tests.get(criterion)
        if outcome != "passed":
            seen = "no run of it is on the log" if outcome is None else f"last run: {outcome}"
            items.append(
                RiskItem(band="uncovered", text=f"criterion {criterion}: no passing run ({seen})")
            )
    return items


def _reads(path: str, reads: Sequence[str]) -> bool:
    """The gate runner's rule for what a check reads (``workers.repository.matches``,
    which this layer may not import): ``*``, a folder prefix ending in ``/``, or a glob."""
    for pattern in reads:
        if pattern == "*" or (pattern.endswith("/") and path.startswith(pattern)):
            return True
        if fnmatchcase(path, pattern):
            return True
    return False


def _not_run(
    view: SliceView, done: list[RunEntryCompleted], checks: Mapping[str, Sequence[str]] | None
) -> list[RiskItem]:
    items: list[RiskItem] = []
    for entry in done:
        for missing in entry.not_run:
            items.append(
                RiskItem(band="not-run", text=f"unit {entry.unit}: {missing.what}: {missing.why}")
            )
    ran = {run.check for entry in done for run in entry.commands}
    for check in sorted(checks or {}):
        if check not in ran and check != "boot":
            items.append(
                RiskItem(
                    band="not-run",
                    text=f"check {check}: configured, and no run of it is on the log for "
                    "this slice",
                )
            )
    boot = view.boot
    if view.status != "closed" or boot is None:
        items.append(RiskItem(band="not-run", text="boot: the slice has not closed yet"))
    elif boot.outcome != "pass":
        items.append(
            RiskItem(
                band="not-run",
                text=f"boot: {boot.outcome} on trunk" + (f": {boot.detail}" if boot.detail else ""),
            )
        )
    return items


def _ran(done: list[RunEntryCompleted]) -> list[RiskItem]:
    """One line per unit and check: how it stands on the commit the unit ended on.

    A unit may submit several commits (rounds) and its entry lists every suite run of
    them; only the latest run on the entry's ``head`` (for a merged unit, the commit that
    merged) says how the merged work stands. A failure on an earlier commit that a later
    one fixed is not "not run", and a pass on a commit that is not ``head`` never counts.
    """
    items: list[RiskItem] = []
    for entry in done:
        # Only an entry recorded before runs named their commit has neither a head nor a
        # run on a named commit; a newer entry without a head had no commit of its own.
        old = entry.head is None and not any(run.commit for run in entry.commands)
        for check in dict.fromkeys(run.check for run in entry.commands):
            runs = [run for run in entry.commands if run.check == check]
            if old:
                items.append(_untied(entry.unit, runs))
            elif entry.head is None:
                items.append(_not_its_own(entry, runs))
            else:
                items.append(_on_head(entry, runs))
    return items


def _not_its_own(entry: RunEntryCompleted, runs: list[CommandRun]) -> RiskItem:
    """The unit ended with no commit of its own: whatever ran under its name (anyone may ask
    for the gates of any commit, naming the unit) ran on a commit that was not the unit's."""
    last = runs[-1]
    return RiskItem(
        band="not-run",
        text=f"unit {entry.unit}: check {last.check} ({last.command}) ran only on commits that "
        f"were not the unit's: it ended {entry.state} with no commit of its own",
    )


def _on_head(entry: RunEntryCompleted, runs: list[CommandRun]) -> RiskItem:
    head = entry.head or ""
    where = f"{head[:12]}, the commit " + (
        "that merged" if entry.state == "done" else "it ended on"
    )
    on = [run for run in runs if run.commit == head]
    # Each other commit stands by its own latest run (a later round may have re-run it).
    other = {run.commit: run.outcome for run in runs if run.commit != head}
    missed = sum(outcome != "pass" for outcome in other.values())
    last = on[-1] if on else runs[-1]
    name = f"unit {entry.unit}: check {last.check}"
    if not on:
        return RiskItem(
            band="not-run",
            text=f"{name} ({last.command}) ran only on other commits, never on {where}",
        )
    passed = ""
    if missed:
        commits = "commit" if missed == 1 else "commits"
        passed = f" (it did not pass on {missed} other {commits} of the unit)"
    failed = " (a pass on another commit does not count for it)" if "pass" in other.values() else ""
    return _standing(name, last, f" on {where}", passed=passed, failed=failed)


def _untied(unit: str, runs: list[CommandRun]) -> RiskItem:
    """An entry recorded before runs were tied to commits: one line per check, and a pass
    only when every run of it passed (which commit a lone pass was on is not known)."""
    last = runs[-1]
    name = f"unit {unit}: check {last.check}"
    if len({(run.outcome, run.cached) for run in runs}) > 1:
        return RiskItem(
            band="not-run",
            text=f"{name} ({last.command}) ran {len(runs)} times with different outcomes, and "
            "this record does not say which commit each ran on: no pass is counted",
        )
    return _standing(name, last, "")


def _standing(
    name: str, last: CommandRun, on: str, *, passed: str = "", failed: str = ""
) -> RiskItem:
    """How a check stands by its latest run ``last``: ``on`` says on which commit (empty
    for an entry that does not say); ``passed``/``failed`` add to the one line shown."""
    if last.outcome == "error":
        why = last.detail or "it could not be established"
        return RiskItem(band="not-run", text=f"{name} did not finish{on}: {why}")
    if last.cached:
        return RiskItem(
            band="cached",
            text=f"{name} ({last.command}) {last.outcome}{on}, from the cache of an earlier run "
            "on the same inputs",
        )
    if last.outcome == "pass":
        return RiskItem(band="verified", text=f"{name} ({last.command}) passed{on}{passed}")
    there = " there" if on else ""
    return RiskItem(
        band="not-run",
        text=f"{name} ({last.command}) failed{on}, and the unit ended without a passing run of "
        f"it{there}{failed}",
    )


def render(items: Sequence[RiskItem]) -> list[str]:
    """Plain-language lines, one heading per band that has anything in it."""
    lines: list[str] = []
    for band in BANDS:
        mine = [item.text for item in items if item.band == band]
        if mine:
            lines.append(f"## {BAND_TITLES[band]}")
            lines.extend(f"- {text}" for text in mine)
            lines.append("")
    return lines or ["(nothing to report: the slice has no unit on the run record)"]
