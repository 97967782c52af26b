"""``[agents]`` of a project's ``loopbus.toml``: where and how every agent command runs
(the runner, :mod:`.runner`, reads it; docs/agents.md has the table).

```toml
[agents]
executor = "auto"             # auto | container | local
sandbox = "on"                # on | none (run unsandboxed: said in the banner and on the log)
image = "python:3.12-slim"    # the container executor's image
network = []                  # "host:port" pairs an agent may reach; [] = none
memory = "4g"                 # the run's memory (a control group, else address space)
cpu_time = "1h"               # CPU seconds
processes = 512
open_files = 1024
uids = "60000-60999"          # the local executor's per-run uids (when the daemon is root)
read_only = ["/opt/agent-cli"]  # more paths every agent sees read-only (its tools)
writable = []                 # folders every agent may write (a shared cache); never secrets
env = ["ANTHROPIC_API_KEY"]   # variables of the daemon's environment every agent gets
```
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from workers.agents.sandbox import Limits
from workers.agents.tables import check_table, seconds
from workers.agents.uids import DEFAULT_UIDS
from workers.errors import ConfigError

AGENTS_KEYS = (
    "executor",
    "sandbox",
    "image",
    "network",
    "memory",
    "cpu_time",
    "processes",
    "open_files",
    "uids",
    "read_only",
    "writable",
    "env",
)
EXECUTORS = ("auto", "container", "local")
SANDBOX_MODES = ("on", "none")
DEFAULT_LIMITS = Limits()

REFUSED_ENV = frozenset(
    {"PATH", "HOME", "TMPDIR", "SHELL", "USER", "LOGNAME", "BASH_ENV", "ENV", "IFS", "CDPATH"}
)
"""Variables ``[agents] env`` may not pass: the runner sets them for the run, or a shell
would run what they name before the agent's own command."""
REFUSED_ENV_PREFIXES = ("LOOPBUS_", "NATS_", "LD_", "DYLD_", "PYTHON", "NODE_", "GIT_", "BASH_FUNC")
"""Prefixes refused in ``[agents] env``: loopbus's and the server's own settings (a
credential's path among them), and variables that load code into the agent's interpreter,
libraries or tools (``NODE_OPTIONS`` into the Node-based agent CLIs, ``GIT_*`` into the git
they run, exported shell functions)."""


class AgentsConfig(msgspec.Struct, frozen=True, kw_only=True):
    """``[agents]``: where and how every agent command runs (:mod:`.runner`)."""

    executor: str = "auto"
    sandbox: str = "on"
    image: str | None = None
    network: tuple[str, ...] = ()
    memory_mb: int = DEFAULT_LIMITS.memory_mb
    cpu_time_s: int = DEFAULT_LIMITS.cpu_time_s
    processes: int = DEFAULT_LIMITS.processes
    open_files: int = DEFAULT_LIMITS.open_files
    uids: tuple[int, int] = DEFAULT_UIDS
    read_only: tuple[str, ...] = ()
    writable: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    """Names of the daemon's environment variables every agent run is given (a model's API
    key); the rest of the daemon's environment never reaches an agent."""

    @property
    def unsandboxed(self) -> bool:
        return self.sandbox == "none"

    def limits(self) -> Limits:
        return Limits(
            memory_mb=self.memory_mb,
            cpu_time_s=self.cpu_time_s,
            processes=self.processes,
            open_files=self.open_files,
        )


