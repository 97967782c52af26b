"""Runs whose daemon died mid-run are finished by ``sweep``: container deleted, network
fence removed, worktree given back; a live daemon's run is left alone."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from agent_image import agent_image_or_skip, containers_of, python_spec

from workers.agents.container import AGENT_UID, ContainerExecutor
from workers.agents.container_sweep import sweep
from workers.agents.labels import FENCE_LABEL


@pytest.fixture(scope="session")
def image() -> str:
    return agent_image_or_skip()


def fence_traces(run_id: str) -> list[str]:
    """The iptables rules and chain and the Docker network of the fence ``run_id``."""
    rules = subprocess.run(["iptables", "-w", "-S"], capture_output=True, text=True).stdout
    networks = subprocess.run(
        ["docker", "network", "ls", "--format", "{{.Name}}"], capture_output=True, text=True
    ).stdout
    return [line for line in (rules + networks).splitlines() if run_id in line]


def fence_of(container_id: str) -> str:
    return subprocess.run(
        ["docker", "inspect", "-f", f'{{{{index .Config.Labels "{FENCE_LABEL}"}}}}', container_id],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


async def test_a_dead_daemons_run_is_finished_and_a_live_ones_is_not(
    image: str, tmp_path: Path
) -> None:
    """A daemon killed with SIGKILL mid-run leaves its container, fence and lent worktree;
    sweep removes the first two and gives the worktree back. A run of this (live)
    process, in progress at the same time, is untouched."""
    dead_tree, live_tree = tmp_path / "dead", tmp_path / "live"
    dead_tree.mkdir()
    live_tree.mkdir()
    # The dying daemon: a process of its own running one fenced, lent run.
    script = textwrap.dedent(
        f"""
        import asyncio, sys
        sys.path.insert(0, {str(Path(__file__).parent.parent)!r})
        from agent_image import python_spec
        from workers.agents.container import ContainerExecutor
        spec = python_spec({image!r}, __import__("pathlib").Path({str(dead_tree)!r}),
                           "open('x', 'w'); import time; time.sleep(600)",
                           network=("127.0.0.1:9",), timeout_s=600)
        asyncio.run(ContainerExecutor().run(spec))
        """
    )
    daemon = subprocess.Popen([sys.executable, "-c", script])
    live = asyncio.create_task(
        ContainerExecutor().run(
            python_spec(image, live_tree, "open('y', 'w'); import time; time.sleep(600)",
                        timeout_s=600)
        )
    )  # fmt: skip
    try:
        while not ((dead_tree / "x").exists() and (live_tree / "y").exists()):
            assert daemon.poll() is None and not live.done()
            await asyncio.sleep(0.05)
        os.kill(daemon.pid, signal.SIGKILL)
        daemon.wait()
        (left,) = await containers_of(dead_tree)  # what the dead daemon left
        run_id = fence_of(left)
        assert os.lstat(dead_tree).st_uid == AGENT_UID
        # A jump from DOCKER-USER and from INPUT, the chain and its two rules, the network.
        assert len(fence_traces(run_id)) == 6, fence_traces(run_id)

        done = await sweep()

        assert await containers_of(dead_tree) == []
        assert fence_traces(run_id) == []
        assert os.lstat(dead_tree / "x").st_uid == os.getuid()
        assert any("deleted container" in line for line in done), done
        assert len(await containers_of(live_tree)) == 1 and not live.done()
    finally:
        if daemon.poll() is None:
            daemon.kill()
        live.cancel()
        with pytest.raises(asyncio.CancelledError):
            await live
    assert await containers_of(live_tree) == []
