"""A stand-in per-project daemon run as a real process: it answers every ping (a finding
with criterion ``ping``) with a pong whose id is fresh each time it is published.

A fresh id is the point: the log de-duplicates a repeated answer when its id is derived
from what it answers, which would hide two replicas acting on one project. Here a second
answer to one ping is a second event on the log, so the test can count them. Run as
``python -P echo_replica.py --nats-url URL [--project-lease SECONDS]``, the same command
line (``workers.cli``) every daemon has.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import msgspec

from projections.base import Fold
from projections.intents import Intent, Publish
from schemas import Event, FindingRaised
from schemas.targets import RecordTarget
from workers.cli import Body, daemon_parser, kernel_body, main_for
from workers.kernel import Daemon, World

PING, PONG = "ping", "pong"


class Pings(msgspec.Struct):
    asked: list[str] = []
    answered: set[str] = set()


def apply(state: Pings, event: Event) -> Pings:
    match event:
        case FindingRaised(criterion="ping", id=ping):
            state.asked.append(ping)
        case FindingRaised(criterion="pong", target=RecordTarget(id=ping)):
            state.answered.add(ping)
    return state


PINGS = Fold(name="pings", state_type=Pings, initial=Pings, apply=apply)


class Echo(Daemon):
    name = "echo"
    folds = (PINGS,)

    def decide(self, world: World) -> Sequence[Intent]:
        state: Pings = world.state("pings")
        return [
            Publish(
                FindingRaised(  # no id given: a fresh one, so a repeat is not de-duplicated
                    project=world.project,
                    actor=world.actor,
                    producer="standards",
                    target=RecordTarget(id=ping),
                    severity="low",
                    criterion=PONG,
                    message=f"pong from {world.actor.principal}",
                )
            )
            for ping in state.asked
            if ping not in state.answered
        ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = daemon_parser("echo", "Answer pings (a test stand-in).")

    def make_body(_args: argparse.Namespace) -> Body:
        return kernel_body(Echo)

    return main_for("echo", parser, make_body, argv)


if __name__ == "__main__":
    sys.exit(main())
