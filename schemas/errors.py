"""Errors raised by the schemas layer: every one names the field, the value and the fix."""


class SchemaError(ValueError):
    """Root of every schemas error: the bytes or values do not make a valid loopbus event.

    It subclasses ``ValueError`` so that msgspec turns one raised in ``__post_init__`` into
    a ``ValidationError`` carrying the field path, during decoding as well as construction.
    """


class InvalidEvent(SchemaError):
    """Raised when bytes do not decode into a known event kind.

    ``field`` is the dotted path msgspec reported (``$.target.start``) or ``None`` when the
    whole document is wrong (not JSON, not an object); ``value`` is what stood there.
    """

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        value: object = None,
        kind: str | None = None,
    ):
        super().__init__(message)
        self.field = field
        self.value = value
        self.kind = kind


class InvalidValue(SchemaError):
    """Raised when a value given to a constructor or a parser is out of its domain."""

    def __init__(self, field: str, value: object, hint: str):
        super().__init__(f"{field}={value!r} is not valid: {hint}")
        self.field = field
        self.value = value
        self.hint = hint
