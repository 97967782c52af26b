"""``loopbus up --replicas`` is refused as ``provision --replicas`` is: fewer than one, or
more copies than the servers there can keep; one line, exit 2, nothing left running."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import loopbus

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("replicas", ["0", "-2"])
def test_fewer_than_one_replica_is_refused_before_anything_starts(
    tmp_path: Path, replicas: str
) -> None:
    data = tmp_path / "data"
    result = loopbus("up", "--replicas", replicas, "--data-dir", str(data), timeout=30)
    assert result.code == 2, result.out + result.err
    [line] = result.err.splitlines()
    assert line == f"loopbus: error: --replicas {replicas}: give 1 or more (3 on a 3-node cluster)"
    assert result.out == "" and not data.exists()


def test_more_than_the_embedded_server_keeps_is_refused_with_the_fix(tmp_path: Path) -> None:
    """The embedded server is one server: it would keep one copy of a log asked for three."""
    data = tmp_path / "data"
    result = loopbus("up", "--replicas", "3", "--data-dir", str(data), timeout=30)
    assert result.code == 2, result.out + result.err
    [line] = result.err.splitlines()
    assert line.startswith("loopbus: error: --replicas 3: the embedded server is one server")
    assert "drop --replicas" in line and "--nats-url" in line
    assert result.out == "" and not data.exists()


def test_more_than_an_external_server_keeps_is_refused_with_the_fix(
    tmp_path: Path, nats_url: str
) -> None:
    """A lone external server keeps one copy of the log: asking for three is refused once
    the log says so, before any daemon starts."""
    result = loopbus(
        "up", "--nats-url", nats_url, "--replicas", "3", "--data-dir", str(tmp_path / "data"),
        "--no-web", timeout=30,
    )  # fmt: skip
    assert result.code == 2, result.out + result.err
    [line] = result.err.splitlines()
    assert line.startswith(f"loopbus: error: --replicas 3: stream LOOP at {nats_url} keeps 1 ")
    assert "pass --replicas 1" in line
    assert "running" not in result.out  # no daemon was started
