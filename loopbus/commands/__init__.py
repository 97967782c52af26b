"""One module per command group; each exposes ``register(subparsers)``.

A command whose implementation is heavy (it talks to NATS, folds events) registers its
arguments from a light module of its own (``status_args``) and names its handler with
:func:`deferred`: ``--help`` and argument mistakes then cost argparse alone, and the
implementation is imported only when the command runs.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable


def deferred(module: str, name: str = "run") -> Callable[[argparse.Namespace], int]:
    """A handler that imports ``loopbus.commands.<module>`` when called and runs ``name``."""

    def handler(args: argparse.Namespace) -> int:  # __import__: -X importtime shows it
        run: Callable[[argparse.Namespace], int] = getattr(
            __import__(f"loopbus.commands.{module}", fromlist=[name]), name
        )
        return run(args)

    handler.__qualname__ = f"deferred({module}.{name})"
    return handler
