"""Which repositories the reviewer and investigator serve, from their --repo options."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from workers.agents.cli import load_configs


def test_a_repository_without_loopbus_toml_is_served_by_nobody(tmp_path: Path) -> None:
    """`loopbus up --repo` on a fresh repository configures no command: idle, not a crash."""
    assert load_configs(argparse.ArgumentParser(), [str(tmp_path)]) == {}


def test_a_malformed_loopbus_toml_is_still_refused(tmp_path: Path) -> None:
    """A config that exists but does not parse is a usage error (exit 2), not ignored."""
    (tmp_path / "loopbus.toml").write_text("[project\n")
    with pytest.raises(SystemExit) as stopped:
        load_configs(argparse.ArgumentParser(prog="reviewer"), [str(tmp_path)])
    assert stopped.value.code == 2
