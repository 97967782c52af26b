"""Fixtures for the gate runner: real git repositories (dulwich) and a runner on the real bus."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

_HERE = os.path.dirname(__file__)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from gate_repos import GitRepo  # noqa: E402

from bus import Bus  # noqa: E402
from workers.gates.runner import GateRunner  # noqa: E402
from workers.gates.signing import Signer, load_or_create  # noqa: E402


@pytest.fixture
def git(tmp_path: Path) -> Callable[[str], GitRepo]:
    """Make a fresh repository under the test's temporary directory."""
    made: list[GitRepo] = []

    def make(name: str = "repo") -> GitRepo:
        repo = GitRepo(tmp_path / name)
        made.append(repo)
        return repo

    return make


@pytest.fixture
def signer(tmp_path: Path) -> Signer:
    return load_or_create(tmp_path / "data")


@pytest.fixture
def make_runner(bus: Bus, signer: Signer) -> Callable[..., GateRunner]:
    def make(repo: GitRepo, **kwargs: object) -> GateRunner:
        return GateRunner(bus, repo.path, signer, **kwargs)  # type: ignore[arg-type]

    return make
