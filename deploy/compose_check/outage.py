"""The failover check: kill the log's leader while two publishers keep writing, bring it
back, and count what was acknowledged against what the log holds."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from . import cluster
from .findings import Attempt, Client, Publisher, Tally, open_targets, read_log, read_status
from .findings import tally as count
from .shell import CheckFailed, say
from .stack import Stack


@dataclass(frozen=True)
class Outcome:
    killed: str
    led_meta: bool  # the killed node also led the meta group
    new_leader: str
    election_s: float
    first_ack_s: float  # from the kill to the first acknowledged publish begun after it
    down_s: float
    rejoin_s: float  # from `compose start` to every replica current again
    tally: Tally
    errors: Counter[str]  # what the refused publishes said, and how often
    messages: dict[str, int]


def _publishers(client: Client, stack: Stack) -> list[Publisher]:
    def host(target: str) -> list[str]:
        return client.host("operator", *client.finding(target, "published during the outage"))

    def container(target: str) -> list[str]:
        message = "published from a container during the outage"
        exec_argv = stack.exec(client.container_service)
        return client.container(exec_argv, "operator", *client.finding(target, message))

    return [Publisher("host", host), Publisher("container", container)]


def _wait(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise CheckFailed(f"{what} within {timeout:.0f} s")
        time.sleep(0.2)


def run_outage(stack: Stack, client: Client, outage_s: float, timeout: float) -> Outcome:
    monitors = stack.monitors()
    health, _ = cluster.wait_healthy(monitors, timeout)
    leader = health.stream_leader
    publishers = _publishers(client, stack)
    for publisher in publishers:
        publisher.start()
    try:
        _wait(
            lambda: all(any(a.finding_id for a in p.attempts) for p in publishers),
            timeout,
            "the publishers got no acknowledgement before the kill",
        )
        say(f"killing {leader}, the leader of stream {cluster.LOG_STREAM}, with SIGKILL")
        killed_at = time.monotonic()
        stack.kill(leader)
        new_leader, election_s = cluster.wait_new_leader(monitors, leader, timeout)
        say(f"{new_leader} leads {cluster.LOG_STREAM} {election_s:.1f} s after the kill")
        time.sleep(max(0.0, killed_at + outage_s - time.monotonic()))
        # The leader stays down until a publish started after the kill is acknowledged:
        # on a busy machine each publisher (a CLI process) can take longer to start than
        # the outage lasts, and the claim is about the cluster, not about the clock.
        _wait(
            lambda: any(a.finding_id and a.started > killed_at for p in publishers
                        for a in p.attempts),
            timeout,
            f"no publish was acknowledged while {leader} was down",
        )  # fmt: skip
        down_s = time.monotonic() - killed_at
        say(f"starting {leader} again after {down_s:.1f} s down")
        started_at = time.monotonic()
        stack.start(leader)
        stack.wait_ready(timeout, only={leader})
        cluster.wait_healthy(monitors, timeout)
        rejoin_s = time.monotonic() - started_at
        time.sleep(3)  # a few more writes with all three nodes back
    finally:
        for publisher in publishers:
            publisher.halt.set()
        for publisher in publishers:
            publisher.join(timeout=60)
    attempts = [a for p in publishers for a in p.attempts]
    return Outcome(
        killed=leader,
        led_meta=health.meta_leader == leader,
        new_leader=new_leader,
        election_s=election_s,
        first_ack_s=_first_ack(attempts, killed_at),
        down_s=down_s,
        rejoin_s=rejoin_s,
        tally=_settle(client, attempts),
        errors=Counter(a.error for a in attempts if not a.finding_id),
        messages=_converged(monitors, timeout),
    )


def _first_ack(attempts: list[Attempt], since: float) -> float:
    after = [a.ended for a in attempts if a.finding_id and a.started > since]
    return min(after) - since


def _settle(client: Client, attempts: list[Attempt]) -> Tally:
    """Read the log back (tail) and wait until status shows every acknowledged finding."""
    result = count(attempts, read_log(client))
    if result.lost:
        raise CheckFailed(
            f"{len(result.lost)} acknowledged finding(s) not on the log: {result.lost}"
        )
    if result.duplicated:
        raise CheckFailed(f"finding(s) stored more than once: {result.duplicated}")
    wanted = {a.target for a in attempts if a.finding_id}
    _wait(
        lambda: wanted <= open_targets(read_status(client)),
        60,
        "status did not show every acknowledged finding",
    )
    return result


def _converged(monitors: dict[str, str], timeout: float) -> dict[str, int]:
    """Every node holds the same number of messages of the log."""
    found: dict[str, int] = {}

    def equal() -> bool:
        health, _ = cluster.survey(monitors)
        found.update(health.messages if health else {})
        return health is not None and len(set(health.messages.values())) == 1

    _wait(equal, timeout, f"the nodes did not agree on the log's length ({found})")
    return found
