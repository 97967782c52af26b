"""The demo's fallback on a machine where no agent sandbox can be made: the scaffolded
project says ``[agents] sandbox = "none"`` in its own loopbus.toml (so ``up``'s banner and
the standing finding say it too), and only then; the default scaffold never does."""

from __future__ import annotations

from pathlib import Path

from loopbus import scaffold
from workers.agents import config as agent_config


def _agents(repo: Path) -> agent_config.AgentsConfig:
    text = (repo / "loopbus.toml").read_text()
    return agent_config.parse(text, repo=str(repo)).agents


def test_the_default_scaffold_sandboxes_its_agents(tmp_path: Path) -> None:
    repo = scaffold.write(tmp_path / "calc")
    assert _agents(repo).sandbox == "on"
    assert "[agents]" not in (repo / "loopbus.toml").read_text()


def test_the_unsandboxed_scaffold_says_so_in_its_config(tmp_path: Path) -> None:
    plain = scaffold.write(tmp_path / "plain")
    bare = scaffold.write(tmp_path / "bare", unsandboxed=True)
    assert _agents(bare).sandbox == "none"
    # Nothing else of the project changes: the same checks, agents and plan.
    config, plain_config = (bare / "loopbus.toml").read_text(), (plain / "loopbus.toml").read_text()
    assert config.startswith(plain_config)
    assert config[len(plain_config) :].strip().endswith('sandbox = "none"')
