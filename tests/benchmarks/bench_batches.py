"""Where publish_many's time goes, and why it does not use JetStream's batch publishing.

    python tests/benchmarks/bench_batches.py [--events 50000] [--rounds 3]

On one embedded nats-server (2.15.1, the log with ``allow_atomic`` and, for this run,
``allow_batched``), the same findings published four ways, each timed wall-clock and
client CPU, with the server's CPU for the same interval:

* raw nats-py ``publish_async`` (the baseline of bench_log.py);
* ``Bus.publish_many`` (one publish per event, exact acks; see bus/publisher.py);
* its sending alone: the same pipeline with the events encoded, decoded back and checked
  before the clock starts (publish_many does that a chunk at a time as it sends, so the
  difference between the two rows is what that work costs where it cannot overlap with
  the server's storing);
* atomic batches (2.12+): 1,000 events per batch, committed with one request, four
  batches in flight; the server stages each batch and acks only the commit;
* a fast batch (2.14+, ADR-50 "fast ingest"): one batch of every event, flow-control
  acks every 256 (four outstanding), the commit answered with the last sequence.

Both batch modes keep ``Nats-Msg-Id`` de-duplication (the server checks every id), but
neither gives per-event sequences: an atomic batch with one duplicate is refused whole,
and a fast batch skips a duplicate silently and acks batch positions, not sequences.

Not collected by pytest.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psutil
from bench_log import findings, raw_publish_async
from nats.aio.msg import Msg
from nats.js.api import Header

from bus import LOG_STREAM, Bus, EmbeddedServer, connect, ensure_log, free_port
from bus.connection import DEFAULT_WINDOW
from bus.publisher import Pipeline, encode_checked
from schemas import Event, subject_of


async def atomic_batches(bus: Bus, events: list[Event], size: int = 1000) -> None:
    subjects = [subject_of(e) for e in events]
    payloads = [encode_checked(e) for e in events]
    inbox = bus.nc.new_inbox()
    batches = (len(events) + size - 1) // size
    answers: dict[int, dict[str, object]] = {}
    free, done = asyncio.Semaphore(4), asyncio.Event()

    async def on_commit(msg: Msg) -> None:
        answers[int(msg.subject.rpartition(".")[2])] = json.loads(msg.data)
        free.release()
        if len(answers) == batches:
            done.set()

    sub = await bus.nc.subscribe(f"{inbox}.*", cb=on_commit)
    for number in range(batches):
        await free.acquire()
        part = range(number * size, min(len(events), (number + 1) * size))
        for position, i in enumerate(part, start=1):
            headers = {
                Header.MSG_ID: events[i].id,
                Header.BATCH_ID: events[part[0]].id,
                Header.BATCH_SEQUENCE: str(position),
            }
            reply = ""
            if i == part[-1]:
                headers[Header.BATCH_COMMIT] = "1"
                reply = f"{inbox}.{number}"
            await bus.nc.publish(subjects[i], payloads[i], reply=reply, headers=headers)
    await asyncio.wait_for(done.wait(), 120)
    await sub.unsubscribe()
    refused = [a for a in answers.values() if "error" in a]
    assert not refused, refused[0]


async def fast_batch(bus: Bus, events: list[Event], flow: int = 256, outstanding: int = 4) -> None:
    subjects = [subject_of(e) for e in events]
    payloads = [encode_checked(e) for e in events]
    prefix = f"{bus.nc.new_inbox()}.{uuid.uuid4().hex}"
    state: dict[str, object] = {"acked": 0, "flow": flow, "final": None}
    moved = asyncio.Event()

    async def on_reply(msg: Msg) -> None:
        reply = json.loads(msg.data)
        if reply.get("type") == "ack":
            state["acked"], state["flow"] = reply["seq"], reply["msgs"]
        elif "type" not in reply:
            state["final"] = reply
        moved.set()

    sub = await bus.nc.subscribe(f"{prefix}.>", cb=on_reply)
    last = len(events)
    for position in range(1, last + 1):
        while position > int(state["acked"]) + int(state["flow"]) * outstanding:  # type: ignore[call-overload]
            moved.clear()
            await asyncio.wait_for(moved.wait(), 30)
        operation = 0 if position == 1 else 2 if position == last else 1
        await bus.nc.publish(
            subjects[position - 1],
            payloads[position - 1],
            reply=f"{prefix}.{flow}.fail.{position}.{operation}.$FI",
            headers={Header.MSG_ID: events[position - 1].id},
        )
    while state["final"] is None:
        moved.clear()
        await asyncio.wait_for(moved.wait(), 30)
    await sub.unsubscribe()
    final = state["final"]
    assert isinstance(final, dict) and final.get("count") == last, final


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server = EmbeddedServer(Path(tmp), port=free_port(), auth=None)
        await server.start()
        assert server.process is not None
        server_cpu = psutil.Process(server.process.pid)
        bus = await connect(server.url, name="bench-batches")
        try:
            await ensure_log(bus.js)
            config = (await bus.js.stream_info(LOG_STREAM)).config
            config.allow_batched = True
            await bus.js.update_stream(config)
            paths = {
                "raw nats-py publish_async (baseline)": "raw",
                "loopbus Bus.publish_many": "many",
                "  its sending alone (events checked before)": "send",
                "atomic batches of 1,000, 4 in flight": "atomic",
                "one fast batch, flow 256": "fast",
            }
            timings: dict[str, list[tuple[float, float, float]]] = {k: [] for k in paths.values()}
            for round_no in range(args.rounds):
                for key in paths.values():
                    events = findings(f"{key}{round_no}", args.events)
                    cpu, srv, began = (
                        time.process_time(),
                        sum(server_cpu.cpu_times()[:2]),
                        time.perf_counter(),
                    )
                    if key == "raw":
                        subjects = [subject_of(e) for e in events]
                        payloads = [encode_checked(e) for e in events]
                        cpu, began = time.process_time(), time.perf_counter()
                        await raw_publish_async(bus, subjects, payloads)
                    elif key == "many":
                        await bus.publish_many(events)
                    elif key == "send":
                        # What publish_many does to each event before sending it (encode,
                        # decode back, subject, size, permission) is done before the clock
                        # starts: what is left is the sending and the acknowledgements.
                        pipeline = Pipeline.of_events(bus, events, DEFAULT_WINDOW)
                        pipeline._prepare(len(events))
                        cpu, srv, began = (
                            time.process_time(),
                            sum(server_cpu.cpu_times()[:2]),
                            time.perf_counter(),
                        )
                        await pipeline.run()
                    elif key == "atomic":
                        await atomic_batches(bus, events)
                    else:
                        await fast_batch(bus, events)
                    timings[key].append(
                        (
                            time.perf_counter() - began,
                            time.process_time() - cpu,
                            sum(server_cpu.cpu_times()[:2]) - srv,
                        )
                    )
        finally:
            await bus.close()
            server.stop()
    raw = args.events / statistics.median(t[0] for t in timings["raw"])
    print(f"events per figure: {args.events}, rounds: {args.rounds} (median)")
    print(f"{'path':40} {'events/s':>9} {'ratio':>6} {'client CPU':>11} {'server CPU':>11}")
    for label, key in paths.items():
        rate = args.events / statistics.median(t[0] for t in timings[key])
        client = statistics.median(t[1] for t in timings[key])
        served = statistics.median(t[2] for t in timings[key])
        print(f"{label:40} {rate:9.0f} {rate / raw:6.2f} {client:10.2f}s {served:10.2f}s")


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
