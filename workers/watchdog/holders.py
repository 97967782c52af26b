"""Whose heartbeat counts: only the beat of the principal that holds the unit's round.

NATS KV checks who may write the heartbeat bucket (only ``system`` may: the builder daemon
beats for the agent it runs, which holds no credential), but not who wrote a key: the
actor in a beat is a claim. So the watchdog counts a beat only when that actor is the
unit's *holder* (``UnitView.holder``: whoever's started report the system accepted), and
names every other beater once, in a ``forgery`` finding, rather than once per beat.

Pure: the watchdog's sweep calls these with the units projection and the beats it has seen.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from projections.units import FOREIGN_BEAT_CLASS, FOREIGN_BEAT_CRITERION, UnitView
from schemas import Actor, FindingRaised
from schemas.ids import answer_id
from schemas.reports import heartbeat_key
from schemas.targets import RecordTarget

JUDGED_STATES = frozenset({"working", "blocked"})
"""A beat is judged only once the unit has started: before the watchdog has folded a
unit's start, its holder is not known yet, and the real builder's first beats would be
named as a stranger's."""


def name(actor: Actor) -> str:
    return f"{actor.role}:{actor.principal}"


def counted_beat(view: UnitView, beats: Mapping[Actor, datetime]) -> datetime | None:
    """The latest beat that keeps ``view`` alive: its holder's, or none."""
    return beats.get(view.holder) if view.holder is not None else None


def foreign_beat_findings(
    view: UnitView, beats: Mapping[Actor, datetime], project: str, actor: Actor
) -> list[FindingRaised]:
    """One finding for each beater of ``view`` that is not its holder and is not named yet."""
    if not view.started or view.state not in JUDGED_STATES or view.started_event is None:
        return []
    holder = name(view.holder) if view.holder is not None else None
    findings = []
    for beater, at in sorted(beats.items(), key=lambda item: name(item[0])):
        who = name(beater)
        if beater == view.holder or who in view.foreign_beats:
            continue
        holds = f"{holder} holds its round" if holder else "nobody holds its round"
        findings.append(
            FindingRaised(
                # Fixed by the start and the beater: two watchdogs, or one restarted before
                # folding its own finding, publish the same id and the log keeps one.
                id=answer_id(view.started_event, f"{FOREIGN_BEAT_CRITERION}:{who}"),
                project=project,
                actor=actor,
                producer="standards",
                target=RecordTarget(id=view.unit),
                severity="high",
                criterion=FOREIGN_BEAT_CRITERION,
                cls=FOREIGN_BEAT_CLASS,
                message=(
                    f"heartbeats for unit {view.unit} from {who} are ignored: {holds}, and "
                    "only the holder's beats keep a unit alive"
                ),
                evidence={
                    "unit": view.unit,
                    "beater": who,
                    "holder": holder,
                    "key": heartbeat_key(project, view.unit),
                    "stored_at": at.isoformat(),
                },
                # Not filed under the unit: the beater is not its builder, and the unit's
                # brief and review must not carry someone else's move.
                owner="operator",
            )
        )
    return findings
