"""The names a runner key goes by, apart from the signing code (which imports the
cryptography package): the CLI's ``--help`` shows them without loading it."""

from __future__ import annotations

DEFAULT_NAME = "gate-runner"
"""The key a gate runner signs with unless ``--runner-name`` names another."""
KEY_DIR_ENV = "LOOPBUS_KEY_DIR"
"""Where runner keys are kept (``DIR/keys``), when set."""
