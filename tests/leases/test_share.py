"""The pure half of sharing projects: who should hold each project, and the lease events
one replica publishes in a round."""

from __future__ import annotations

import argparse
import re
from datetime import UTC, datetime, timedelta

import pytest

from workers.cli import project_lease_arg
from workers.leases.share import Seen, Step, owner, plan

NOW = datetime(2026, 1, 1, tzinfo=UTC)
LATER = NOW + timedelta(seconds=30)
PROJECTS = [f"p{n}" for n in range(200)]


def test_every_member_computes_the_same_owner_whatever_the_order() -> None:
    """The owner depends on the set of members, not on how a replica listed them."""
    assert all(owner(p, ["a", "b", "c"]) == owner(p, ["c", "a", "b"]) for p in PROJECTS)


def test_a_new_member_takes_only_projects_from_the_others_and_about_its_share() -> None:
    """Adding a replica moves only the projects it now owns, about a third of them."""
    before = {p: owner(p, ["a", "b"]) for p in PROJECTS}
    after = {p: owner(p, ["a", "b", "c"]) for p in PROJECTS}
    moved = [p for p in PROJECTS if before[p] != after[p]]
    assert all(after[p] == "c" for p in moved)
    assert 40 <= len(moved) <= 95  # 200 / 3 expected


def test_removing_a_member_moves_only_its_projects() -> None:
    """A replica gone: its projects go to the others, no other project moves."""
    before = {p: owner(p, ["a", "b", "c"]) for p in PROJECTS}
    after = {p: owner(p, ["a", "b"]) for p in PROJECTS}
    assert [p for p in PROJECTS if before[p] != after[p]] == [
        p for p in PROJECTS if before[p] == "c"
    ]


def mine_and_theirs(me: str, other: str) -> tuple[str, str]:
    """A project ``me`` should own against ``other``, and one ``other`` should own."""
    ours = next(p for p in PROJECTS if owner(p, [me, other]) == me)
    theirs = next(p for p in PROJECTS if owner(p, [me, other]) == other)
    return ours, theirs


@pytest.mark.parametrize(
    ("seen", "expected"),
    [
        pytest.param(Seen(), "take", id="free-and-mine-is-taken"),
        pytest.param(Seen(7, "a", LATER), "renew", id="held-by-me-and-mine-is-renewed"),
        pytest.param(Seen(7, "b", LATER), None, id="held-live-by-another-is-left"),
        pytest.param(Seen(7, "b", NOW), "take", id="lapsed-is-taken-over"),
        pytest.param(Seen(7, None, None), "take", id="released-is-taken"),
    ],
)
def test_a_project_this_replica_owns(seen: Seen, expected: str | None) -> None:
    """What a replica does with a project it should hold, by the project's last lease."""
    ours, _theirs = mine_and_theirs("a", "b")
    steps = plan({ours: seen}, ["a", "b"], "a", NOW)
    assert [s.action for s in steps] == ([expected] if expected else [])
    if expected == "take":
        assert steps[0].seq == seen.seq and steps[0].lapsed == seen.holder


def test_a_held_project_another_member_now_owns_is_released_and_not_taken_back() -> None:
    """A replica hands over what a new member owns, and never takes another's project."""
    _ours, theirs = mine_and_theirs("a", "b")
    assert plan({theirs: Seen(4, "a", LATER)}, ["a", "b"], "a", NOW) == [Step(theirs, "release", 4)]
    assert plan({theirs: Seen()}, ["a", "b"], "a", NOW) == []
    assert plan({theirs: Seen(4, "b", NOW)}, ["a", "b"], "a", NOW) == []  # b takes it back


def test_alone_a_replica_takes_every_project() -> None:
    """With no other live member, every free project is this replica's."""
    steps = plan({p: Seen() for p in PROJECTS[:5]}, [], "a", NOW)
    assert [s.action for s in steps] == ["take"] * 5


@pytest.mark.parametrize(
    ("text", "said"),
    [
        pytest.param("1", "1: give seconds from 3 to 86400", id="too-short-to-renew-thrice"),
        pytest.param("soon", "'soon': give seconds", id="not-a-number"),
        pytest.param("100000", "100000: give seconds from 3", id="over-a-day"),
    ],
)
def test_a_bad_project_lease_is_one_line_naming_value_and_fix(text: str, said: str) -> None:
    """--project-lease refuses what cannot be renewed three times, or is not seconds."""
    with pytest.raises(argparse.ArgumentTypeError, match=re.escape(said)):
        project_lease_arg(text)
    assert project_lease_arg("30") == 30.0
