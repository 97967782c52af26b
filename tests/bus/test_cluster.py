"""The cluster guarantee, small enough for CI: compose's three nodes, the log at R3, the
stream leader SIGKILLed mid-publish, the projector running throughout
(tests/benchmarks/bench_cluster.py runs 100,000)."""

from __future__ import annotations

from pathlib import Path

import pytest
from failover import run_failover


@pytest.mark.slow
async def test_killing_the_stream_leader_mid_publish_loses_nothing_and_stores_nothing_twice(
    tmp_path: Path,
) -> None:
    """5,000 findings through publish_many, the leader SIGKILLed at 40%: every one is acked
    at the sequence the log holds it at, each is stored exactly once, a new leader takes
    over, the restarted node catches up, and the projector, running throughout, never
    stops and ends with a view equal to replay."""
    result = await run_failover(tmp_path, count=5_000, chunk=500)
    assert result.killed and result.new_leader and result.new_leader != result.killed
    assert result.acked == result.published == 5_000
    assert result.lost == 0 and result.stored_twice == 0
    assert result.stored == result.distinct_stored == 5_000
    assert result.acks_match_log
    assert result.projector_stopped == ""
    assert result.view_keys > 0 and result.view_equals_replay
