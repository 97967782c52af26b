"""Views that scale: no value grows with the project, an entity bigger than one message is
stored in parts, and ``status`` pages what it cannot show whole."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from viewkit import expected_view, materialised

from bus import Bus, Views, read
from bus.view_scan import scan
from bus.views import MAX_VALUE, RECENT_KEY
from projections import findings as findings_fold
from projections import fold_events
from projections import investigations as investigations_fold
from projections import units as units_fold
from schemas import Actor, Event, FindingRaised, parse_target, project_subjects
from workers.projector.core import Projector

from .conftest import finding, planned

SYSTEM = Actor(role="system", principal="tests")


async def project_all(bus: Bus, kv: Views, project: str) -> Projector:
    projector = await Projector.open(kv)
    async for record in read(bus, subjects=[project_subjects(project)]):
        if record.event is not None:
            projector.apply(record)
    await projector.flush(await bus.stream_last_seq())
    return projector


async def sizes(kv: Views, project: str) -> dict[str, int]:
    return {
        m.key: len(m.data)
        async for m in scan(kv.bus, kv.bucket.name, f"view.{project}.>")
        if not m.deleted
    }


async def test_no_value_grows_with_the_number_of_findings_or_units(
    bus: Bus, project: str, private_kv: Callable[[], Any]
) -> None:
    """3,000 open findings of one unit and 300 units: every value stays the size of one
    entity (the old single value per projection passed the 1 MB limit at ~2,700)."""
    events: list[Event] = [planned(project, f"U{i}") for i in range(300)]
    events += [finding(project, "U1", line, "high") for line in range(1, 3001)]
    await bus.publish_many(events)
    kv = await private_kv()
    await project_all(bus, kv, project)
    stored = await sizes(kv, project)
    entities = {k: n for k, n in stored.items() if not k.endswith(RECENT_KEY)}
    assert len(entities) > 3300
    assert max(entities.values()) < 1024, max(entities.items(), key=lambda kv: kv[1])
    assert max(stored.values()) < 32 * 1024  # the recent index names at most 256 entries
    assert await materialised(kv, project) == await expected_view(bus, project)


def trunk_red(project: str, test: str, filler: str) -> FindingRaised:
    return FindingRaised(
        project=project,
        actor=SYSTEM,
        producer="trunk_gate",
        target=parse_target("code:tests/test_app.py:1-1"),
        severity="critical",
        criterion="trunk-green",
        cls="trunk-red",
        message="trunk is red",
        evidence={"interface": [test], "log": [filler] * 11},
    )


async def test_an_entity_bigger_than_one_message_is_stored_in_parts(
    bus: Bus, project: str, private_kv: Callable[[], Any]
) -> None:
    """Two near-limit trunk-red findings make one investigation trigger of ~1.4 MB: it is
    written in parts no bigger than a message allows, and read back whole."""
    filler = "x" * 60_000
    await bus.publish_many([trunk_red(project, "test_total", filler) for _ in range(2)])
    kv = await private_kv()
    await project_all(bus, kv, project)
    stored = await sizes(kv, project)
    assert max(stored.values()) <= MAX_VALUE + 64
    assert any("/" in key for key in stored), "the trigger was split"
    assert await materialised(kv, project) == await expected_view(bus, project)
    read_back, _ = await kv.read(project, investigations_fold.FOLD) or (None, None)
    events = [r.event async for r in read(bus, subjects=[project_subjects(project)]) if r.event]
    replayed = fold_events(events)[project]["investigations"]
    assert investigations_fold.FOLD.encode(read_back) == investigations_fold.FOLD.encode(replayed)
    projector = await Projector.open(kv)  # a restart joins the parts too
    restored = projector.views[(project, "investigations")].state
    assert investigations_fold.FOLD.encode(restored) == investigations_fold.FOLD.encode(replayed)


async def test_status_pages_a_big_project_and_says_what_it_left_out(
    bus: Bus, project: str, nats_url: str, private_kv: Callable[[], Any]
) -> None:
    """With more units and findings than ``--limit``, status reads that many of each, takes
    the totals from the summaries, and says how many it did not show; ``--limit 0`` shows
    the whole state, equal to a replay."""
    events: list[Event] = [planned(project, f"U{i}") for i in range(120)]
    events += [finding(project, f"U{i % 120}", i // 120 + 1, "high") for i in range(360)]
    await bus.publish_many(events)
    kv = await private_kv()
    await project_all(bus, kv, project)
    page = await kv.read_project(project, [units_fold.FOLD, findings_fold.FOLD], limit=50)
    units, assembled = page["units"]
    assert len(units.units) == 50 and assembled.sizes["units"] == 120
    assert assembled.partial["units"] == (50, 120)
    findings, assembled = page["findings"]
    assert assembled.sizes["open"] == 360 and assembled.partial["open"][1] == 360
    assert 0 < len(findings_fold.open_findings(findings)) <= 50
    whole = await kv.read_project(project, [units_fold.FOLD, findings_fold.FOLD])
    replayed = fold_events([e for e in events])[project]
    for fold in (units_fold.FOLD, findings_fold.FOLD):
        state, assembled = whole[fold.name]
        assert not assembled.partial
        assert fold.encode(state) == fold.encode(replayed[fold.name])
    assert json.dumps(assembled.sizes)  # plain data, as --json prints it
