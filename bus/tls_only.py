"""Refusing a server that does not do TLS when the URL (or a CA) asks for TLS.

nats-py upgrades a connection to TLS only when the server's first ``INFO`` line says
``tls_required``, whatever the URL's scheme. So a ``tls://`` URL that reaches a plain
server, or a man in the middle who strips that flag from ``INFO``, gets the ``CONNECT``
(with the nkey's signature of the server's nonce: relayed, it logs the attacker in as us)
and every message after it in plaintext. The check sits where nats-py reads that first
``INFO``, before it writes anything at all, on the first connection and on every
reconnection of a daemon.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import nats.errors
from nats.aio.client import Client


class PlaintextServer(nats.errors.Error):
    """The server at ``server`` does not do TLS although the URL or a CA asked for it."""

    def __init__(self, server: str) -> None:
        super().__init__(server)
        self.server = server

    def __str__(self) -> str:
        return f"nats: {self.server} does not do TLS"


def demands_tls(servers: list[str], tls_ca: Path | None) -> bool:
    """A ``tls://`` server in the list, or a CA to trust: every server must then do TLS
    (a cluster whose nodes the client discovers is one deployment, TLS or not)."""
    if tls_ca is not None:
        return True
    return any(urlsplit(s).scheme.lower() == "tls" for s in servers if "://" in s)


def refusal(url: str, server: str, tls_ca: Path | None) -> str:
    """The one line that says a plaintext server was refused, and how to go on."""
    asked = "--tls-ca (or LOOPBUS_TLS_CA) is given" if tls_ca is not None else "it says tls://"
    return (
        f"the NATS server at {server} does not do TLS, but {url} asks for it ({asked}): "
        "refused before sending a credential or a message in plaintext; give the server's "
        "TLS address, or nats:// and no --tls-ca if that server is meant to be plain"
    )


class TlsOnlyClient(Client):
    """A nats-py client that will not talk to a server whose ``INFO`` does not require TLS.

    nats-py calls ``_process_info(..., initial_connection=True)`` with the first ``INFO``
    of each (re)connection before it upgrades to TLS and before it writes ``CONNECT``;
    raising there ends that attempt with nothing sent (tests/bus/test_tls_only.py holds
    nats-py to it).
    """

    async def _process_info(self, info: dict[str, Any], initial_connection: bool = False) -> None:
        if initial_connection:
            # nats-py sets the server before it reads INFO; were it not set, refuse all the same.
            uri = self._current_server.uri if self._current_server is not None else None
            scheme = uri.scheme if uri is not None else ""
            # wss:// is TLS by its transport; nats-py never upgrades ws://, flag or not.
            if scheme != "wss" and (scheme == "ws" or not info.get("tls_required")):
                # Host and port only: the netloc would carry a password in the URL.
                where = f"{uri.hostname}:{uri.port}" if uri is not None else "the server"
                raise PlaintextServer(where)
        await super()._process_info(info, initial_connection)
