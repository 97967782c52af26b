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

from typing import TYPE_CHECKING, Any

# The names are loaded on first use (PEP 562), not when the package is imported: a command
# that imports one light submodule (``loopbus.bus.errors``, ``loopbus.bus.creds``) or only
# parses its arguments must not pay for nats-py and its websocket transport (``loopbus
# --help`` started in over a second). ``from loopbus.bus import Bus`` still works: it loads
# ``loopbus.bus.connection`` at that moment.
if TYPE_CHECKING:
    from loopbus.bus.connection import Bus, connect, connect_once
    from loopbus.bus.embedded import EmbeddedServer, free_port, port_is_free, server_binary
    from loopbus.bus.errors import (
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
    from loopbus.bus.kv import Bucket, KvEntry
    from loopbus.bus.provision import (
        HEARTBEAT_BUCKET,
        LOG_STREAM,
        PROJECTION_BUCKET,
        WORKER_BUCKET,
        ensure_log,
        log_config,
    )
    from loopbus.bus.publisher import Ack
    from loopbus.bus.reader import Record, read
    from loopbus.bus.views import Views

_HOME: dict[str, str] = {
    "Ack": "loopbus.bus.publisher",
    "BatchRefused": "loopbus.bus.errors",
    "Bucket": "loopbus.bus.kv",
    "Bus": "loopbus.bus.connection",
    "BusError": "loopbus.bus.errors",
    "BusUnreachable": "loopbus.bus.errors",
    "EmbeddedServer": "loopbus.bus.embedded",
    "EmbeddedServerError": "loopbus.bus.errors",
    "HEARTBEAT_BUCKET": "loopbus.bus.provision",
    "KeyChanged": "loopbus.bus.errors",
    "KvEntry": "loopbus.bus.kv",
    "LOG_STREAM": "loopbus.bus.provision",
    "LogNotProvisioned": "loopbus.bus.errors",
    "NotNats": "loopbus.bus.errors",
    "PROJECTION_BUCKET": "loopbus.bus.provision",
    "PublishFailed": "loopbus.bus.errors",
    "Record": "loopbus.bus.reader",
    "ServerUnavailable": "loopbus.bus.errors",
    "TransitionConflict": "loopbus.bus.errors",
    "ViewUnreadable": "loopbus.bus.errors",
    "Views": "loopbus.bus.views",
    "WORKER_BUCKET": "loopbus.bus.provision",
    "connect": "loopbus.bus.connection",
    "connect_once": "loopbus.bus.connection",
    "ensure_log": "loopbus.bus.provision",
    "free_port": "loopbus.bus.embedded",
    "log_config": "loopbus.bus.provision",
    "port_is_free": "loopbus.bus.embedded",
    "read": "loopbus.bus.reader",
    "server_binary": "loopbus.bus.embedded",
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


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # __import__, not importlib.import_module: `python -X importtime` times only imports
    # that go through it, and it is how a slow start is found.
    value = getattr(__import__(home, fromlist=[name]), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value
