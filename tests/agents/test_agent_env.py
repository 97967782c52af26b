"""``[agents] env``: the one way a variable of the daemon's environment (a model's API key)
reaches an agent, named in loopbus.toml; everything else stays behind."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from workers.agents.config import parse
from workers.agents.environment import agent_env
from workers.agents.runner import run_agent
from workers.agents.workspace import remove, workdir
from workers.errors import ConfigError

TOML = '[project]\nid = "calc"\n'


def test_only_named_variables_pass() -> None:
    daemon = {"PATH": "/usr/bin", "MODEL_API_KEY": "k-1", "OTHER_SECRET": "s-2"}
    env = agent_env({"LOOPBUS_UNIT": "U1"}, environ=daemon, passed=("MODEL_API_KEY", "ABSENT"))
    assert env["MODEL_API_KEY"] == "k-1"
    assert "OTHER_SECRET" not in env and "ABSENT" not in env
    assert env["LOOPBUS_UNIT"] == "U1"
    assert "MODEL_API_KEY" not in agent_env({}, environ=daemon)


@pytest.mark.parametrize(
    "name",
    [
        "LOOPBUS_CREDS",
        "NATS_URL",
        "LD_PRELOAD",
        "PYTHONPATH",
        "NODE_OPTIONS",
        "GIT_SSH_COMMAND",
        "PATH",
        "HOME",
        "BASH_ENV",
        "a b",
    ],
)
def test_a_name_that_would_hand_over_loopbus_or_load_code_is_refused(name: str) -> None:
    with pytest.raises(ConfigError) as refused:
        parse(TOML + f'\n[agents]\nsandbox = "none"\nenv = ["{name}"]\n')
    line = str(refused.value)
    assert "agents.env" in line and name in line and "\n" not in line


def test_env_must_be_a_list_of_names() -> None:
    with pytest.raises(ConfigError, match=r"agents\.env"):
        parse(TOML + '\n[agents]\nenv = "MODEL_API_KEY"\n')
    config = parse(TOML + '\n[agents]\nenv = ["MODEL_API_KEY", "MODEL_API_KEY"]\n')
    assert config.agents.env == ("MODEL_API_KEY",)


@pytest.fixture
def folder() -> Iterator[Path]:
    path = workdir("loopbus-agent-env-", mode=0o755)
    (path / "work").mkdir()
    yield path
    remove(path)


@pytest.mark.skipif(os.geteuid() != 0, reason="the local executor's uid fence needs root")
async def test_the_named_key_reaches_a_sandboxed_agent_and_nothing_else_does(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the real runner and the local sandbox: the agent sees the named key's value,
    and a secret the daemon holds but loopbus.toml does not name is not in its
    environment."""
    monkeypatch.setenv("MODEL_API_KEY", "key-for-the-model")
    monkeypatch.setenv("DAEMON_ONLY_SECRET", "never-shown")
    config = parse(TOML + '\n[agents]\nexecutor = "local"\nenv = ["MODEL_API_KEY"]\n')
    result = await run_agent(
        config,
        ["/bin/sh", "-c", 'echo "key=$MODEL_API_KEY other=${DAEMON_ONLY_SECRET:-unset}"'],
        stdin=b"",
        worktree=folder / "work",
        timeout_s=60,
    )
    assert result.failure(60) is None, result.stderr.decode()
    assert result.stdout.decode().split() == ["key=key-for-the-model", "other=unset"]
