"""The pure half of lease deadlines: past its deadline a lease is taken over even while
its holder renews it; within it, it is not; a holder that overran waits its turn."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta

from test_claim import ME, SYSTEM, T0, items, taken, world

from loopbus.lease_render import render_leases
from projections import leases
from projections.intents import PublishIf
from schemas.leases import LeaseReleased, LeaseRenewed, LeaseTaken
from workers.gate_runner.deadline import suite_deadline
from workers.leases.deadlines import MARGIN_S
from workers.leases.decide import Policy, claim

ME_OTHER = Policy(holder="else", ttl_s=30, slots=1)


def with_deadline(seconds: float) -> Policy:
    return dataclasses.replace(ME, deadlines={"p": seconds})


def claim_for(events: list[object], now: datetime) -> list[object]:
    return list(claim(world(events, now), items("a"), ME))


def renewed(item: str, holder: str, at_s: float) -> LeaseRenewed:
    at = T0 + timedelta(seconds=at_s)
    return LeaseRenewed(
        project="p", actor=SYSTEM, at=at, work="gate", item=item, holder=holder, ttl_s=30
    )


def stuck(until_s: float) -> list[object]:
    """``other`` took ``a`` with a 100 s deadline and renews it every 10 s until ``until_s``."""
    renewals = [renewed("a", "other", s) for s in range(10, int(until_s) + 1, 10)]
    return [taken("a", "other", deadline_s=100.0), *renewals]


def test_a_lease_renewed_past_its_deadline_is_taken_over_naming_its_holder() -> None:
    now = T0 + timedelta(seconds=125)  # renewed at 120 s: live by its ttl, not by its deadline
    events = stuck(120)
    state = leases.FOLD.fold(events)  # type: ignore[arg-type]
    lease = leases.lease_of(state, "gate", "a")
    assert lease is not None and now < lease.until
    assert leases.overrunning(lease, now) and not leases.live(lease, now)
    [take] = claim_for(events, now)
    assert isinstance(take, PublishIf) and isinstance(take.event, LeaseTaken)
    assert take.event.lapsed == "other" and take.event.holder == "me"
    after = leases.FOLD.fold([*events, take.event])  # type: ignore[list-item]
    assert leases.lease_of(after, "gate", "a").holder == "me"  # type: ignore[union-attr]
    assert after.overran == {"gate": 1}


def test_a_lease_within_its_deadline_is_not_taken() -> None:
    now = T0 + timedelta(seconds=95)
    assert claim_for(stuck(90), now) == []


def test_a_taking_carries_the_policy_deadline_and_old_takings_have_none() -> None:
    [take] = claim(world([], T0), items("a"), with_deadline(50.0))
    assert isinstance(take, PublishIf) and isinstance(take.event, LeaseTaken)
    assert take.event.deadline_s == 50.0
    old = leases.FOLD.fold([taken("a", "other")])  # type: ignore[list-item]
    lease = leases.lease_of(old, "gate", "a")
    assert lease is not None and lease.deadline is None
    assert leases.live(lease, T0 + timedelta(seconds=29))


def test_the_holder_that_overran_leaves_the_item_to_others_for_one_lease_lifetime() -> None:
    gave_up = LeaseReleased(
        project="p",
        actor=SYSTEM,
        at=T0 + timedelta(seconds=100),
        work="gate",
        item="a",
        holder="me",
        how="overran",
    )
    events = [taken("a", "me", deadline_s=100.0), gave_up]
    assert claim_for(events, T0 + timedelta(seconds=110)) == []
    [take] = claim_for(events, T0 + timedelta(seconds=131))  # no one else took it
    assert isinstance(take, PublishIf) and isinstance(take.event, LeaseTaken)
    other = claim(world(events, T0 + timedelta(seconds=110)), items("a"), ME_OTHER)
    assert len(other) == 1  # any other replica takes it at once


def test_a_suite_deadline_is_twice_its_checks_timeouts_plus_the_margin() -> None:
    text = (
        '[project]\nid = "p"\n'
        '[[check]]\nid = "a"\ncommand = "true"\nparser = "exit-code"\ntimeout = 30\n'
        '[[check]]\nid = "b"\ncommand = "true"\nparser = "exit-code"\ntimeout = 45\n'
    )
    assert suite_deadline(text) == 2 * (30 + 45) + MARGIN_S
    assert suite_deadline("not toml [") is None
    assert suite_deadline(None) is None


def test_status_shows_the_deadline_and_an_overrunning_holder_still_renewing() -> None:
    within = leases.FOLD.fold(stuck(90))  # type: ignore[arg-type]
    lines = render_leases(within, now=T0 + timedelta(seconds=95))
    assert any("other holds gate a (25 s left, deadline in 5 s)" in line for line in lines)
    past = leases.FOLD.fold(stuck(120))  # type: ignore[arg-type]
    lines = render_leases(past, now=T0 + timedelta(seconds=125))
    assert lines[0].startswith("leases: 0 live")
    assert any(
        "gate a: other is 25 s past its deadline and still renewing (overrunning)" in line
        for line in lines
    )
