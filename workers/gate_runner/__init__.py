"""The gate-runner daemon: runs a unit's gate suite when the unit submits a commit, and
watches trunk. ``python -m workers.gate_runner`` runs it; the machinery it runs
checks with is the library :mod:`workers.gates`."""
