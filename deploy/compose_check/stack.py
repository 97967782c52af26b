"""The compose project: build, up, health, one node down and back, down.

Every call goes through ``docker compose -f compose.yaml`` from the repository root, so
the check runs the file exactly as a person would. What a service must reach to count as
up is read from the file itself: a service with a healthcheck must be ``healthy``, a
one-shot job without one (``restart: "no"``) must have exited 0.
"""

from __future__ import annotations

import json
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .shell import CheckFailed, last_line, run

NODE_MONITOR_PORT = 8222
NODE_CLIENT_PORT = 4222


@dataclass(frozen=True)
class Service:
    name: str
    healthcheck: bool
    one_shot: bool
    ports: tuple[str, ...]  # published host addresses, "127.0.0.1:4222"


class Stack:
    def __init__(self, root: Path, log: Path, scale: dict[str, int] | None = None):
        self.root = root
        self.log = log
        self.scale = dict(scale or {})
        """Service -> replicas it runs (``up --scale``); every other service runs one."""
        self.config = self._config()
        self.project = str(self.config["name"])
        self.services = {
            name: Service(
                name=name,
                healthcheck=bool(svc.get("healthcheck")) and not svc["healthcheck"].get("disable"),
                one_shot=str(svc.get("restart", "no")) == "no",
                ports=tuple(
                    f"{p.get('host_ip') or '0.0.0.0'}:{p['published']}"
                    for p in svc.get("ports") or []
                ),
            )
            for name, svc in self.config["services"].items()
        }
        self.nodes = sorted(n for n, s in self.config["services"].items() if _is_node(s))

    def compose(self, *args: str) -> list[str]:
        base = ["docker", "compose", "--project-directory", str(self.root), "-f", "compose.yaml"]
        return [*base, *args]

    def _config(self) -> dict[str, Any]:
        done = run(self.compose("config", "--format", "json"), cwd=self.root)
        document: dict[str, Any] = json.loads(done.stdout)
        return document

    # -- before anything starts ----------------------------------------------------------

    def preflight(self) -> None:
        """Refuse to run over an existing project of the same name or a taken host port."""
        existing = run(self.compose("ps", "-a", "-q"), cwd=self.root).stdout.split()
        if existing:
            raise CheckFailed(
                f"compose project {self.project!r} already has {len(existing)} container(s) on "
                "this engine; compose-check would remove them: run `docker compose down` first"
            )
        for service in self.services.values():
            for address in service.ports:
                host, _, port = address.rpartition(":")
                with socket.socket() as probe:
                    # Without SO_REUSEADDR, connections of an earlier run still in TIME_WAIT
                    # would make a free port look taken; with it, only a listener does.
                    probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    try:
                        probe.bind((host, int(port)))
                    except OSError as exc:
                        raise CheckFailed(
                            f"{address} (service {service.name}) is taken on this host: "
                            "stop what listens there first"
                        ) from exc

    # -- lifecycle -------------------------------------------------------------------------

    def build(self) -> None:
        run(self.compose("build"), log=self.log, cwd=self.root, timeout=1200)

    def user_group(self) -> int:
        """The group id the image's user runs with (what must read the mounted secrets)."""
        argv = ["docker", "run", "--rm", "--entrypoint", "id", self.image_of("provision"), "-g"]
        return int(run(argv, timeout=120).stdout)

    def up(self) -> None:
        scaled = [f"--scale={name}={count}" for name, count in sorted(self.scale.items())]
        argv = self.compose("up", "-d", "--no-build", *scaled)
        run(argv, log=self.log, cwd=self.root, timeout=300)

    def replicas(self, service: str) -> int:
        return self.scale.get(service, 1)

    def down(self) -> None:
        # Docker can refuse to remove the network while the endpoints of containers it has
        # just removed are still being torn down ("has active endpoints"), and a later run
        # would then find it; a second `down` a moment later finds them gone.
        argv = self.compose("down", "-v", "--remove-orphans")
        if run(argv, log=self.log, cwd=self.root, check=False).returncode != 0:
            time.sleep(2)
            run(argv, log=self.log, cwd=self.root)

    def kill(self, service: str) -> None:
        """SIGKILL: a crash, not a clean stop; the restart policy leaves it down."""
        run(self.compose("kill", "-s", "SIGKILL", service), log=self.log, cwd=self.root)

    def start(self, service: str) -> None:
        run(self.compose("start", service), log=self.log, cwd=self.root)

    def exec(self, service: str, *argv: str, index: int = 1) -> list[str]:
        """The argv that runs ``argv`` inside ``service``'s running container (its replica
        number ``index`` when scaled)."""
        return self.compose("exec", "-T", f"--index={index}", service, *argv)

    # -- looking -------------------------------------------------------------------------

    def ps(self) -> dict[str, list[dict[str, Any]]]:
        """Service -> its containers' rows (one per replica)."""
        out = run(self.compose("ps", "-a", "--format", "json"), cwd=self.root).stdout.strip()
        rows = json.loads(out) if out.startswith("[") else [json.loads(x) for x in out.splitlines()]
        by_service: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            by_service.setdefault(row["Service"], []).append(row)
        return by_service

    def unready(self, only: set[str] | None = None) -> dict[str, str]:
        """Services not yet up, every replica of each (service -> what it is doing); a dead
        one raises."""
        by_service = self.ps()
        waiting = {}
        for name, service in self.services.items():
            if only is not None and name not in only:
                continue
            rows = by_service.get(name, [])
            if len(rows) < self.replicas(name):
                waiting[name] = f"{len(rows)} of {self.replicas(name)} replicas"
                continue
            for number, row in enumerate(rows, 1):
                label = name if len(rows) == 1 else f"{name}#{number}"
                self._judge(label, service, row, waiting)
        return waiting

    def _judge(
        self, name: str, service: Service, row: dict[str, Any], waiting: dict[str, str]
    ) -> None:
        """Note in ``waiting`` what one container is doing if it is not up yet."""
        state = row.get("State", "absent")
        if service.one_shot and not service.healthcheck:
            if state == "exited" and int(row.get("ExitCode", 1)) != 0:
                raise CheckFailed(f"{name} exited {row['ExitCode']}")
            if state != "exited":
                waiting[name] = state
        elif state != "running" or (service.healthcheck and row.get("Health") != "healthy"):
            if row.get("Health") == "unhealthy":
                # Not fatal yet: a daemon restarts (unless-stopped), and with a scaled stack
                # on two busy cores a healthcheck can time out once; at the deadline the
                # check fails with what the last healthcheck said.
                said = self.health_output(str(row.get("ID") or row.get("Name")))
                waiting[name] = f"unhealthy ({row.get('Status')}; {said})"
                return
            waiting[name] = f"{state}/{row.get('Health') or '-'}"

    def wait_ready(self, timeout: float, only: set[str] | None = None) -> float:
        """Wait until every service (or ``only``) is up; the seconds it took."""
        started = time.monotonic()
        while waiting := self.unready(only):
            if time.monotonic() - started > timeout:
                detail = ", ".join(f"{k} {v}" for k, v in sorted(waiting.items()))
                raise CheckFailed(f"not ready after {timeout:.0f} s: {detail}")
            time.sleep(0.5)
        return time.monotonic() - started

    def health_output(self, container: str) -> str:
        """What the container's last healthcheck printed (why it is unhealthy)."""
        fmt = "{{json .State.Health}}"
        done = run(["docker", "inspect", "--format", fmt, container], check=False)
        return last_health_output(done.stdout)

    def host_address(self, service: str, port: int) -> str:
        """Where the host reaches ``service``'s container ``port`` ("127.0.0.1:8222")."""
        return run(self.compose("port", service, str(port)), cwd=self.root).stdout.strip()

    def monitors(self) -> dict[str, str]:
        """Each NATS node's monitoring base URL as the host reaches it."""
        return {n: f"http://{self.host_address(n, NODE_MONITOR_PORT)}" for n in self.nodes}

    def restart_counts(self) -> dict[str, int]:
        ids = run(self.compose("ps", "-a", "-q"), cwd=self.root).stdout.split()
        fmt = '{{index .Config.Labels "com.docker.compose.service"}} {{.RestartCount}}'
        out = run(["docker", "inspect", "--format", fmt, *ids]).stdout if ids else ""
        counts: dict[str, int] = {}  # a scaled service: its replicas' restarts together
        for name, count in (line.split() for line in out.splitlines()):
            counts[name] = counts.get(name, 0) + int(count)
        return counts

    def save_logs(self, path: Path) -> None:
        run(self.compose("logs", "--no-color", "--timestamps"), log=path, check=False)

    def image_of(self, service: str) -> str:
        return str(self.config["services"][service]["image"])


def last_health_output(inspected: str) -> str:
    """The last healthcheck's exit code and last line of output, from ``docker inspect``'s
    ``.State.Health`` as JSON."""
    try:
        checks = json.loads(inspected or "null")["Log"] or []
    except (ValueError, TypeError, KeyError):
        return "its healthcheck log cannot be read"
    if not checks:
        return "no healthcheck has run"
    last = checks[-1]
    return f"the last healthcheck exited {last.get('ExitCode')}: {last_line(last.get('Output'))}"


def _is_node(svc: dict[str, Any]) -> bool:
    command = svc.get("command") or []
    return bool(command) and command[0] == "nats-server"
