"""Exports a package loads on first use, so importing the package costs nothing until a
name is read (the CLI parses arguments without nats-py or msgspec's decoders)."""

from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, home: Mapping[str, str], namespace: dict[str, Any]
) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``home`` maps each export to the module
    that defines it; a loaded name is kept in ``namespace`` (the package's globals), so the
    next lookup is a plain attribute."""

    def load(name: str) -> Any:
        where = home.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        # __import__, not importlib.import_module: `python -X importtime` times only
        # imports that go through it, and it is how a slow start is found.
        value = getattr(__import__(where, fromlist=[name]), name)
        namespace[name] = value
        return value

    return load
