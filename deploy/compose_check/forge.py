"""A hostile agent's move against the running cluster: publish a fact with the agent
credential straight to NATS, and report whether the server refused it.

It uses a plain nats-py client with the agent's seed, not loopbus's ``Bus`` (which refuses
such a publish itself, before it leaves the process): what is under test is the server's
authorization, the one defence a hostile agent cannot skip. The fact is a unit moved to
``done`` by an actor that calls itself ``system``, published with JetStream so that, were
the server to accept it, the stream's acknowledgement would say so (and at which sequence).

compose-check runs this file as a script with the host's Python (the one loopbus is
installed in; nats-py and loopbus are imported only there), and reads the one JSON line
it prints; :func:`judge` is the pure part.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from dataclasses import asdict, dataclass

# nats-py hands the server's -ERR on lower-cased (bus.callbacks.Violations).
VIOLATION = "permissions violation for publish to "
ACK_WAIT_S = 10.0  # a refused JetStream publish gets no ack: it only times out


@dataclass(frozen=True)
class Forgery:
    subject: str
    event_id: str
    seq: int | None  # the stream's acknowledgement: the server accepted the fact
    refusal: str  # the server's permissions violation for this subject, or ""
    error: str  # what else went wrong (connecting, a timeout without a refusal), or ""

    @property
    def refused(self) -> bool:
        return self.seq is None and bool(self.refusal)


def judge(subject: str, event_id: str, seq: int | None, messages: list[str]) -> Forgery:
    """The outcome of one forged publish: refused only if the server said so for *this*
    subject and the stream did not acknowledge it; any other message is kept as the error."""
    refusal = next(
        (m for m in messages if f"{VIOLATION}{subject.lower()}" in m.lower().replace('"', "")),
        "",
    )
    others = [m for m in messages if m != refusal]
    return Forgery(subject, event_id, seq, refusal, "; ".join(others))


def parse(line: str) -> Forgery:
    """Read back the JSON line :func:`main` prints."""
    data = json.loads(line)
    return Forgery(
        subject=str(data["subject"]),
        event_id=str(data["event_id"]),
        seq=None if data["seq"] is None else int(data["seq"]),
        refusal=str(data["refusal"]),
        error=str(data["error"]),
    )


async def attempt(urls: str, creds: str, tls_ca: str, project: str) -> Forgery:
    from pathlib import Path

    import nats

    from bus.connection import server_urls
    from bus.creds import load_credential
    from bus.tls import client_context
    from schemas import Actor, UnitTransitioned, encode_event, subject_of
    from schemas.units import Outcome

    credential = load_credential(Path(creds))
    event = UnitTransitioned(
        project=project,
        actor=Actor(role="system", principal=credential.principal),
        unit="U-forged",
        state="done",
        by="merged",
        outcome=Outcome(summary="an agent declaring its own success", ended_by="merge"),
    )
    subject = subject_of(event)
    messages: list[str] = []

    async def noted(exc: Exception) -> None:
        messages.append(str(exc))

    client = await nats.connect(
        server_urls(urls),
        nkeys_seed_str=credential.seed,
        tls=client_context(Path(tls_ca)),
        error_cb=noted,
        max_reconnect_attempts=0,
        connect_timeout=10,
    )
    seq = None
    try:
        headers = {"Nats-Msg-Id": event.id}
        ack = await client.jetstream().publish(
            subject, encode_event(event), timeout=ACK_WAIT_S, headers=headers
        )
        seq = ack.seq
    except (nats.errors.Error, TimeoutError) as exc:  # refused: no ack comes, only a timeout
        if not any(VIOLATION in m.lower() for m in messages):
            messages.append(f"{type(exc).__name__}: {exc}")
    finally:
        await client.close()
    return judge(subject, event.id, seq, messages)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="publish a forged fact as the agent")
    parser.add_argument("--nats-url", required=True)
    parser.add_argument("--creds", required=True, help="the agent's credential file")
    parser.add_argument("--tls-ca", required=True)
    parser.add_argument("--project", required=True)
    args = parser.parse_args(argv)
    try:
        forgery = asyncio.run(attempt(args.nats_url, args.creds, args.tls_ca, args.project))
    except Exception as exc:
        print(f"forge: could not try: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(asdict(forgery)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
