"""compose.yaml's NATS nodes as local processes: one cluster definition for every test.

The nodes' command lines are read from compose.yaml (the services whose command runs
``nats-server``), so a locally run cluster cannot drift from the deployed one: every flag
is kept as written except the addresses (host names become 127.0.0.1 and free ports), the
store and monitoring paths, and compose's secrets (``/run/secrets/<name>``), which become
files that ``loopbus provision --creds-out`` writes under the store, as on a deployment
host. Used by tests/deploy (compose's flags and credentials run for real) and tests/bus
(the failover guarantee, which runs without authorization: ``auth=False``), and by
tests/benchmarks/bench_cluster.py.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from bus import free_port, server_binary
from loopbus.commands.provision import NODE_CONFIG, SECRET, make_secrets

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = ROOT / "compose.yaml"
CLIENT_PORT = 4222
ROUTE_PORT = 6222
SECRETS_DIR = "./secrets/"
LOCAL_CONFIG = "nats.local.conf"


def compose_secrets() -> dict[str, str]:
    """name -> file (relative to the repository) of compose's top-level secrets."""
    secrets = yaml.safe_load(COMPOSE.read_text()).get("secrets") or {}
    return {name: str(spec["file"]) for name, spec in secrets.items()}


def compose_services() -> dict[str, dict[str, Any]]:
    services: dict[str, dict[str, Any]] = yaml.safe_load(COMPOSE.read_text())["services"]
    return services


def nats_nodes(services: dict[str, dict[str, Any]] | None = None) -> dict[str, dict[str, Any]]:
    """name -> service, for every compose service that runs nats-server."""
    services = services if services is not None else compose_services()
    return {
        name: service
        for name, service in services.items()
        if [str(w) for w in service.get("command", [])][:1] == ["nats-server"]
    }


class LocalCluster:
    """The compose NATS nodes as local processes, each startable and killable on its own."""

    def __init__(
        self, store: Path, services: dict[str, dict[str, Any]] | None = None, auth: bool = True
    ):
        """``auth=False`` drops the nodes' authorization config (for tests that do not
        care who publishes); otherwise compose's secrets are made under ``store``."""
        self.auth = auth
        self.secrets = store / "secrets"
        if auth:
            # What a deployment host has after `loopbus provision --creds-out secrets`; the
            # nodes' config names the other secrets by their mount paths, so it is run
            # from a copy that names the local files instead.
            make_secrets(self.secrets, ["127.0.0.1", "localhost"])
            config = (self.secrets / NODE_CONFIG).read_text()
            (self.secrets / LOCAL_CONFIG).write_text(self._local_secrets(config))
        self.nodes = nats_nodes(services)
        self.client = {name: free_port() for name in self.nodes}
        self.route = {name: free_port() for name in self.nodes}
        self.http = {name: free_port() for name in self.nodes}
        self.store = store
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    @property
    def url(self) -> str:
        scheme = "tls" if self.auth else "nats"
        return ",".join(f"{scheme}://127.0.0.1:{port}" for port in self.client.values())

    @property
    def ca(self) -> Path:
        """The local copy of the deployment's CA (with ``auth``)."""
        return self.secrets / "tls" / "ca.pem"

    def localise(self, text: str) -> str:
        """Rewrite compose's ``nats://nX:4222`` / ``nats://nX:6222`` addresses to ours."""
        for name in self.nodes:
            text = text.replace(
                f"nats://{name}:{CLIENT_PORT}", f"nats://127.0.0.1:{self.client[name]}"
            )
            text = text.replace(
                f"nats://{name}:{ROUTE_PORT}", f"nats://127.0.0.1:{self.route[name]}"
            )
            text = text.replace(
                f"tls://{name}:{CLIENT_PORT}", f"tls://127.0.0.1:{self.client[name]}"
            )
        return self._local_secrets(text)

    def _local_secrets(self, text: str) -> str:
        for name, file in compose_secrets().items():
            local = self.secrets / file.removeprefix(SECRETS_DIR)
            if file.endswith(NODE_CONFIG):
                local = self.secrets / LOCAL_CONFIG
            text = text.replace(f"{SECRET}{name}", str(local))
        return text

    def environment(self, service: dict[str, Any]) -> dict[str, str]:
        """A compose service's ``environment``, localised (its credential file, say)."""
        env = service.get("environment") or {}
        return {key: self.localise(str(value)) for key, value in env.items()}

    def credential(self, role: str) -> Path:
        """The local copy of a role's credential file."""
        return self.secrets / "creds" / f"{role}.json"

    def node_command(self, name: str) -> list[str]:
        command = [str(word) for word in self.nodes[name]["command"]]
        out = [server_binary(), "--addr", "127.0.0.1", "--port", str(self.client[name])]
        for word in command[1:]:
            flag = word.partition("=")[0]
            if flag == "--cluster":
                word = f"--cluster=nats://127.0.0.1:{self.route[name]}"
            elif flag == "--http_port":
                word = f"--http_port={self.http[name]}"
            elif flag == "--store_dir":
                word = f"--store_dir={self.store / name}"
            elif flag == "--config" and not self.auth and SECRET in word:
                continue  # the authorization config: left out on request
            out.append(self.localise(word))
        return out

    def start(self, *names: str) -> None:
        for name in names or tuple(self.nodes):
            with open(self.store / f"{name}.log", "ab") as log:
                self.processes[name] = subprocess.Popen(
                    self.node_command(name),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )

    def monitors(self) -> dict[str, str]:
        """Each node's monitoring base URL."""
        return {name: f"http://127.0.0.1:{self.http[name]}" for name in self.nodes}

    def kill(self, name: str) -> None:
        """SIGKILL one node: no shutdown, no goodbye to its peers."""
        self.processes[name].send_signal(signal.SIGKILL)
        self.processes[name].wait()

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.terminate()
        for process in self.processes.values():
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def wait_healthy(self, name: str, timeout: float = 60.0) -> None:
        """Block until the node says it is healthy (JetStream included)."""
        deadline = time.monotonic() + timeout
        while not self._healthz(name):
            if time.monotonic() > deadline:
                raise AssertionError(f"node {name} never reported healthy; see {self.store}")
            time.sleep(0.2)

    async def healthy(self, name: str, timeout: float = 60.0) -> None:
        """Wait until the node says it is healthy (JetStream included)."""
        deadline = time.monotonic() + timeout
        while not await asyncio.to_thread(self._healthz, name):
            if time.monotonic() > deadline:
                raise AssertionError(f"node {name} never reported healthy; see {self.store}")
            await asyncio.sleep(0.2)

    def _healthz(self, name: str) -> bool:
        url = f"http://127.0.0.1:{self.http[name]}/healthz"
        try:
            with urllib.request.urlopen(url, timeout=2) as reply:
                return bool(reply.status == 200)
        except (urllib.error.URLError, OSError):
            return False
