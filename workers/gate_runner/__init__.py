"""The gate runner: content-addressed, signed, three-outcome checks on a repository's commits.

Library entry point for other daemons (the merger runs trunk gates this way)::

    from loopbus.workers.gate_runner import GateRunner, load_or_create
    runner = GateRunner(bus, repo_path, load_or_create(data_dir))
    suite = await runner.run_commit(candidate_sha, reason="trunk")
    if suite.green: ...                       # every check passed (cached or run now)

``python -m loopbus.workers.gate_runner`` runs the daemon (see
:mod:`loopbus.workers.gate_runner.daemon`).
Names are imported lazily: the profile probes (``python -m loopbus.workers.gate_runner.probes``) run
inside checks and must start fast, without loading NATS, dulwich or cryptography.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "CheckRun": "loopbus.workers.gate_runner.runner",
    "GateRunner": "loopbus.workers.gate_runner.runner",
    "SuiteResult": "loopbus.workers.gate_runner.runner",
    "Signer": "loopbus.workers.gate_runner.signing",
    "load_or_create": "loopbus.workers.gate_runner.signing",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'loopbus.workers.gate_runner' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
