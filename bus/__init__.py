"""loopbus transport: the only package that knows NATS exists.

bus = await connect(url)                     # BusUnreachable names the URL
await ensure_log(bus.js)                     # idempotent: stream LOOP + KV buckets
ack = await bus.publish(event)               # Nats-Msg-Id = event.id
acks = await bus.publish_many(events)        # pipelined, exact acks, retried safely
await bus.publish_transition(ev, expected)   # TransitionConflict if someone got there first
await bus.publish_atomic(events)             # all or nothing (JetStream atomic batch)
views = await bus.bucket(PROJECTION_BUCKET)  # KV, behind loopbus's own types
async for rec in read(bus, subjects=[...], start_seq=1, follow=False): ...

Every call rides through a server restart or a cluster failover (``bus.retry``) for
``bus.backoff.budget`` seconds, then raises one BusError; readers re-create their consumer
as soon as the client reconnects (``bus.reconnects``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from schemas.lazy import lazy_exports

# The names are loaded on first use (PEP 562), not when the package is imported: a command
# that imports one light submodule (``bus.errors``, ``bus.creds``) or only
# parses its arguments must not pay for nats-py and its websocket transport (``loopbus
# --help`` started in over a second). ``from bus import Bus`` still works: it loads
# ``bus.connection`` at that moment.
if TYPE_CHECKING:
    from bus.connection import Bus, connect, connect_once
    from bus.embedded import EmbeddedServer, free_port, port_is_free, server_binary
    from bus.errors import (
        BatchRefused,
        BusError,
        BusUnreachable,
        EmbeddedServerError,
        KeyChanged,
        LogNotProvisioned,
        NotNats,
        PublishFailed,
        ServerUnavailable,
        TransitionConflict,
        ViewUnreadable,
    )
    from bus.kv import Bucket, KvEntry
    from bus.provision import (
        HEARTBEAT_BUCKET,
        LOG_STREAM,
        PROJECTION_BUCKET,
        WORKER_BUCKET,
        ensure_log,
        log_config,
    )
    from bus.publisher import Ack
    from bus.reader import Record, read
    from bus.views import Views

_HOME: dict[str, str] = {
    "Ack": "bus.publisher",
    "BatchRefused": "bus.errors",
    "Bucket": "bus.kv",
    "Bus": "bus.connection",
    "BusError": "bus.errors",
    "BusUnreachable": "bus.errors",
    "EmbeddedServer": "bus.embedded",
    "EmbeddedServerError": "bus.errors",
    "HEARTBEAT_BUCKET": "bus.provision",
    "KeyChanged": "bus.errors",
    "KvEntry": "bus.kv",
    "LOG_STREAM": "bus.provision",
    "LogNotProvisioned": "bus.errors",
    "NotNats": "bus.errors",
    "PROJECTION_BUCKET": "bus.provision",
    "PublishFailed": "bus.errors",
    "Record": "bus.reader",
    "ServerUnavailable": "bus.errors",
    "TransitionConflict": "bus.errors",
    "ViewUnreadable": "bus.errors",
    "Views": "bus.views",
    "WORKER_BUCKET": "bus.provision",
    "connect": "bus.connection",
    "connect_once": "bus.connection",
    "ensure_log": "bus.provision",
    "free_port": "bus.embedded",
    "log_config": "bus.provision",
    "port_is_free": "bus.embedded",
    "read": "bus.reader",
    "server_binary": "bus.embedded",
}
"""Where each exported name lives."""

__all__ = [
    "HEARTBEAT_BUCKET",
    "LOG_STREAM",
    "PROJECTION_BUCKET",
    "WORKER_BUCKET",
    "Ack",
    "BatchRefused",
    "Bucket",
    "Bus",
    "BusError",
    "BusUnreachable",
    "EmbeddedServer",
    "EmbeddedServerError",
    "KeyChanged",
    "KvEntry",
    "LogNotProvisioned",
    "NotNats",
    "PublishFailed",
    "Record",
    "ServerUnavailable",
    "TransitionConflict",
    "ViewUnreadable",
    "Views",
    "connect",
    "connect_once",
    "ensure_log",
    "free_port",
    "log_config",
    "port_is_free",
    "read",
    "server_binary",
]


__getattr__ = lazy_exports(__name__, _HOME, globals())
