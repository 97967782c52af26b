"""Errors of the gate runner. Each prints as one line naming the field, the value and the fix."""

from __future__ import annotations


class GateRunnerError(Exception):
    """Root of every gate-runner error."""


class ConfigError(GateRunnerError):
    """Raised when a ``loopbus.toml`` (or a shipped profile) is not a valid gate configuration.

    ``field`` is the dotted path (``check[1].parser``), ``value`` what stood there (or
    ``None`` when it is missing), ``hint`` what to do; ``source`` names the file.
    """

    def __init__(
        self, field: str, value: object, hint: str, *, source: str = "loopbus.toml"
    ) -> None:
        if field == "file":  # the whole file is wrong (not TOML): there is no single value
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


class RepoError(GateRunnerError):
    """Raised when the repository, the commit or its configuration cannot be read."""
