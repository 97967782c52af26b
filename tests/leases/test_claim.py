"""The pure half of leasing: the ``leases`` fold and which items a replica takes or runs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from loopbus.lease_render import render_leases
from projections import leases
from projections.intents import Effect, PublishIf
from schemas import Actor
from schemas.leases import LeaseReleased, LeaseRenewed, LeaseTaken
from schemas.subjects import lease_subject
from workers.kernel import World
from workers.leases.decide import Item, Policy, claim

SYSTEM = Actor(role="system", principal="gate-runner@h")
AGENT = Actor(role="builder", principal="b1")
T0 = datetime(2026, 1, 1, tzinfo=UTC)
ME = Policy(holder="me", ttl_s=30, slots=1)


def taken(item: str, holder: str, at: datetime = T0, **kw: object) -> LeaseTaken:
    return LeaseTaken(
        project="p", actor=SYSTEM, at=at, work="gate", item=item, holder=holder, ttl_s=30, **kw
    )


class Run(Effect, frozen=True, tag="test.run.v1"):
    """A work item's effect, as a daemon declares one."""

    name: str

    @property
    def key(self) -> str:
        return f"run:{self.name}"


def items(*names: str) -> list[Item]:
    return [Item("gate", n, f"ask {n}", Run(project="p", name=n)) for n in names]


def world(events: list[object], now: datetime, **kw: object) -> World:
    state = leases.FOLD.fold(events)  # type: ignore[arg-type]
    seqs = {lease_subject("p", "gate", held.item): 7 for held in state.leases.values()}
    fields = {
        "project": "p",
        "states": {"leases": state},
        "seqs": seqs,
        "now": now,
        "actor": SYSTEM,
        "outside": {},
    }
    return World(**{**fields, **kw})  # type: ignore[arg-type]


def test_a_free_item_is_taken_conditionally_and_only_as_many_as_slots() -> None:
    intents = claim(world([], T0), items("a", "b"), ME)
    [take] = intents
    assert isinstance(take, PublishIf) and take.expected == 0
    assert isinstance(take.event, LeaseTaken)
    assert (take.event.item, take.event.holder, take.event.lapsed) == ("a", "me", None)


def test_an_item_held_by_me_runs_with_its_lease_and_one_held_by_another_is_left() -> None:
    seen = world([taken("a", "other"), taken("b", "me")], T0 + timedelta(seconds=5))
    [run] = claim(seen, items("a", "b"), ME)
    assert isinstance(run, Effect) and run.key == "run:b"
    assert run.lease.seq == 7 and run.lease.holder == "me"


def test_a_lapsed_lease_is_taken_over_naming_the_lapsed_holder() -> None:
    renewed = LeaseRenewed(
        project="p", actor=SYSTEM, at=T0 + timedelta(seconds=20), work="gate", item="a",
        holder="other", ttl_s=30,
    )  # fmt: skip
    events = [taken("a", "other"), renewed]
    assert claim(world(events, T0 + timedelta(seconds=49)), items("a"), ME) == []
    [take] = claim(world(events, T0 + timedelta(seconds=51)), items("a"), ME)
    assert isinstance(take, PublishIf) and take.expected == 7
    assert take.event.lapsed == "other"  # type: ignore[union-attr]
    state = leases.FOLD.fold([*events, take.event])  # type: ignore[list-item]
    assert leases.lease_of(state, "gate", "a").holder == "me"  # type: ignore[union-attr]
    assert [(x.holder, x.by) for x in state.lapses] == [("other", "me")]


def test_running_items_fill_the_slots() -> None:
    assert claim(world([], T0, running=frozenset({"run:a"})), items("a", "b"), ME) == []


def test_only_the_holder_renews_or_releases_and_an_agents_lease_is_no_lease() -> None:
    stranger = LeaseReleased(project="p", actor=SYSTEM, work="gate", item="a", holder="x")
    forged = LeaseTaken(project="p", actor=AGENT, work="gate", item="b", holder="b1", ttl_s=30)
    grab = taken("a", "thief")  # names no lapsed holder: takes nothing
    state = leases.FOLD.fold([taken("a", "me"), stranger, forged, grab])
    assert list(state.leases) == ["gate.a"] and state.leases["gate.a"].holder == "me"
    mine = LeaseReleased(project="p", actor=SYSTEM, work="gate", item="a", holder="me")
    state = leases.apply(state, mine)
    assert state.leases == {} and state.by_holder == {"me": 1}


def test_status_names_holders_and_lapses() -> None:
    events = [taken("a", "r1", what="trunk 0123"), taken("a", "r2", lapsed="r1", what="trunk 0123")]
    state = leases.FOLD.fold(events)
    lines = render_leases(state, now=T0 + timedelta(seconds=10))
    assert lines[0].startswith("leases: 1 live (gate 2 taken, 0 released, 1 lapsed)")
    assert any("r2 holds gate trunk 0123 (20 s left)" in line for line in lines)
    assert any("trunk 0123 of r1, taken over by r2" in line for line in lines)