def parse_agents(table: Any) -> AgentsConfig:
    """The ``[agents]`` table (``{}`` when absent)."""
    check_table(table, "agents", AGENTS_KEYS)
    executor = table.get("executor", "auto")
    if executor not in EXECUTORS:
        raise ConfigError("agents.executor", executor, f"use one of {', '.join(EXECUTORS)}")
    sandbox = table.get("sandbox", "on")
    if sandbox not in SANDBOX_MODES:
        raise ConfigError(
            "agents.sandbox",
            sandbox,
            'use "on" (the default), or "none" to run agents unsandboxed (said on the log)',
        )
    image = table.get("image")
    if image is not None and (not isinstance(image, str) or not image.strip() or " " in image):
        raise ConfigError("agents.image", image, 'name a container image, e.g. "python:3.12-slim"')
    if executor == "container" and image is None:
        raise ConfigError("agents.image", None, 'executor = "container" needs an image to run')
    network = table.get("network", [])
    if not isinstance(network, list):
        raise ConfigError("agents.network", network, 'list "host:port" pairs: ["pypi.org:443"]')
    for entry in network:
        if not isinstance(entry, str) or not _host_port(entry):
            raise ConfigError(
                "agents.network", entry, 'each entry is "host:port", e.g. "pypi.org:443"'
            )
    cpu_time = table.get("cpu_time", DEFAULT_LIMITS.cpu_time_s)
    return AgentsConfig(
        executor=executor,
        sandbox=sandbox,
        image=image.strip() if isinstance(image, str) else None,
        network=tuple(network),
        memory_mb=_memory(table.get("memory", DEFAULT_LIMITS.memory_mb)),
        cpu_time_s=max(1, round(seconds(cpu_time, "agents.cpu_time"))),
        processes=_count(table.get("processes", DEFAULT_LIMITS.processes), "processes", 8),
        open_files=_count(table.get("open_files", DEFAULT_LIMITS.open_files), "open_files", 16),
        uids=_uids(table.get("uids", f"{DEFAULT_UIDS[0]}-{DEFAULT_UIDS[1]}")),
        read_only=_paths(table.get("read_only", []), "agents.read_only"),
        writable=_paths(table.get("writable", []), "agents.writable"),
        env=_env_names(table.get("env", [])),
    )


def _paths(value: Any, field: str) -> tuple[str, ...]:
    hint = 'list absolute paths other than "/": ["/opt/agent-tools"]'
    if not isinstance(value, list):
        raise ConfigError(field, value, hint)
    for path in value:
        if not isinstance(path, str) or not path.startswith("/") or not path.strip("/"):
            raise ConfigError(field, path, hint)
    return tuple(value)


def _env_names(value: Any) -> tuple[str, ...]:
    hint = 'list the names of variables to pass, e.g. ["ANTHROPIC_API_KEY"]'
    if not isinstance(value, list):
        raise ConfigError("agents.env", value, hint)
    for name in value:
        if not isinstance(name, str) or not _ENV_NAME.fullmatch(name):
            raise ConfigError("agents.env", name, hint)
        if name in REFUSED_ENV or name.startswith(REFUSED_ENV_PREFIXES):
            raise ConfigError(
                "agents.env",
                name,
                "the runner sets it, or it would hand an agent loopbus's settings or load "
                "code into its interpreter: pass only the agent's own keys",
            )
    return tuple(dict.fromkeys(value))


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _host_port(entry: str) -> bool:
    host, sep, port = entry.rpartition(":")
    return bool(sep and host.strip() and port.isdigit() and 1 <= int(port) <= 65535)


_MEMORY_UNITS = {"k": 1 / 1024, "m": 1, "g": 1024}


def _memory(value: Any) -> int:
    """Megabytes from a whole number (MB) or a size such as ``"512m"`` or ``"4g"``."""
    hint = 'give megabytes (4096) or a size such as "512m" or "4g" (at least 64m)'
    if isinstance(value, bool):
        raise ConfigError("agents.memory", value, hint)
    if isinstance(value, int):
        megabytes = value
    elif isinstance(value, str) and value.strip()[-1:].lower() in _MEMORY_UNITS:
        number = value.strip()[:-1]
        try:
            megabytes = int(float(number) * _MEMORY_UNITS[value.strip()[-1].lower()])
        except ValueError:
            raise ConfigError("agents.memory", value, hint) from None
    else:
        raise ConfigError("agents.memory", value, hint)
    if megabytes < 64:
        raise ConfigError("agents.memory", value, hint)
    return megabytes


def _count(value: Any, key: str, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ConfigError(f"agents.{key}", value, f"a whole number, {least} or more")
    return value


def _uids(value: Any) -> tuple[int, int]:
    hint = 'a range of unused uids, "60000-60999" (above 999, first <= last, below 2^31)'
    if not isinstance(value, str):
        raise ConfigError("agents.uids", value, hint)
    first, sep, last = value.partition("-")
    if not sep or not first.strip().isdigit() or not last.strip().isdigit():
        raise ConfigError("agents.uids", value, hint)
    low, high = int(first), int(last)
    if not 1000 <= low <= high < 2**31 - 1 or 65534 in range(low, high + 1):
        raise ConfigError("agents.uids", value, hint)
    return (low, high)
