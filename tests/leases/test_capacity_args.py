"""``--jobs`` and ``--capacity``: ``auto`` is the cores this process may use; a bad value is
one line naming it and the fix."""

from __future__ import annotations

import argparse

import pytest

from workers.leases.capacity import capacity_arg, cores, jobs_arg


@pytest.mark.parametrize("parse", [jobs_arg, capacity_arg], ids=["jobs", "capacity"])
def test_auto_is_the_cores_here(parse: object) -> None:
    """`auto` gives as many as this process may run on, and a number is taken as given."""
    assert callable(parse)
    assert parse("auto") == parse(" AUTO ") == cores()
    assert parse("3") == 3


@pytest.mark.parametrize("value", ["0", "-2", "many"])
def test_a_bad_capacity_names_the_value_and_the_fix(value: str) -> None:
    """Anything but a count of 1 or more, or auto, is refused with what to give instead."""
    with pytest.raises(argparse.ArgumentTypeError, match=r"give .*1 or more, or 'auto'"):
        capacity_arg(value)


def test_the_dispatcher_defaults_to_auto(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without --capacity or $LOOPBUS_CAPACITY the dispatcher keeps as many units in flight
    as the machine has cores; the variable still wins over the default."""
    from workers.dispatcher import cli

    seen: list[int] = []

    def capture(_name: str, parser: argparse.ArgumentParser, _make: object, argv: object) -> int:
        seen.append(parser.parse_args(["--repo", "p=/nowhere"]).capacity)
        return 0

    monkeypatch.setattr(cli, "main_for", capture)
    monkeypatch.delenv("LOOPBUS_CAPACITY", raising=False)
    cli.main([])
    monkeypatch.setenv("LOOPBUS_CAPACITY", "5")
    cli.main([])
    assert seen == [cores(), 5]
