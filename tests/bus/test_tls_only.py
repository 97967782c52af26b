"""A tls:// URL (or a CA to trust) talks TLS or nothing: a plain server is refused.

nats-py upgrades only when the server's INFO asks for TLS, so before this a tls:// URL
reached a plain server (or a man in the middle posing as one) in plaintext, credential
signature and all. These tests use real servers: the session's plain one, one started with
TLS and a CA of its own, and a relay in between that plays the man in the middle.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from bus import BusError, EmbeddedServer, connect, connect_once, free_port
from bus.tls import CA_FILE, NODE_FILE, NODE_KEY, ensure_tls
from bus.tls_only import PlaintextServer

CONNECTORS = [pytest.param(connect, id="connect"), pytest.param(connect_once, id="connect_once")]


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[EmbeddedServer, Path]]:
    """A nats-server that requires TLS, with a certificate from a CA of its own."""
    folder = tmp_path_factory.mktemp("tls")
    ensure_tls(folder / "certs", ["127.0.0.1", "localhost"])
    certs = folder / "certs"
    block = (
        f'tls {{ cert_file: "{certs / NODE_FILE}", key_file: "{certs / NODE_KEY}", '
        f'ca_file: "{certs / CA_FILE}", timeout: 5 }}'
    )
    server = EmbeddedServer(folder / "data", port=free_port(), auth=None, extra_config=block)
    asyncio.run(server.start())
    yield server, certs / CA_FILE
    server.stop()


class Relay:
    """A TCP relay to a server it can be told to change: a man in the middle. It keeps
    every byte the client sent, to show what reached the other end."""

    def __init__(self, upstream: int) -> None:
        self.upstream = upstream
        self.from_client = bytearray()
        self.server: asyncio.Server | None = None
        self.pipes: set[asyncio.Task[None]] = set()
        self.writers: list[asyncio.StreamWriter] = []
        self.accepted = 0  # connections the relay took, to show a client tried

    @property
    def port(self) -> int:
        assert self.server is not None
        return int(self.server.sockets[0].getsockname()[1])

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream)
        self.writers += [writer, up_writer]
        for source, sink, keep in ((reader, up_writer, True), (up_reader, writer, False)):
            task = asyncio.create_task(self._pipe(source, sink, keep))
            self.pipes.add(task)
            task.add_done_callback(self.pipes.discard)

    async def _pipe(
        self, source: asyncio.StreamReader, sink: asyncio.StreamWriter, keep: bool
    ) -> None:
        with contextlib.suppress(OSError, asyncio.CancelledError):
            while chunk := await source.read(65536):
                if keep:
                    self.from_client += chunk
                sink.write(chunk)
                await sink.drain()
        sink.close()

    def cut(self) -> None:
        """Drop every connection through the relay (the client will reconnect)."""
        for writer in self.writers:
            writer.close()
        self.writers.clear()

    async def stop(self) -> None:
        self.cut()
        if self.server is not None:
            self.server.close()
        for task in list(self.pipes):
            task.cancel()


@pytest_asyncio.fixture
async def relay(nats_server: EmbeddedServer) -> AsyncIterator[Relay]:
    """A relay to the session's plain server."""
    running = Relay(nats_server.port)
    await running.start()
    yield running
    await running.stop()


@pytest.mark.parametrize("connector", CONNECTORS)
async def test_a_tls_url_to_a_plain_server_is_refused_in_one_line(
    connector: object, nats_server: EmbeddedServer
) -> None:
    url = f"tls://127.0.0.1:{nats_server.port}"
    with pytest.raises(BusError) as raised:
        await connector(url, timeout=1.0)  # type: ignore[operator]
    message = str(raised.value)
    assert "\n" not in message
    assert f"the NATS server at 127.0.0.1:{nats_server.port} does not do TLS" in message
    assert f"but {url} asks for it (it says tls://)" in message
    assert "give the server's TLS address, or nats://" in message


