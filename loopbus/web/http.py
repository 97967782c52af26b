"""A small read-only HTTP/1.1 server on asyncio streams (the standard library only).

The page needs GET, static files, JSON and one long-lived server-sent-event stream; a
framework would be a new dependency for that. One request per connection
(``Connection: close``): the page makes a few requests per update, all on localhost.
Anything but GET/HEAD is refused, so the page cannot change anything.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from urllib.parse import parse_qs, urlsplit

import msgspec
import structlog

log = structlog.get_logger()

MAX_LINE = 8_192
MAX_HEADERS = 64
READ_TIMEOUT_S = 10.0
SECURITY_HEADERS = {
    # Everything the page loads comes from this server: no CDN, no inline script.
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
    "style-src 'self'; script-src 'self'; connect-src 'self'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
_json = msgspec.json.Encoder()


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: dict[str, str]


@dataclass
class Response:
    status: int = 200
    body: bytes = b""
    content_type: str = "text/plain; charset=utf-8"
    stream: AsyncIterator[bytes] | None = None
    """Chunks written as they come (server-sent events), instead of ``body``."""
    headers: dict[str, str] = field(default_factory=dict)


def json_response(document: object, status: int = 200) -> Response:
    return Response(status, _json.encode(document), "application/json")


def error(status: int, message: str) -> Response:
    """One line saying what was wrong with the request, as JSON."""
    return json_response({"error": message}, status)


Handler = Callable[[Request], Awaitable[Response]]


def parse_target(target: str) -> tuple[str, dict[str, str]]:
    """The path and the query (the last value of each name) of a request target."""
    parts = urlsplit(target)
    query = {name: values[-1] for name, values in parse_qs(parts.query).items()}
    return parts.path or "/", query


async def _read_request(reader: asyncio.StreamReader) -> Request | Response:
    line = await asyncio.wait_for(reader.readuntil(b"\n"), READ_TIMEOUT_S)
    if len(line) > MAX_LINE:
        return error(414, "request line too long")
    try:
        method, target, _version = line.decode("latin-1").strip().split(" ", 2)
    except ValueError:
        return error(400, "malformed request line")
    for _ in range(MAX_HEADERS):
        header = await asyncio.wait_for(reader.readuntil(b"\n"), READ_TIMEOUT_S)
        if header in (b"\r\n", b"\n"):
            break
    else:
        return error(431, "too many headers")
    if method not in ("GET", "HEAD"):
        return error(405, f"{method} is not allowed: this page is read-only")
    path, query = parse_target(target)
    return Request(method, path, query)


def _head(response: Response, length: int | None) -> bytes:
    reason = HTTPStatus(response.status).phrase
    lines = [f"HTTP/1.1 {response.status} {reason}", f"Content-Type: {response.content_type}"]
    lines += [f"{k}: {v}" for k, v in (SECURITY_HEADERS | response.headers).items()]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def serve_connection(
    handler: Handler, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    try:
        try:
            request = await _read_request(reader)
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            return
        if isinstance(request, Response):
            response = request
        else:
            try:
                response = await handler(request)
            except Exception as exc:  # one bad request must not take the page down
                log.exception("page.request_failed", path=request.path)
                response = error(500, f"{type(exc).__name__}: {exc}")
        if response.stream is None:
            writer.write(_head(response, len(response.body)))
            if not (isinstance(request, Request) and request.method == "HEAD"):
                writer.write(response.body)
            await writer.drain()
            return
        writer.write(_head(response, None))
        await writer.drain()
        async for chunk in response.stream:
            writer.write(chunk)
            await writer.drain()
    except (ConnectionError, OSError):
        pass  # the browser went away
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await writer.wait_closed()


async def start(handler: Handler, host: str, port: int) -> asyncio.Server:
    async def on_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await serve_connection(handler, reader, writer)

    return await asyncio.start_server(on_connection, host, port, limit=MAX_LINE * 2)
