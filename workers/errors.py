"""Errors raised by the workers: the daemon kernel, configuration, repositories and gates.

One root, :class:`WorkerError`. Every configuration error has one shape — the file, the
field, the value found there and what to do — and prints as one line; the CLI and
``loopbus up`` show that line and nothing else.
"""

from __future__ import annotations

from schemas.project_config import CONFIG_FILE as CONFIG_FILE


class WorkerError(Exception):
    """Root of every error raised by ``workers``."""


class ConfigError(WorkerError):
    """Raised when ``loopbus.toml`` (or a shipped profile) is not a valid configuration.

    ``field`` is the dotted path (``check[1].parser``, ``review.roster``), ``value`` what
    stood there (``None`` when it is missing), ``hint`` what to do; ``source`` names the file.
    """

    def __init__(self, field: str, value: object, hint: str, *, source: str = CONFIG_FILE):
        if field == "file":  # the whole file is wrong (missing, not TOML): no single value
            message = f"{source}: {hint}"
        else:
            shown = "is missing" if value is None else f"= {value!r} is not valid"
            message = f"{source}: {field} {shown}: {hint}"
        super().__init__(message)
        self.field = field
        self.value = value
        self.hint = hint
        self.source = source


class WeakensProfile(ConfigError):
    """Raised when a project check would replace or relax a capability profile's check."""

    def __init__(self, field: str, value: object, profile: str, check: str) -> None:
        super().__init__(
            field,
            value,
            f"it would replace profile check {profile}/{check}; a project may only add checks "
            "(choose another id; changing a profile check goes through catalogue review)",
        )
        self.profile = profile
        self.check = check


class RepoError(WorkerError):
    """Raised when a repository cannot answer: not a repository, an unknown ref or commit,
    no common base, or a tree that cannot be read."""


class GateError(WorkerError):
    """Raised when a gate run cannot be set up (an executor that is not available, a key
    that cannot be read); a check that runs and fails is a result, never this error."""


class ViewOutdated(WorkerError):
    """Raised by the projector when a stored view no longer decodes (its state's shape
    changed): the views are rebuilt from the start of the log."""
