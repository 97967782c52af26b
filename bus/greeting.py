"""Telling a server that is not NATS from one that does not answer.

A connection to something that is not a NATS server (a web page, nats-server's monitoring
port, an ``http://`` URL typed for ``nats://``) fails the way a dead server does: the
client waits for the ``INFO`` line a NATS server sends first and times out. So when a
connection fails, the server is asked once more, plainly: a NATS server greets every
client with ``INFO`` at once; an HTTP server says nothing until asked, and then answers
``HTTP/``. What it said is turned into a line that names it.
"""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

NATS_SCHEMES = ("nats", "tls", "ws", "wss")
"""The URL schemes a NATS client connects with (nats-py's)."""
GREETING = b"INFO"
"""What a NATS server sends first, to every client, before anything is asked."""
PROBE = b"GET / HTTP/1.0\r\n\r\n"
"""Asked of a server that said nothing: an HTTP server answers it; a slow NATS server
greets (and rejects it as a protocol error, which costs it nothing)."""


def scheme_problem(url: str) -> str | None:
    """Why ``url`` cannot name a NATS server by its scheme (``http://…``), or ``None``."""
    for server in _servers(url):
        if "://" not in server:
            continue  # host:port: nats-py reads it as nats://
        scheme = server.split("://", 1)[0].lower()
        if scheme not in NATS_SCHEMES:
            return (
                f"{scheme}:// is not a NATS URL: a NATS server is reached at nats://HOST:PORT "
                "(tls:// with TLS; its client port, 4222 by default)"
            )
    return None


def not_nats(url: str, timeout: float = 2.0) -> str | None:
    """Why the first server of ``url`` that accepts a connection is not a NATS server, or
    ``None`` (it greeted as one, nothing accepts the connection, or it speaks websocket)."""
    for server in _servers(url):
        parsed = urlsplit(server if "://" in server else f"nats://{server}")
        if parsed.scheme.lower() in ("ws", "wss"):
            return None  # a websocket server greets only after its handshake
        try:
            host, port = parsed.hostname or "127.0.0.1", parsed.port or 4222
            with socket.create_connection((host, port), timeout=timeout) as conn:
                conn.settimeout(timeout)
                return _judge(f"{host}:{port}", conn)
        except (OSError, ValueError):
            continue
    return None


def _judge(where: str, conn: socket.socket) -> str | None:
    first = _read(conn)
    if first is None:  # silent: ask it something a web server answers
        try:
            conn.sendall(PROBE)
        except OSError:
            return None
        first = _read(conn)
    if first is None:
        return (
            f"the server at {where} accepts connections but does not greet as a NATS server "
            "does (no INFO line): is that the NATS client port?"
        )
    if first.startswith(GREETING):
        return None
    if first.startswith(b"HTTP/"):
        return (
            f"the server at {where} is an HTTP server, not a NATS server (a web page, or "
            "nats-server's monitoring port?): give its client port, 4222 by default, as "
            "nats://HOST:PORT"
        )
    said = first[:40].decode("ascii", "replace").strip()
    return f"the server at {where} is not a NATS server: it greeted with {said!r}"


def _read(conn: socket.socket) -> bytes | None:
    try:
        data = conn.recv(64)
    except (TimeoutError, OSError):
        return None
    return data or None


def _servers(url: str) -> list[str]:
    return [part.strip() for part in url.split(",") if part.strip()]
