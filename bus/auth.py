"""Who may publish what on the wire: the roles, their permissions, nats-server's config.

Authority is decided twice. The folds judge every event (:mod:`schemas.authority`);
this module makes the server refuse the publish in the first place, so a process with an
``agent`` credential cannot put a fact, another principal's claim, or a stream update on
the bus at all. The permissions are computed here once and used both to write the
server's ``authorization`` block and to check a publish in the client before sending it
(one clear line instead of nats-server's timeout).

Roles:

* ``admin`` — provisioning only (``loopbus up``/``provision``): may create, update, purge
  and delete the stream and the buckets. Daemons never hold it.
* ``system`` — the daemons: publish facts, write the KV buckets; never change, purge or
  delete a stream, a bucket or a message.
* ``operator`` — a person: claims on ``loop.*.claim.operator.<principal>.>`` and reads.
* ``agent`` — builders, reviewers, planners…: claims on
  ``loop.*.claim.<role>.<principal>.>`` for the agent roles, and reads. No KV write, not
  even a heartbeat: the builder daemon beats for the agent it runs (as ``system``), and a
  beat's actor is not checked by the server, so an agent allowed to write the bucket could
  keep any unit alive.
* ``reader`` — reads only (``tail``, ``replay``, ``status``).

Everybody may subscribe: the log is not secret from a credentialed user, it is tamper-proof.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from bus.provision import BUCKETS, LOG_STREAM
from schemas.subjects import claim_family, matches_any

CredRole = Literal["admin", "system", "operator", "reader", "agent"]
CRED_ROLES: tuple[CredRole, ...] = ("admin", "system", "operator", "reader", "agent")

AGENT_CLAIM_ROLES = ("builder", "reviewer", "planner", "investigator", "standards")
"""The event roles an ``agent`` credential may claim as (all under its one principal)."""

READS = (
    # JetStream reads: stream and account info, direct and stored gets, consumers to
    # read with, and the replies a consumer's protocol needs (acks, flow control).
    "$JS.API.INFO",
    "$JS.API.STREAM.INFO.*",
    "$JS.API.STREAM.NAMES",
    "$JS.API.STREAM.LIST",
    "$JS.API.STREAM.MSG.GET.*",
    "$JS.API.DIRECT.GET.>",
    "$JS.API.CONSUMER.CREATE.>",
    "$JS.API.CONSUMER.DURABLE.CREATE.>",
    "$JS.API.CONSUMER.INFO.>",
    "$JS.API.CONSUMER.NAMES.>",
    "$JS.API.CONSUMER.LIST.>",
    "$JS.API.CONSUMER.MSG.NEXT.>",
    "$JS.API.CONSUMER.DELETE.>",
    "$JS.ACK.>",
    "$JS.FC.>",
    # Not "_INBOX.>": nothing in loopbus answers a request, and every role may subscribe
    # there, so a role allowed to publish there could answer a daemon's publish before
    # the server does (tests/auth/test_wire.py).
)

STREAM_CHANGES = (
    "$JS.API.STREAM.CREATE.>",
    "$JS.API.STREAM.UPDATE.>",
    "$JS.API.STREAM.DELETE.>",
    "$JS.API.STREAM.PURGE.>",
    "$JS.API.STREAM.MSG.DELETE.>",
    "$JS.API.STREAM.RESTORE.>",
    "$JS.API.STREAM.PEER.REMOVE.>",
    "$JS.API.ACCOUNT.PURGE.>",
    "$JS.API.SERVER.>",
    "$SYS.>",
)
"""What only ``admin`` may publish: any change to a stream (the log or a bucket's) other
than appending to it, and the server's own system subjects."""


@dataclass(frozen=True)
class Permissions:
    """Publish permissions of one credential (subscribing is open to every role)."""

    allow: tuple[str, ...]
    deny: tuple[str, ...] = ()

    def may_publish(self, subject: str) -> bool:
        return matches_any(self.allow, subject) and not matches_any(self.deny, subject)


def permissions(role: CredRole, principal: str) -> Permissions:
    """What a credential of ``role`` for ``principal`` may publish."""
    if role == "admin":
        return Permissions(allow=(">",))
    if role == "system":
        return Permissions(allow=(">",), deny=STREAM_CHANGES)
    if role == "reader":
        return Permissions(allow=READS, deny=STREAM_CHANGES)
    if role == "operator":
        claims: tuple[str, ...] = (claim_family(role="operator", principal=principal),)
        return Permissions(allow=READS + claims, deny=STREAM_CHANGES)
    if role == "agent":
        claims = tuple(claim_family(role=r, principal=principal) for r in AGENT_CLAIM_ROLES)
        # Not the heartbeat bucket: NATS checks who may write a bucket, never which key or
        # what the value says, so a credential that may beat may beat for any unit. Agents
        # run without a credential; their daemon beats for them (workers/builder/daemon.py).
        return Permissions(allow=READS + claims, deny=STREAM_CHANGES)
    raise ValueError(f"unknown credential role {role!r}")


def describe(role: CredRole, principal: str) -> str:
    """What the credential may publish, in a few words (for refusals)."""
    if role in ("admin", "system"):
        return "anything but stream changes" if role == "system" else "anything"
    if role == "reader":
        return "nothing: it only reads"
    if role == "operator":
        return f"only its own claims, {claim_family(role='operator', principal=principal)}"
    return f"only its own claims, loop.*.claim.<{'|'.join(AGENT_CLAIM_ROLES)}>.{principal}.>"


@dataclass(frozen=True)
class User:
    """One server user: an nkey public key with its role's permissions."""

    public_key: str
    role: CredRole
    principal: str


def authorization_block(users: list[User]) -> str:
    """nats-server's ``authorization { users = [...] }`` block for ``users``.

    A connection without one of these keys is refused: there is no anonymous user.
    """
    lines = ["authorization {", "  users = ["]
    for user in sorted(users, key=lambda u: (u.role, u.principal)):
        perm = permissions(user.role, user.principal)
        lines.append(f"    # {user.role} {user.principal}")
        lines.append(f"    {{ nkey: {user.public_key}, permissions: {{")
        lines.append(f"        publish: {{ allow: {_list(perm.allow)}")
        if perm.deny:
            lines.append(f"                   deny: {_list(perm.deny)}")
        lines.append("        }")
        lines.append('        subscribe: { allow: [">"] }')
        lines.append("    } }")
    lines.append("  ]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _list(subjects: tuple[str, ...]) -> str:
    return "[" + ", ".join(f'"{s}"' for s in subjects) + "]"


def kv_subject(bucket: str, key: str) -> str:
    """The subject a put to ``bucket``/``key`` is published on."""
    return f"$KV.{bucket}.{key}"


ADMIN_ONLY_STREAMS = (LOG_STREAM, *(f"KV_{b}" for b in BUCKETS))
"""The streams whose configuration only ``admin`` may change (for the docs and tests)."""
