"""The inverted risk report: least verified first, and never a command that did not run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import pytest
from shipkit import BUILDER, CRITERION, SYSTEM, auto_decision, closed_slice, make_repo

from bus import Bus
from loopbus.slice_render import render_record
from projections import risk, slices
from projections.slice_dispatch import Complete
from schemas import Event, FindingRaised, Outcome, UnitPlanned, UnitTransitioned, new_id
from schemas.gates import GateSuiteCompleted, SuiteEntry
from schemas.lifecycle import FindingDismissed
from schemas.reports import CommitReport
from schemas.slices import (
    BootResult,
    CommandRun,
    PlannedUnit,
    RunEntryCompleted,
    SliceClosed,
    SlicePlan,
    SlicePlanAccepted,
    UnitDispatched,
)
from schemas.targets import RecordTarget
from schemas.verify import WaveVerified
from workers.dispatcher.record import UnitReads, completion
from workers.gates.signing import Signer, load_or_create
from workers.kernel import World


@pytest.fixture
def signer(tmp_path: Path) -> Signer:
    """A gate-runner key of the test's own (its registration is on the log, so it counts)."""
    return load_or_create(tmp_path / "keys")


def loopbus(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "loopbus.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if not k.startswith("LOOPBUS_")},
        stdin=subprocess.DEVNULL,
    )


