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
