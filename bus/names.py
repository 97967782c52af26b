"""The names of loopbus's connection settings, defined once and light to import: the CLI
parses its arguments (and prints ``--help``) reading them, without importing nats-py, nkeys
or cryptography, which the modules that use them bring."""

from __future__ import annotations

from collections.abc import Mapping

DEFAULT_PORT = 4222
"""Where ``loopbus up`` starts its server by default."""
NATS_URL_ENV = "LOOPBUS_NATS_URL"
"""The environment variable every command and daemon takes its server's URL from."""
DEFAULT_URL = f"nats://127.0.0.1:{DEFAULT_PORT}"
"""The URL used when none is given: where ``loopbus up`` starts its server by default."""


def nats_url_from(environ: Mapping[str, str]) -> str:
    """The server URL a command or daemon uses when given none: ``$LOOPBUS_NATS_URL`` when
    set and not empty, else :data:`DEFAULT_URL`. One rule for both, so an empty variable
    cannot send a daemon to no server while the CLI beside it uses the default."""
    return environ.get(NATS_URL_ENV) or DEFAULT_URL


CREDS_ENV = "LOOPBUS_CREDS"
"""The environment variable naming a credential file."""
TLS_CA_ENV = "LOOPBUS_TLS_CA"
"""The environment variable naming the CA to trust for a ``tls://`` server."""
