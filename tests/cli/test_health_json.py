"""`loopbus health NAME --json`: the state it reports, for programs (docs/cli.md promises
`--json` on every command that reports state; health refused it)."""

from __future__ import annotations

import json
import subprocess
import time

from .conftest import LOOPBUS, loopbus


def test_health_json_says_healthy_and_the_beacon(nats_url: str) -> None:
    url = ("--nats-url", nats_url)
    worker = subprocess.Popen(
        [*LOOPBUS, "worker", "projector", *url],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        done = loopbus("health", "projector", "--json", *url)
        while done.code != 0 and time.monotonic() < deadline and worker.poll() is None:
            time.sleep(0.5)
            done = loopbus("health", "projector", "--json", *url)
        assert done.code == 0, done.err
        document = json.loads(done.out)
        assert document["healthy"] is True and document["name"] == "projector"
        assert document["pid"] == worker.pid  # `loopbus worker` execs the daemon
        assert {"host", "at", "last_seq"} <= set(document)
    finally:
        worker.terminate()
        worker.wait(timeout=30)


def test_health_json_of_a_daemon_not_running(nats_url: str) -> None:
    """Exit 1 as without --json; the document says so instead of a line on stderr."""
    done = loopbus("health", "no-such-beacon-yet", "--json", "--nats-url", nats_url)
    assert done.code == 2  # not a daemon: the usage error is the same
    done = loopbus("health", "verifier", "--here", "--json", "--nats-url", nats_url)
    assert (done.code, done.err) == (1, "")
    assert json.loads(done.out) == {"healthy": False, "name": "verifier"}
