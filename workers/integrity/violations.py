"""Refusals made by the server itself, made visible: one finding per refused publish.

With credentials, nats-server refuses a publish that the connection's credential may not
make (a fact from an agent, another principal's claim, a stream deletion, a write to the
views) before anything reaches the log — so no fold ever sees the attempt. The server writes
each refusal to its own log ("Publish Violation")::

    [pid] 2026/12/01 01:11:04.056426 [ERR] 127.0.0.1:43596 - cid:6 - "v2.16.0:python3" -
        "$G/nkey:UBSV…" - Publish Violation - Subject "loop.demo.unit.U1"

This module reads that file (``loopbus up`` runs the server, so the file is at hand),
names the credential behind the nkey from the credentials folder, and publishes a system
``forgery`` finding for each line: on the project the subject belongs to, or on
:data:`BUS_PROJECT` for a subject outside every project (``$JS.API.STREAM.DELETE.LOOP``).
How far the file was read is kept beside it, and each finding's id is fixed by its line, so
a restart neither repeats nor skips one.

A heartbeat is the one move that repeats by nature (a beat every few seconds), so a
refused write to a unit's heartbeat key is named once per credential and key while the
daemon runs, not once per beat: one attempt to keep a unit alive is one finding, not a
storm. (A restart may name the same pair once more.)
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import structlog

from bus import HEARTBEAT_BUCKET, Bus
from bus.creds import all_credentials
from bus.private import write_private
from projections.intents import Publish
from schemas import Actor, FindingRaised
from schemas.ids import fixed_id, is_token
from schemas.targets import RecordTarget
from workers.kernel.oneshot import carry_out

log = structlog.get_logger()

BUS_PROJECT = "_bus"
"""The project that findings about subjects outside every project are filed under."""

POLL_S = 0.25

BEAT_SUBJECTS = f"$KV.{HEARTBEAT_BUCKET}."

_VIOLATION = re.compile(
    r"^\[\d+\] (?P<day>\d{4}/\d{2}/\d{2}) (?P<clock>\d{2}:\d{2}:\d{2})\.(?P<micros>\d+) \[ERR\] "
    r"(?P<client>\S+) - cid:\d+ - .*?\"(?:[^\"/]*/)?nkey:(?P<nkey>[A-Z0-9]+)\" - "
    r"Publish Violation - Subject \"(?P<subject>[^\"]+)\""
)


@dataclass(frozen=True)
class Violation:
    """One publish the server refused."""

    at: datetime
    client: str
    nkey: str
    subject: str
    line: str

    @property
    def project(self) -> str:
        parts = self.subject.split(".")
        if len(parts) > 2 and parts[0] == "loop" and is_token(parts[1]):
            return parts[1]
        return BUS_PROJECT


def parse(line: str) -> Violation | None:
    """The violation a server log line records, or ``None`` for any other line."""
    match = _VIOLATION.match(line)
    if match is None:
        return None
    stamp = f"{match['day']} {match['clock']}.{match['micros'][:6]}"
    at = datetime.strptime(stamp, "%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=UTC)
    return Violation(at, match["client"], match["nkey"], match["subject"], line.rstrip("\n"))


def finding(violation: Violation, who: str, actor: Actor) -> FindingRaised:
    """The system's finding about one refused publish, naming the credential."""
    return FindingRaised(
        id=fixed_id(int(violation.at.timestamp() * 1000), violation.line),
        project=violation.project,
        actor=actor,
        at=violation.at,
        producer="standards",
        target=RecordTarget(id=f"credential:{who}"),
        severity="high",
        criterion="refused-publish",
        cls="forgery",
        message=(
            f"the server refused a publish on {violation.subject} by {who}: that credential "
            "may not publish there, so nothing reached the log"
        ),
        evidence={
            "refused_publish": violation.subject,
            "credential": who,
            "nkey": violation.nkey,
            "client": violation.client,
        },
        owner="operator",
    )


class Credentials:
    """nkey -> ``role:principal``, re-read when an unknown key shows up (``creds add``)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.names: dict[str, str] = {}

    def name(self, nkey: str) -> str:
        if nkey not in self.names and self.folder.is_dir():
            self.names = {
                c.public_key: f"{c.role}:{c.principal}" for c in all_credentials(self.folder)
            }
        return self.names.get(nkey, f"unknown nkey {nkey}")


class ServerLogWatch:
    """Follow the server's log file and publish a finding for every refused publish."""

    def __init__(self, bus: Bus, server_log: Path, creds_folder: Path, actor: Actor) -> None:
        self.bus = bus
        self.server_log = server_log
        self.offset_file = server_log.with_name(server_log.name + ".violations-read")
        self.credentials = Credentials(creds_folder)
        self.actor = actor
        self.named_beats: set[tuple[str, str]] = set()
        """(credential, subject) of refused heartbeat writes already named."""

    def _offset(self) -> int:
        try:
            return int(self.offset_file.read_text().strip() or 0)
        except (OSError, ValueError):
            return 0

    async def run(self, stop: asyncio.Event) -> None:
        offset = self._offset()
        while not stop.is_set():
            offset = await self.read_from(offset)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), POLL_S)

    async def read_from(self, offset: int) -> int:
        """Publish the findings for the complete lines past ``offset``; the new offset."""
        try:
            size = self.server_log.stat().st_size
        except FileNotFoundError:
            return offset
        if size < offset:  # a new file (rotated or replaced): read it from the start
            offset = 0
        if size == offset:
            return offset
        with self.server_log.open("rb") as handle:
            handle.seek(offset)
            chunk = handle.read(size - offset)
        complete = chunk[: chunk.rfind(b"\n") + 1]
        found: list[Publish] = []
        for raw in complete.decode(errors="replace").splitlines():
            violation = parse(raw)
            if violation is None:
                continue
            who = self.credentials.name(violation.nkey)
            beat = violation.subject.startswith(BEAT_SUBJECTS)
            if beat and (who, violation.subject) in self.named_beats:
                continue
            found.append(Publish(finding(violation, who, self.actor)))
            if beat:
                self.named_beats.add((who, violation.subject))
            log.warning("server.refused_publish", subject=violation.subject, credential=who)
        await carry_out(self.bus, found)  # the offset moves only once they are stored
        offset += len(complete)
        write_private(self.offset_file, str(offset))
        return offset
