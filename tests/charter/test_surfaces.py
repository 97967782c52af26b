"""`loopbus status` and the operator page show the charter and how many of its criteria
hold on trunk: status from the projector's views on a real server, the page's document
from the same fold."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from datetime import UTC, datetime

from charterkit import approval, charter, loopbus, submission

from bus import Bus, Views
from loopbus.web.model import overview
from projections import charter as charter_fold
from schemas import Actor
from schemas.charter import CharterApproved, CharterCriterion, RunCriteriaChecked

CRITERIA = (
    CharterCriterion(id="adds", text="it adds", test="tests/test_calc.py::test_add"),
    CharterCriterion(id="suite", text="green", check="tests"),
)


def run_events(project: str, system: Actor) -> list:
    sub = submission(project, charter(criteria=CRITERIA))
    claim = approval(project, sub)
    approved = CharterApproved(
        project=project, actor=system, charter=sub.charter, claim=claim.id, submission=sub.id
    )
    checked = RunCriteriaChecked(
        project=project,
        actor=system,
        run=approved.id,
        charter=sub.charter.id,
        trunk="c" * 40,
        held=("suite",),
        failing=("adds",),
        detail={"adds": "test tests/test_calc.py::test_add did not run"},
    )
    return [sub, claim, approved, checked]


async def test_status_shows_the_charter_and_criteria_held(
    bus: Bus, nats_url: str, project: str, system: Actor
) -> None:
    events = run_events(project, system)
    for event in events:
        await bus.publish(event)
    last = await bus.stream_last_seq()
    projector = subprocess.Popen(
        [sys.executable, "-m", "workers.projector", "--nats-url", nats_url],
        stderr=subprocess.DEVNULL,
    )
    try:
        views = await Views.open(bus)
        for _ in range(600):
            if (await views.checkpoint()).seq >= last:
                break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError("the projector did not fold the log within a minute")
    finally:
        projector.terminate()
        projector.wait(timeout=10)
    status = await asyncio.to_thread(
        loopbus, "status", "--project", project, "--nats-url", nats_url
    )
    assert status.code == 0, status.err
    assert (
        "charter: calc-v1 — a calculator; run running, 1 of 2 criteria hold on trunk cccc"
        in status.out
    )
    run = await asyncio.to_thread(loopbus, "run", "--project", project, "--nats-url", nats_url)
    assert "held: suite" in run.out and "not held adds: test" in run.out


def test_the_page_document_counts_criteria_held(system: Actor) -> None:
    view = charter_fold.FOLD.fold(run_events("demo", system))
    doc = overview({"charter": view} | _empty(), {}, 10, datetime.now(UTC))["charter"]
    assert (doc["state"], doc["held"], doc["total"]) == ("running", 1, 2)
    assert doc["trunk"] == "c" * 40


def _empty() -> dict:
    from projections import FOLDS

    return {fold.name: fold.initial() for fold in FOLDS if fold.name != "charter"}
