"""The cluster guarantee of issue 13, at full size, with its figures.

    python tests/benchmarks/bench_cluster.py [--events 100000] [--kill-at 0.4] [--chunk 2000]

Starts compose.yaml's three NATS nodes as local processes (their command lines read from
compose.yaml, addresses mapped to free local ports), provisions the log at replication 3,
publishes ``--events`` findings through ``Bus.publish_many`` in chunks, SIGKILLs the
stream leader once ``--kill-at`` of them are stored, keeps publishing, restarts the node,
and prints what was acked against what the log holds (lost, stored twice), how long the
new leader took and how long the restarted node took to catch up. The projector runs on
its own connection throughout; the run also prints whether it stopped, how long after the
last ack its checkpoint covered the log, and whether its view equals a replay. Exits 1 when the
guarantee does not hold. Not collected by pytest; tests/bus/test_cluster.py is the small
version that CI runs.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "bus"))
sys.path.insert(0, str(ROOT / "tests"))

from failover import run_failover  # noqa: E402


async def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--kill-at", type=float, default=0.4)
    parser.add_argument("--chunk", type=int, default=2_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        r = await run_failover(Path(tmp), args.events, args.kill_at, args.chunk)
    ok = (
        r.acked == r.published == r.stored == r.distinct_stored
        and r.lost == 0
        and r.stored_twice == 0
        and r.acks_match_log
        and not r.projector_stopped
        and r.view_equals_replay
    )
    rate = r.published / r.publish_s
    print(f"published {r.published}, acked {r.acked}, stored {r.stored}")
    print(
        f"distinct events stored {r.distinct_stored}, lost {r.lost}, stored twice {r.stored_twice}"
    )
    print(f"every ack names the event stored at its sequence: {r.acks_match_log}")
    print(f"leader {r.killed} SIGKILLed at {args.kill_at:.0%} stored")
    print(f"new leader {r.new_leader} after {r.leader_after_s:.1f} s")
    print(f"publishing took {r.publish_s:.1f} s ({rate:.0f} events/s, failover included)")
    print(f"restarted {r.killed} caught up in {r.caught_up_after_s:.1f} s")
    print(f"projector stopped: {r.projector_stopped or 'never'}")
    print(f"projector's checkpoint covered the log {r.projector_behind_s:.1f} s after the last ack")
    print(f"view: {r.view_keys} values, equal to replay: {r.view_equals_replay}")
    print("guarantee holds" if ok else "GUARANTEE BROKEN")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
