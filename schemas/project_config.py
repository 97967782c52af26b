"""Names a project's configuration is written in, shared by every layer that reads it.

The CLI finds the file, the daemons parse it and the folds check a plan's checks against
it; each layer may import ``schemas`` and none may import the others' rooms, so the names
they must agree on live here, once.
"""

CONFIG_FILE = "loopbus.toml"
"""The project's configuration file, at the root of its repository (trunk's is in force)."""

TRUNK_ENV = "LOOPBUS_TRUNK"
"""Set by ``loopbus up`` for every daemon it starts: the one branch that is trunk."""

BOOT_CHECK = "boot"
"""The id of the check in ``loopbus.toml`` that starts the software and probes it: a
slice's increment must pass it to close (the dispatcher runs it; ``loopbus repo check``
warns when it is missing)."""

PARSER_NAMES: tuple[str, ...] = ("pytest", "ruff", "exit-code")
"""How a gate check's output may be read (a check's ``parser``); each has one reader in
the gate library (``workers/gates/parsers.py``), and a test keeps the two equal."""
