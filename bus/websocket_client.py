"""nats-py's websocket client, loaded only when something uses it.

``nats.aio.transport`` imports ``aiohttp`` at its top for ``WebSocketTransport``, so every
``import nats`` runs aiohttp's code: about a third of a one-shot command's start-up.
loopbus speaks ``nats://`` and ``tls://``, and nats-py reads ``aiohttp`` only inside the
websocket transport. :func:`defer` puts a stand-in ``aiohttp`` module in ``sys.modules``
before nats-py is imported: the module object nats-py binds is the real one, built from
aiohttp's own import spec, but its code runs on the first attribute anyone reads from it
(nats-py's ``ws://`` transport creating its ``ClientSession``, aiodocker, ``import
aiohttp.web``), exactly as an eager import would have run it. No code of nats-py or aiohttp
is replaced or edited, and an ``aiohttp`` already imported is left alone.

Why not ``importlib.util.LazyLoader``: on Python 3.11 the import statement reads
``__spec__`` of a module found in ``sys.modules``, and LazyLoader loads on any attribute,
so nats-py's own ``import aiohttp`` loaded it at once. The stand-in keeps the import
system's attributes (``__spec__``, ``__name__``) and loads on any other, including
``__path__``, so a submodule never runs before the package's ``__init__``.

Only entry points call it (the CLI), as they alone configure logging: a library does not
decide how a process loads its modules. The first load takes no lock; a one-shot command has
one thread, and the daemons that use aiohttp (aiodocker) reach it from the event loop.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from typing import Any

DEFERRED = "aiohttp"


class _Deferred(types.ModuleType):
    """A module whose code has not run yet; the first attribute read runs it, in place."""

    def __getattr__(self, name: str) -> Any:  # only for attributes the module lacks
        spec = self.__spec__
        assert spec is not None and spec.loader is not None  # defer() made it from both
        # From here on, reads are plain (and re-entrant, as aiohttp imports its submodules).
        self.__class__ = types.ModuleType  # type: ignore[assignment]
        if spec.submodule_search_locations is not None:
            self.__path__ = spec.submodule_search_locations
        try:
            spec.loader.exec_module(self)
        except BaseException:
            sys.modules.pop(spec.name, None)  # as a failed import leaves it
            raise
        return getattr(self, name)


def defer(name: str = DEFERRED) -> bool:
    """Make ``import <name>`` deferred in this process; True when it now is (False: it was
    imported already, or is not installed, and nothing changed)."""
    if name in sys.modules:
        return False
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        return False
    module = importlib.util.module_from_spec(spec)
    module.__dict__.pop("__path__", None)  # a submodule import must load the package first
    module.__class__ = _Deferred
    sys.modules[name] = module
    return True


def loaded(name: str = DEFERRED) -> bool:
    """True once ``name``'s code has run (or it was imported the ordinary way)."""
    module = sys.modules.get(name)
    return module is not None and not isinstance(module, _Deferred)
