"""Errors raised by the bus: NATS exceptions are translated here, at the boundary, only.

Each keeps its cause (``raise … from exc``) and carries its data as fields.
"""

from __future__ import annotations


class BusError(Exception):
    """Root of every bus error."""


class BusUnreachable(BusError):
    """Raised when no NATS server answers at ``url``."""

    def __init__(self, url: str, detail: str = ""):
        super().__init__(
            f"cannot reach NATS at {url}"
            + (f" ({detail})" if detail else "")
            + "; start one with `loopbus up`, or pass --nats-url / set LOOPBUS_NATS_URL"
        )
        self.url = url
        self.detail = detail


class NotNats(BusUnreachable):
    """Raised when what answers at ``url`` is not a NATS server (or the URL cannot name
    one): said as such, not as a timeout."""

    def __init__(self, url: str, detail: str):
        BusError.__init__(self, f"{url}: {detail}")
        self.url = url
        self.detail = detail


class LogNotProvisioned(BusError):
    """Raised when the server is up but has no LOOP stream yet."""

    def __init__(self, url: str):
        super().__init__(
            f"NATS at {url} has no loopbus log (stream LOOP); "
            "run `loopbus up` against it once, or `loopbus provision`"
        )
        self.url = url


class PublishFailed(BusError):
    """Raised when the server refused an event or never acknowledged it."""

    def __init__(self, subject: str, detail: str):
        super().__init__(f"publish to {subject} failed: {detail}")
        self.subject = subject
        self.detail = detail


class TransitionConflict(BusError):
    """Raised when another writer appended to ``subject`` after sequence ``expected``.

    The loser must re-read the subject, re-validate against the new state, and try again
    (or give up if its transition no longer applies); it must never overwrite.
    """

    def __init__(self, subject: str, expected: int):
        super().__init__(
            f"{subject} moved past sequence {expected}: another writer got there first; "
            "re-read the unit and re-validate"
        )
        self.subject = subject
        self.expected = expected


class KeyChanged(BusError):
    """Raised when a conditional KV write finds the key already set or moved on."""

    def __init__(self, bucket: str, key: str):
        super().__init__(f"{bucket}/{key} changed since it was read; read it again")
        self.bucket = bucket
        self.key = key


class ViewUnreadable(BusError):
    """Raised when a stored view no longer decodes (its state's shape changed)."""

    def __init__(self, view: str, detail: str):
        super().__init__(f"view {view} does not decode ({detail}); rebuild it from the log")
        self.view = view
        self.detail = detail


class BatchRefused(BusError):
    """Raised when an atomic batch was not committed; none of its events are on the log."""

    def __init__(self, detail: str):
        super().__init__(f"atomic batch not committed: {detail}")
        self.detail = detail


class EmbeddedServerError(BusError):
    """Raised when the embedded nats-server cannot be found or does not start."""


class ServerUnavailable(BusError):
    """Raised when ``what`` got no answer (no responders, 503, timeouts) for ``budget``
    seconds: a server restart or a failover that did not end in time."""

    def __init__(self, what: str, budget: float, attempts: int, last: BaseException):
        super().__init__(
            f"{what}: no answer from NATS for {budget:g} s ({attempts} attempts, last: "
            f"{type(last).__name__}); is the server up and, in a cluster, does a quorum of "
            "nodes run?"
        )
        self.what = what
        self.budget = budget
        self.attempts = attempts


class CredentialsInvalid(BusError):
    """Raised when a credentials file is missing, unreadable or not a loopbus credential."""


class PermissionDenied(BusError):
    """Raised when the connection's credential may not publish on ``subject``."""

    def __init__(self, role: str, subject: str, detail: str):
        super().__init__(f"the {role} credential may not publish on {subject}: {detail}")
        self.role = role
        self.subject = subject
