"""Whom the builder publishes a unit's claims as, the policy alone on folded events: the
units daemon refuses a builder's claim for a unit another principal holds (``not-holder``),
so the builder speaks as the holder when that is a builder on its roster, and runs no round
for a unit an operator or a builder off the roster (an agent that started it first) holds."""

from __future__ import annotations

from datetime import UTC, datetime

from projections import FOLDS
from schemas import Actor, Event, UnitPlanned
from schemas.reports import StartedReport
from schemas.slices import UnitDispatched
from schemas.units import UnitTransitioned
from workers.agents.config import BuildConfig
from workers.builder.decide import decide
from workers.builder.effects import BuildRound
from workers.kernel import World

SYSTEM = Actor(role="system", principal="tests")
B1 = Actor(role="builder", principal="b1")
OLIVE = Actor(role="operator", principal="olive")


def _world(started_by: Actor | None) -> World:
    events: list[Event] = [
        UnitPlanned(project="p", actor=SYSTEM, unit="U", slice="S"),
        UnitDispatched(
            project="p", actor=SYSTEM, slice="S", unit="U", wave=0, sub_wave=0, position=0,
            base="b" * 40,
        ),
    ]  # fmt: skip
    if started_by is not None:
        started = StartedReport(project="p", actor=started_by, unit="U")
        moved = UnitTransitioned(
            project="p", actor=SYSTEM, unit="U", state="working", prior=None, cause=started.id,
            by="started",
        )  # fmt: skip
        events += [started, moved]
    states = {}
    for fold in FOLDS:
        states[fold.name] = fold.fold(events)
    return World(
        project="p", states=states, seqs={}, now=datetime.now(UTC), actor=SYSTEM, outside={}
    )


def test_a_round_is_its_holders_after_the_roster_was_reshuffled() -> None:
    """b1 holds U; the roster, reordered, now gives U to another principal: the round
    still runs as b1, its holder, who is on the roster."""
    roster = tuple(f"b{n}" for n in range(1, 9))
    config = BuildConfig(command="true", roster=roster)
    assert config.principal("U") != "b1"  # so the holder, not the hash, decides
    [intent] = decide(_world(B1), config)
    assert isinstance(intent, BuildRound)
    assert intent.principal == "b1"


def test_no_round_for_a_unit_a_builder_off_the_roster_started_first() -> None:
    """mallory, an agent credential claiming as a builder of its own name, started U
    before the daemon did: the daemon runs no round for it, and none under mallory's name."""
    config = BuildConfig(command="true", roster=("b1", "b2"))
    assert decide(_world(Actor(role="builder", principal="mallory")), config) == []


def test_an_unstarted_unit_starts_as_its_roster_principal() -> None:
    config = BuildConfig(command="true", roster=("b2",))
    [intent] = decide(_world(None), config)
    event = getattr(intent, "event", None)
    assert isinstance(event, StartedReport)
    assert event.actor == Actor(role="builder", principal="b2")


def test_no_round_for_a_unit_an_operator_started_by_hand() -> None:
    config = BuildConfig(command="true", roster=("b1",))
    assert decide(_world(OLIVE), config) == []
