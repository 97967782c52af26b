"""``[agents]`` in loopbus.toml: what it says, and one line for every mistake."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopbus.repo_check import validate_config
from workers.agents.config import parse
from workers.agents.sandbox_config import AgentsConfig
from workers.errors import ConfigError

HEAD = '[project]\nid = "calc"\n\n[agents]\n'


def test_defaults_sandbox_every_agent() -> None:
    """No [agents] table: auto executor, sandbox on, no network, the default uid range."""
    agents = parse('[project]\nid = "calc"\n').agents
    assert agents == AgentsConfig()
    assert (agents.executor, agents.sandbox, agents.network) == ("auto", "on", ())
    assert agents.uids == (60000, 60999) and not agents.unsandboxed


def test_every_key_is_read() -> None:
    """Sizes, durations, lists and the uid range become the limits the executors apply."""
    agents = parse(
        HEAD + 'executor = "local"\nsandbox = "none"\nimage = "python:3.12-slim"\n'
        'network = ["pypi.org:443"]\nmemory = "2g"\ncpu_time = "10m"\nprocesses = 64\n'
        'open_files = 256\nuids = "61000-61099"\nread_only = ["/opt/tools"]\n'
        'writable = ["/var/cache/agents"]\n'
    ).agents
    assert agents.unsandboxed and agents.image == "python:3.12-slim"
    assert agents.network == ("pypi.org:443",) and agents.uids == (61000, 61099)
    limits = agents.limits()
    assert (limits.memory_mb, limits.cpu_time_s, limits.processes, limits.open_files) == (
        2048,
        600,
        64,
        256,
    )
    assert agents.read_only == ("/opt/tools",) and agents.writable == ("/var/cache/agents",)


@pytest.mark.parametrize(
    ("line", "field", "fix"),
    [
        pytest.param('executor = "docker"', "agents.executor", "use one of auto", id="executor"),
        pytest.param('sandbox = "off"', "agents.sandbox", '"none"', id="sandbox"),
        pytest.param('executor = "container"', "agents.image", "needs an image", id="no-image"),
        pytest.param('network = ["pypi.org"]', "agents.network", "host:port", id="network"),
        pytest.param('memory = "lots"', "agents.memory", '"4g"', id="memory"),
        pytest.param("memory = 8", "agents.memory", "at least 64m", id="memory-tiny"),
        pytest.param('cpu_time = "soon"', "agents.cpu_time", "", id="cpu-time"),
        pytest.param("processes = 0", "agents.processes", "8 or more", id="processes"),
        pytest.param("open_files = true", "agents.open_files", "16 or more", id="open-files"),
        pytest.param('uids = "0-10"', "agents.uids", "above 999", id="uids-system"),
        pytest.param('uids = "61000"', "agents.uids", "60000-60999", id="uids-shape"),
        pytest.param('read_only = ["tools"]', "agents.read_only", "absolute", id="read-only"),
        pytest.param('writable = ["/"]', "agents.writable", "absolute", id="writable-root"),
        pytest.param("shell = true", "agents.shell", "unknown key", id="unknown"),
    ],
)
def test_a_mistake_is_one_line_naming_field_value_and_fix(line: str, field: str, fix: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse(HEAD + line + "\n")
    message = str(raised.value)
    assert "\n" not in message and message.startswith(f"loopbus.toml: {field} ")
    assert fix in message


def test_plan_check_and_up_accept_the_table(tmp_path: Path) -> None:
    """The gate configuration owns the file's tables and lets [agents] through."""
    text = (
        '[project]\nid = "calc"\n\n[[check]]\nid = "tests"\ncommand = "pytest"\n'
        'parser = "pytest"\n\n[agents]\nsandbox = "none"\nuids = "61000-61009"\n'
    )
    assert validate_config(text, "loopbus.toml", tmp_path).project == "calc"
