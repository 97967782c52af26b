"""A deleted or shortened log is never quietly replaced by an empty one."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import nats
from securekit import Secured

from bus import (
    LOG_STREAM,
    EmbeddedServer,
    connect,
    ensure_log,
    free_port,
)
from bus.history import EvidenceUnreadable, bucket_evidence
from bus.provision import WORKER_BUCKET, log_config

LOOPBUS = [sys.executable, "-m", "loopbus.cli"]
INTEGRITY = [sys.executable, "-m", "workers.integrity"]


def run(cmd: list[str], env: dict[str, str] | None = None, timeout: float = 60):
    return subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        env=os.environ | (env or {}),
    )


def run_daemon_briefly(url: str, creds: Path | None) -> None:
    """Run the integrity daemon until it has beaten once (it leaves a health beacon)."""
    cmd = [*INTEGRITY, "--nats-url", url, *(["--creds", str(creds)] if creds else [])]
    process = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    assert process.stderr is not None
    for line in process.stderr:
        if "daemon.caught_up" in line or "daemon.started" in line:
            break
    asyncio.run(_until_beacon(url))
    process.terminate()
    process.wait(timeout=30)


async def _until_beacon(url: str) -> None:
    from bus.provision import WORKER_BUCKET

    nc = await nats.connect(url, nkeys_seed_str=os.environ.get("_TEST_SEED") or None)
    try:
        kv = await nc.jetstream().key_value(WORKER_BUCKET)
        for _ in range(400):
            try:
                await kv.get("health.integrity")
                return
            except Exception:  # not beaten yet
                await asyncio.sleep(0.05)
        raise AssertionError("the integrity daemon never beat")
    finally:
        await nc.close()


async def _delete_log(url: str, seed: str | None) -> None:
    nc = await nats.connect(url, **({"nkeys_seed_str": seed} if seed else {}))
    try:
        await nc.jetstream().delete_stream(LOG_STREAM)
    finally:
        await nc.close()


async def _log_exists(url: str, seed: str | None) -> bool:
    nc = await nats.connect(url, **({"nkeys_seed_str": seed} if seed else {}))
    try:
        await nc.jetstream().stream_info(LOG_STREAM)
        return True
    except nats.js.errors.NotFoundError:
        return False
    finally:
        await nc.close()


def test_a_daemon_refuses_to_recreate_a_deleted_log(own_secured: Secured) -> None:
    """After an admin deletes the log, a (re)started daemon exits with one line saying the
    log is gone but history existed, and the log stays absent."""
    secured = own_secured
    os.environ["_TEST_SEED"] = secured.creds["reader"].seed
    try:
        run_daemon_briefly(secured.url, secured.file("system"))
    finally:
        del os.environ["_TEST_SEED"]
    asyncio.run(_delete_log(secured.url, secured.creds["admin"].seed))
    done = run([*INTEGRITY, "--nats-url", secured.url, "--creds", str(secured.file("system"))])
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert "is gone, but history existed" in last and "health.integrity" in last
    assert not asyncio.run(_log_exists(secured.url, secured.creds["reader"].seed))


def test_without_auth_too_no_daemon_recreates_a_log_that_existed(tmp_path: Path) -> None:
    """On a server without authorization (where a daemon could create the log), a daemon
    that finds the log deleted but a beacon in the buckets refuses all the same."""
    server = EmbeddedServer(tmp_path / "bare", port=free_port(), auth=None)
    asyncio.run(server.start())
    try:

        async def provision() -> None:
            bus = await connect(server.url)
            await ensure_log(bus.js)
            await bus.close()

        asyncio.run(provision())
        run_daemon_briefly(server.url, None)
        asyncio.run(_delete_log(server.url, None))
        done = run([*INTEGRITY, "--nats-url", server.url])
        assert done.returncode == 1
        assert "refusing to create an empty one" in done.stderr
        assert not asyncio.run(_log_exists(server.url, None))
    finally:
        server.stop()


def test_provision_refuses_a_log_that_lost_its_start_unless_adopted(own_secured: Secured) -> None:
    """A log whose first sequence is above 1 (shrunk with max_msgs) is refused by
    provision, naming the sequence; --adopt accepts it and restores the no-limit config."""
    secured = own_secured

    async def shorten() -> None:
        nc = await nats.connect(secured.url, nkeys_seed_str=secured.creds["admin"].seed)
        js = nc.jetstream()
        for n in range(3):
            await js.publish(f"loop.hist.claim.builder.agent.report.builder.U{n}", b"{}")
        shrunk = log_config()
        shrunk.max_msgs = 1  # the move: deny-purge does not stop this
        await js.update_stream(shrunk)
        await nc.close()

    asyncio.run(shorten())
    admin = ["--nats-url", secured.url, "--creds", str(secured.file("admin"))]
    refused = run([*LOOPBUS, "provision", *admin])
    assert refused.returncode == 1, refused.stderr
    assert "starts at sequence 3, not 1" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    adopted = run([*LOOPBUS, "provision", *admin, "--adopt"])
    assert adopted.returncode == 0, adopted.stderr

    async def max_msgs() -> int:
        nc = await nats.connect(secured.url, nkeys_seed_str=secured.creds["reader"].seed)
        info = await nc.jetstream().stream_info(LOG_STREAM)
        await nc.close()
        return int(info.config.max_msgs)

    assert asyncio.run(max_msgs()) == -1


def test_provision_needs_the_admin_credential(secured: Secured) -> None:
    """Provisioning with the system credential cannot create or change the log."""
    done = run(
        [
            *LOOPBUS,
            "provision",
            "--nats-url",
            secured.url,
            "--creds",
            str(secured.file("system")),
            "--replicas",
            "1",
        ]
    )
    # The log exists and is as it should be, so nothing needs changing: provision passes.
    assert done.returncode == 0, done.stderr

    async def loosen_and_provision() -> None:
        nc = await nats.connect(secured.url, nkeys_seed_str=secured.creds["system"].seed)
        try:
            loose = log_config()
            loose.max_msgs = 5
            try:
                await nc.jetstream(timeout=1.5).update_stream(loose)
            except TimeoutError:
                return
            raise AssertionError("system updated the stream")
        finally:
            await nc.close()

    asyncio.run(loosen_and_provision())


def test_buckets_that_do_not_answer_are_no_evidence_that_history_never_existed(
    tmp_path: Path,
) -> None:
    """A busy server that times out on the bucket read once counted as "no evidence", and
    a daemon then created an empty log where one had existed (seen in CI on the test
    above). The server here is real and really stops answering (SIGSTOP): the read is
    tried again, then refused as unreadable, not taken as "nothing was here"."""
    server = EmbeddedServer(tmp_path / "bare", port=free_port(), auth=None)
    asyncio.run(server.start())
    assert server.process is not None

    async def read_while_stopped() -> BaseException | str | None:
        bus = await connect(server.url)
        try:
            await ensure_log(bus.js)
            kv = await bus.js.key_value(WORKER_BUCKET)
            await kv.put("health.integrity", b"{}")
            assert await bucket_evidence(bus.js) is not None  # answered: evidence
            assert server.process is not None
            server.process.send_signal(signal.SIGSTOP)
            try:
                return await bucket_evidence(bus.js)
            except EvidenceUnreadable as exc:
                return exc
            finally:
                server.process.send_signal(signal.SIGCONT)
        finally:
            await bus.close()

    try:
        found = asyncio.run(read_while_stopped())
        assert isinstance(found, EvidenceUnreadable), f"an unanswered read counted as {found!r}"
        assert "bucket" in str(found)
    finally:
        server.stop()