def sections(out: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    heading = ""
    for line in out.splitlines():
        if line.startswith("## "):
            heading = line[3:]
            found[heading] = []
        elif line.startswith("- ") and heading:
            found[heading].append(line[2:])
    return found


async def test_a_configured_check_that_never_ran_is_reported_not_run_and_never_passed(
    bus: Bus, nats_url: str, project: str, tmp_path: Path
) -> None:
    """A slice whose unit ran `tests` but never `docs`: the report leads with what nothing
    checks (a changed file no check reads, a criterion with no passing run), names `docs`
    as not run — by its id, never with its command — and lists only `tests` as passed, even
    when an agent forges a run record saying docs passed."""
    repo = tmp_path / "repo"
    make_repo(repo, project)
    events = closed_slice(project, "S1")
    forged = RunEntryCompleted(
        project=project,
        actor=BUILDER,
        slice="S1",
        unit="U1",
        dispatch=events[3].id,
        state="done",
        commands=[
            CommandRun(check="docs", command="mkdocs-strict --fail-on-warning", outcome="pass")
        ],
    )
    finding = FindingRaised(
        project=project,
        actor=SYSTEM,
        producer="reviewer",
        target=RecordTarget(id="U1"),
        severity="low",
        message="totals round oddly",
        unit="U1",
    )
    dismissed = FindingDismissed(
        project=project,
        actor=SYSTEM,
        finding=finding.id,
        reason="wont-fix",
        why="rounding is out of scope",
        claim=finding.id,
        by="operator:alice",
    )
    forged_suite = GateSuiteCompleted(
        project=project,
        actor=BUILDER,
        commit="a" * 40,
        unit="U1",
        reason="unit",
        outcome="pass",
        checks=[
            SuiteEntry(
                check="docs", outcome="pass", cached=False, result=finding.id, duration_s=0.1
            )
        ],
        runner="r1",
    )
    published = [*events, forged, forged_suite, auto_decision(project, "S1"), finding, dismissed]
    for event in published:
        await bus.publish(event)

    done = loopbus(
        "report",
        "risk",
        "S1",
        "--project",
        project,
        "--nats-url",
        nats_url,
        "--repo",
        str(repo),
        "--trunk",
        "main",
    )
    assert done.returncode == 0, done.stderr
    found = sections(done.stdout)
    assert list(found) == [
        "No check covers",
        "Not run",
        "Findings dismissed",
        "Decided without a person",
        "Ran and passed",
    ], done.stdout
    assert "notes/todo.txt: changed, and no check reads it" in found["No check covers"]
    assert any(CRITERION in line and "no passing run" for line in found["No check covers"])
    assert not any("src/calc.py" in line for line in found["No check covers"])
    assert (
        "check docs: configured, and no run of it is on the log for this slice" in found["Not run"]
    )
    assert "mkdocs-strict" not in done.stdout, "a command that never ran is never named"
    assert any(
        "a gate suite on aaaaaaaaaaaa was refused" in line and "role 'builder'" in line
        for line in found["Not run"]
    )
    assert found["Ran and passed"] == ["unit U1: check tests (python -m pytest -q) passed"]
    assert "wont-fix by operator:alice" in found["Findings dismissed"][0]
    assert "which rounding for totals -> half-up" in found["Decided without a person"][0]

    as_json = loopbus(
        "report", "risk", "S1", "--project", project, "--nats-url", nats_url, "--json"
    )
    items = json.loads(as_json.stdout)
    bands = [item["band"] for item in items]
    assert bands == sorted(bands, key=risk.BANDS.index), "least verified first"


async def test_an_unknown_slice_is_one_line_naming_the_known_ones(
    bus: Bus, nats_url: str, project: str
) -> None:
    """A slice that is not on the log: exit 2 and one line naming the slices there are."""
    for event in closed_slice(project, "S1"):
        await bus.publish(event)
    done = loopbus("report", "risk", "S9", "--project", project, "--nats-url", nats_url)
    assert done.returncode == 2
    assert "SLICE S9: no such slice" in done.stderr and "known: S1" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_verifiers_unreached_lines_come_after_what_was_not_run() -> None:
    """What the verifier could not reach is reported in its own words, after the not-run
    section and before cached runs (the input the verifier's fact fills)."""
    events = closed_slice("p", "S1")
    items = risk.report(
        slices.FOLD.fold(events),
        risk.FOLD.fold(events),
        "S1",
        {"tests": ("src/",)},
        ["the payment page (no sandbox key)"],
    )
    bands = [item.band for item in items]
    assert "unreached" in bands
    assert bands.index("unreached") > bands.index("not-run")
    assert bands.index("unreached") < bands.index("verified")


def test_the_verifiers_recorded_run_fills_the_unreached_band() -> None:
    """What the system recorded of the verifier's run (its unreached list, a wave it could
    not verify) is folded into the report; the same fact from an agent is not."""
    common = {"project": "p", "slice": "S1", "accepted": "acc"}
    events = [
        *closed_slice("p", "S1"),
        WaveVerified(**common, actor=SYSTEM, wave=0, unreached=["the payment page"]),
        WaveVerified(**common, actor=SYSTEM, wave=1, error="the verifier printed no envelope"),
        WaveVerified(**common, actor=BUILDER, wave=2, unreached=["a forged line"]),
    ]
    items = risk.report(slices.FOLD.fold(events), risk.FOLD.fold(events), "S1", {})
    unreached = [item.text for item in items if item.band == "unreached"]
    assert unreached == [
        "wave 0: the payment page",
        "wave 1 was not verified: the verifier printed no envelope",
    ]


# -- a unit that took several rounds: only the commit the unit ended on counts ------------

OPS_TESTS = "python -m pytest -q"


def rounds(signer: Signer, suites: list[tuple[str, str]], **kw: Any) -> list[risk.RiskItem]:
    """The risk report of :func:`rounds_log`."""
    events = rounds_log(signer, suites, **kw)
    return risk.report(slices.FOLD.fold(events), risk.FOLD.fold(events), "S1", {"tests": ("*",)})


def rounds_log(
    signer: Signer,
    suites: list[tuple[str, str]],
    *,
    head: str | None,
    ended: str = "done",
    after: list[Event] | None = None,
    submitted: bool = True,
    during: list[Event] | None = None,
) -> list[Event]:
    """Unit ops of slice S1 submits one commit per round (the units daemon accepts it, unless
    not ``submitted``); each round's signed suite runs ``tests`` on that commit with the given
    outcome; the unit then ends (merged on ``head``, or failed). ``during`` comes right after
    the dispatch. The run record's entry is the real dispatcher's (``record.completion``), so
    the report reads what the system would have written."""
    p = "p"
    plan = SlicePlan(slice="S1", units=[PlannedUnit(id="ops", files=["src/ops.py"])])
    dispatched = UnitDispatched(
        project=p, actor=SYSTEM, slice="S1", unit="ops", wave=0, sub_wave=0, position=0
    )
    events: list[Event] = [
        signer.registration(p, SYSTEM),
        SlicePlanAccepted(project=p, actor=SYSTEM, plan=plan, cause="submission"),
        UnitPlanned(project=p, actor=SYSTEM, unit="ops", slice="S1"),
        dispatched,
        *(during or []),
    ]
    for commit, outcome in suites:
        if submitted:
            events.append(
                UnitTransitioned(
                    project=p,
                    actor=SYSTEM,
                    unit="ops",
                    state="working",
                    prior="working",
                    by="commit",
                    commit=commit,
                )
            )
        suite = GateSuiteCompleted(
            project=p,
            actor=SYSTEM,
            commit=commit,
            tree="d" * 40,
            unit="ops",
            reason="unit",
            outcome=outcome,  # type: ignore[arg-type]
            checks=[
                SuiteEntry(
                    check="tests",
                    outcome=outcome,  # type: ignore[arg-type]
                    cached=False,
                    result=new_id(),
                    duration_s=1.0,
                )
            ],
            runner=signer.runner,
        )
        events.append(signer.sign(suite))
    by = "merged" if ended == "done" else "gave-up"
    events.append(
        UnitTransitioned(
            project=p,
            actor=SYSTEM,
            unit="ops",
            state=ended,  # type: ignore[arg-type]
            prior="working",
            by=by,  # type: ignore[arg-type]
            commit=head,
            outcome=Outcome(summary=f"ops {ended}", ended_by=by),
        )
    )
    events += after or []
    view = slices.FOLD.fold(events)
    world = World(project=p, states={}, seqs={}, now=datetime.now(UTC), actor=SYSTEM, outside={})
    entry_done = completion(
        world,
        view.slices["S1"],
        Complete(slice="S1", unit="ops", dispatch=dispatched.id),
        UnitReads(configured={"tests": OPS_TESTS}),
    )
    events += [
        entry_done,
        SliceClosed(project=p, actor=SYSTEM, slice="S1", boot=BootResult(outcome="pass")),
    ]
    return events


def about_tests(items: list[risk.RiskItem]) -> list[tuple[str, str]]:
    return [(item.band, item.text) for item in items if "check tests" in item.text]


def test_a_check_that_failed_in_round_one_and_passed_on_the_merged_commit_passed_once(
    signer: Signer,
) -> None:
    """Round 1's commit fails `tests`, round 2's passes it and merges: the report says
    passed, once, on the commit that merged — not also "not run" for round 1's failure."""
    a, b = "a" * 40, "b" * 40
    items = rounds(signer, [(a, "fail"), (b, "pass")], head=b)
    assert about_tests(items) == [
        (
            "verified",
            f"unit ops: check tests ({OPS_TESTS}) passed on {b[:12]}, the commit that merged "
            "(it did not pass on 1 other commit of the unit)",
        )
    ]


def test_a_check_that_failed_and_never_passed_afterwards_is_not_run_once(
    signer: Signer,
) -> None:
    """Two rounds fail `tests` and the unit gives up: one "not run" line, nothing passed."""
    a, b = "a" * 40, "b" * 40
    items = rounds(signer, [(a, "fail"), (b, "fail")], head=b, ended="failed")
    assert about_tests(items) == [
        (
            "not-run",
            f"unit ops: check tests ({OPS_TESTS}) failed on {b[:12]}, the commit it ended on, "
            "and the unit ended without a passing run of it there",
        )
    ]


def test_a_pass_on_another_commit_does_not_count_for_the_commit_that_merged(
    signer: Signer,
) -> None:
    """`tests` passed on round 1's commit and failed on round 2's, which is the one that
    merged (a hostile log): the merged work did not pass, whatever passed before it."""
    a, b = "a" * 40, "b" * 40
    items = rounds(signer, [(a, "pass"), (b, "fail")], head=b)
    assert about_tests(items) == [
        (
            "not-run",
            f"unit ops: check tests ({OPS_TESTS}) failed on {b[:12]}, the commit that merged, "
            "and the unit ended without a passing run of it there (a pass on another commit "
            "does not count for it)",
        )
    ]
    # Nor does a run on a commit that never merged stand in for one that never ran.
    items = rounds(signer, [(a, "pass")], head=b)
    assert [band for band, _ in about_tests(items)] == ["not-run"]
    assert "ran only on other commits, never on bbbbbbbbbbbb" in about_tests(items)[0][1]


def test_a_builders_commit_after_the_merge_does_not_move_the_merged_commit(
    signer: Signer,
) -> None:
    """A builder reports a new commit once its unit merged: the run record still ties the
    report to the commit that merged, so the pass there stands and nothing else counts."""
    a, c = "a" * 40, "c" * 40
    late = CommitReport(project="p", actor=BUILDER, unit="ops", sha=c)
    items = rounds(signer, [(a, "pass")], head=a, after=[late])
    assert about_tests(items) == [
        (
            "verified",
            f"unit ops: check tests ({OPS_TESTS}) passed on {a[:12]}, the commit that merged",
        )
    ]


NOT_ITS_OWN = (
    "not-run",
    f"unit ops: check tests ({OPS_TESTS}) ran only on commits that were not the unit's: it "
    "ended failed with no commit of its own",
)


def test_a_suite_naming_a_unit_that_never_submitted_a_commit_is_no_pass_of_it(
    signer: Signer,
) -> None:
    """Anyone may ask for the gates of any commit naming a unit (here a trunk commit T): a
    unit that ended with no commit of its own did not pass on T, so nothing says passed."""
    trunk = "7" * 40
    items = rounds(signer, [(trunk, "pass")], head=None, ended="failed", submitted=False)
    assert about_tests(items) == [NOT_ITS_OWN]
    assert not [item for item in items if item.band == "verified"]


def test_a_builders_commit_claim_is_not_the_units_head(signer: Signer) -> None:
    """A builder claims commit T for the live unit, which the units daemon never accepts (no
    ``by="commit"`` transition names it), and a suite naming the unit passes on T: the unit
    ended with no head, and the report does not say the check passed on T."""
    trunk = "7" * 40
    claim = CommitReport(project="p", actor=BUILDER, unit="ops", sha=trunk)
    events = rounds_log(
        signer, [(trunk, "pass")], head=None, ended="failed", submitted=False, during=[claim]
    )
    [entry] = [e for e in events if isinstance(e, RunEntryCompleted)]
    assert entry.head is None
    items = risk.report(slices.FOLD.fold(events), risk.FOLD.fold(events), "S1", {"tests": ("*",)})
    assert about_tests(items) == [NOT_ITS_OWN]


def test_the_run_record_says_which_commit_each_rounds_run_was_on(signer: Signer) -> None:
    """The record lists every round's run of `tests`; each names the commit it ran on, so a
    reader can tell the failure of round 1 from the pass on the commit that merged."""
    a, b = "a" * 40, "b" * 40
    record = render_record(slices.FOLD.fold(rounds_log(signer, [(a, "fail"), (b, "pass")], head=b)))
    runs = [line for line in record if "[tests]" in line]
    assert len(runs) == 2
    assert "→ fail" in runs[0] and f", on {a[:12]}" in runs[0]
    assert "→ pass" in runs[1] and f", on {b[:12]}" in runs[1]


def test_an_entry_recorded_before_runs_named_their_commit_counts_no_pass_it_cannot_tie() -> None:
    """An older entry lists a failed and a passed run of `tests` without their commits: the
    report cannot tell which one the merged commit had, so it says so once and never says
    passed; a check whose every run passed is still passed, once."""
    events = closed_slice("p", "S1")
    entry = events[4]
    assert isinstance(entry, RunEntryCompleted)
    runs = [
        CommandRun(check="tests", command="pytest -q", outcome="fail"),
        CommandRun(check="tests", command="pytest -q", outcome="pass"),
        CommandRun(check="lint", command="ruff check", outcome="pass"),
        CommandRun(check="lint", command="ruff check", outcome="pass"),
    ]
    events[4] = msgspec.structs.replace(entry, commands=runs)
    items = risk.report(slices.FOLD.fold(events), risk.FOLD.fold(events), "S1", {})
    told = [(item.band, item.text) for item in items if item.text.startswith("unit U1: check")]
    assert told == [
        (
            "not-run",
            "unit U1: check tests (pytest -q) ran 2 times with different outcomes, and this "
            "record does not say which commit each ran on: no pass is counted",
        ),
        ("verified", "unit U1: check lint (ruff check) passed"),
    ]
