"""A nats-server run with loopbus's credentials, as ``loopbus up`` runs it (shared by the
tests here; tests/auth/conftest.py puts this folder on ``sys.path``)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from bus import EmbeddedServer, connect, ensure_log, free_port
from bus.creds import Credential, default_file, load_credential


@dataclass
class Secured:
    server: EmbeddedServer
    creds: dict[str, Credential]

    @property
    def url(self) -> str:
        return self.server.url

    def file(self, role: str) -> Path:
        path = self.creds[role].path
        assert path is not None
        return path


def start_secured(data_dir: Path) -> Secured:
    """Start an authorising server on ``data_dir`` and provision the log as admin."""
    server = EmbeddedServer(data_dir, port=free_port())
    asyncio.run(server.start())
    roles = ("admin", "system", "operator", "reader", "agent")
    creds = {role: load_credential(default_file(data_dir, role)) for role in roles}

    async def provision() -> None:
        bus = await connect(server.url, creds=creds["admin"])
        await ensure_log(bus.js)
        await bus.close()

    asyncio.run(provision())
    return Secured(server, creds)
