"""The gate machinery as a library: run a repository's checks at a commit, with the shared
cache, signed results, parsers and capability profiles.

The gate-runner daemon, the merger (trunk gates), the dispatcher (boot) and ``loopbus
gate`` all run checks through this package::

    from workers.gates import GateRunner, load_or_create
    runner = GateRunner(bus, repo_path, load_or_create(data_dir))
    suite = await runner.evaluate(candidate_sha, reason="trunk")
    if suite.green: ...                       # every check passed (cached or run now)
    return [*suite.intents, verdict]          # a shell: its kernel records them, in order

Names are imported lazily: the profile probes (``python -m workers.gates.probes``)
run inside checks and must start fast, without loading NATS, dulwich or cryptography.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "CheckRun": "workers.gates.runner",
    "GateRunner": "workers.gates.runner",
    "SuiteResult": "workers.gates.runner",
    "Signer": "workers.gates.signing",
    "load_or_create": "workers.gates.signing",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'workers.gates' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