@pytest.mark.parametrize("connector", CONNECTORS)
async def test_a_ca_with_a_nats_url_to_a_plain_server_is_refused(
    connector: object, nats_server: EmbeddedServer, tls_server: tuple[EmbeddedServer, Path]
) -> None:
    """A CA to trust asks for TLS as tls:// does."""
    _, ca = tls_server
    with pytest.raises(BusError, match=r"asks for it \(--tls-ca \(or LOOPBUS_TLS_CA\) is given\)"):
        await connector(nats_server.url, tls_ca=ca, timeout=1.0)  # type: ignore[operator]


@pytest.mark.parametrize("connector", CONNECTORS)
async def test_nothing_reaches_a_plain_server_behind_a_tls_url(
    connector: object, relay: Relay
) -> None:
    """The refusal comes before CONNECT: not a byte of ours (no credential's signature,
    no message) reaches a man in the middle who strips TLS."""
    with pytest.raises(BusError, match="does not do TLS"):
        await connector(f"tls://127.0.0.1:{relay.port}", timeout=1.0)  # type: ignore[operator]
    assert bytes(relay.from_client) == b""


async def test_a_daemon_does_not_reconnect_in_plaintext(
    tls_server: tuple[EmbeddedServer, Path], nats_server: EmbeddedServer
) -> None:
    """A daemon connected over TLS whose connection is cut and answered by a plain server
    (a downgrade in the middle) keeps trying, and stays disconnected: it sends that server
    nothing, and it keeps only the last refusal, not one per attempt."""
    server, ca = tls_server
    relay = Relay(server.port)
    await relay.start()
    bus = await connect(f"tls://localhost:{relay.port}", tls_ca=ca)
    try:
        await bus.js.account_info()
        relay.upstream = nats_server.port
        before = len(relay.from_client)
        accepted = relay.accepted
        relay.cut()
        await asyncio.sleep(2.0)  # several reconnection attempts, 0.5 s apart
        # It tried (else nothing sent would prove nothing), and refused each time.
        assert relay.accepted >= accepted + 2
        assert bytes(relay.from_client[before:]) == b""
        assert not bus.nc.is_connected
        assert bus.reconnects.count == 0
        # A daemon retries for as long as it lives: one refusal kept, not a growing list.
        kept = inspect.getclosurevars(bus.nc._error_cb).nonlocals["plaintext"]
        assert isinstance(kept, PlaintextServer)
    finally:
        await bus.close()
        await relay.stop()


@pytest.mark.parametrize("connector", CONNECTORS)
@pytest.mark.parametrize("scheme", ["tls", "nats"])
async def test_the_server_that_does_tls_is_reached_and_the_plain_one_is_not(
    connector: object,
    scheme: str,
    tls_server: tuple[EmbeddedServer, Path],
    nats_server: EmbeddedServer,
) -> None:
    """With tls:// or with nats:// and a CA, the server that does TLS is reached over
    TLS, and the plain one, reached the same way, is refused."""
    server, ca = tls_server
    bus = await connector(f"{scheme}://localhost:{server.port}", tls_ca=ca)  # type: ignore[operator]
    try:
        await bus.js.account_info()
        assert bus.nc._transport._io_writer.get_extra_info("sslcontext") is not None
    finally:
        await bus.close()
    plain = f"{scheme}://localhost:{nats_server.port}"
    with pytest.raises(BusError, match="does not do TLS"):
        await connector(plain, tls_ca=ca, timeout=1.0)  # type: ignore[operator]


def test_the_cli_refuses_a_tls_url_to_a_plain_server(
    tmp_path: Path, nats_server: EmbeddedServer
) -> None:
    """The defect as it was found: `loopbus status --nats-url tls://…` against a plain
    server succeeded; now one line and exit 1."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPBUS_")}
    url = f"tls://127.0.0.1:{nats_server.port}"
    done = subprocess.run(
        [sys.executable, "-m", "loopbus", "status", "--project", "calc", "--nats-url", url],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"loopbus: error: the NATS server at 127.0.0.1:{nats_server.port}")
    assert f"but {url} asks for it" in lines[0]
