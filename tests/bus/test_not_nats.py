"""A URL that is not a NATS server's is said to be so, not reported as a timeout."""

from __future__ import annotations

import re
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from bus import BusUnreachable, NotNats, connect, connect_once, free_port


class _Page(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"a web page\n")

    def log_message(self, *_args: object) -> None:
        pass


class _Quiet(ThreadingHTTPServer):
    def handle_error(self, *_args: object) -> None:
        pass  # a NATS client hanging up mid-request is what these tests do to it


@pytest.fixture
def web_server() -> Iterator[str]:
    """A real HTTP server on a free port (what a mistyped port or scheme reaches)."""
    server = _Quiet(("127.0.0.1", 0), _Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def greeter() -> Iterator[str]:
    """A server that greets every connection with something other than INFO (an SSH
    server's banner, say)."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                conn.sendall(b"SSH-2.0-OpenSSH_9.2\r\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join()
        listener.close()


CONNECTORS = [pytest.param(connect, id="connect"), pytest.param(connect_once, id="connect_once")]


@pytest.mark.parametrize("connector", CONNECTORS)
@pytest.mark.parametrize("scheme", ["http", "https", "ftp"])
async def test_a_url_whose_scheme_is_not_nats_is_refused_by_name(
    connector: object, scheme: str, web_server: str
) -> None:
    """``http://`` (or any scheme but nats, tls, ws, wss) names no NATS server: said at
    once, naming the scheme and the URL form to use."""
    url = f"{scheme}://{web_server}"
    with pytest.raises(NotNats, match=rf"{scheme}:// is not a NATS URL: .*nats://HOST:PORT"):
        await connector(url)  # type: ignore[operator]


@pytest.mark.parametrize("connector", CONNECTORS)
async def test_a_nats_url_pointing_at_a_web_server_says_so(
    connector: object, web_server: str
) -> None:
    """nats:// at an HTTP server (a page, the monitoring port): the error says it is an
    HTTP server, not a NATS server, instead of a timeout."""
    with pytest.raises(NotNats) as raised:
        await connector(f"nats://{web_server}")  # type: ignore[operator]
    message = str(raised.value)
    assert f"the server at {web_server} is an HTTP server, not a NATS server" in message
    assert "Timeout" not in message
    assert isinstance(raised.value, BusUnreachable)  # callers that wait for a server still do


async def test_a_server_greeting_with_something_else_is_named(greeter: str) -> None:
    """A server whose first words are not NATS's INFO is quoted."""
    greeted = re.escape("is not a NATS server: it greeted with 'SSH-2.0-")
    with pytest.raises(NotNats, match=greeted):
        await connect_once(f"nats://{greeter}")


async def test_a_dead_server_is_still_unreachable_not_misnamed() -> None:
    """Nothing listening is the old error: unreachable, start one."""
    url = f"nats://127.0.0.1:{free_port()}"
    with pytest.raises(BusUnreachable, match="start one with `loopbus up`") as raised:
        await connect_once(url)
    assert not isinstance(raised.value, NotNats)
