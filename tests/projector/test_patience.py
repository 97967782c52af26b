"""Far behind the log the projector writes less often, so each write carries more events."""

from __future__ import annotations

from typing import Any

from workers.projector.daemon import BEHIND_MAX_S, BEHIND_RATE, ProjectorDaemon


def daemon(interval: float = 0.05) -> ProjectorDaemon:
    bus: Any = None  # patience() reads no bus
    return ProjectorDaemon(bus, interval=interval)


def test_a_little_behind_it_writes_every_interval() -> None:
    d = daemon()
    for behind in (0, 1, BEHIND_RATE // 100):
        d.behind = behind
        assert d.patience() == d.interval


def test_far_behind_the_wait_grows_with_the_backlog_up_to_a_bound() -> None:
    d = daemon()
    d.behind = BEHIND_RATE // 10
    assert d.patience() == 0.1
    d.behind = BEHIND_RATE * 100
    assert d.patience() == BEHIND_MAX_S


def test_an_interval_longer_than_the_bound_still_holds() -> None:
    d = daemon(interval=1.0)
    d.behind = BEHIND_RATE * 100
    assert d.patience() == 1.0
