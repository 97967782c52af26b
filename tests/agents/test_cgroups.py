"""Per-run control groups: where they go under cgroup v1 and v2, what their counters say,
and that a run leaves none behind."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from workers.agents import cgroups
from workers.agents.cgroups import MEMORY, PIDS, Place, RunGroup, locate
from workers.agents.environment import agent_env
from workers.agents.local import LocalExecutor
from workers.agents.sandbox import Limits, SandboxSpec
from workers.agents.workspace import remove, workdir

V1_MOUNTS = textwrap.dedent(
    """\
    22 1 0:21 / / rw,relatime - ext4 /dev/vda rw
    31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
    35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
    39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
    40 31 0:37 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
    41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
    """
)
V1_OWN = "9:name=systemd:/\n8:pids:/\n4:memory:/jobs/abc\n1:cpu,cpuacct:/\n0::/\n"

V2_MOUNTS = textwrap.dedent(
    """\
    22 1 0:21 / / rw,relatime - ext4 /dev/vda rw
    30 22 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime - cgroup2 cgroup2 rw
    """
)
V2_OWN = "0::/system.slice/loopbus.service/daemon\n"


def test_v1_places_are_the_daemon_s_own_group_in_each_hierarchy() -> None:
    """Under cgroup v1 each controller's hierarchy is found by its mount options, and the
    run groups go in the daemon's own group there."""
    found = locate(V1_MOUNTS, V1_OWN)
    assert found == {
        MEMORY: Place(1, Path("/sys/fs/cgroup/memory/jobs/abc"), Path("/sys/fs/cgroup/memory")),
        PIDS: Place(1, Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup/pids")),
    }


def test_v2_place_is_the_unified_hierarchy() -> None:
    """Under cgroup v2 both controllers live in the one unified hierarchy."""
    found = locate(V2_MOUNTS, V2_OWN)
    own = Path("/sys/fs/cgroup/system.slice/loopbus.service/daemon")
    assert found == {
        MEMORY: Place(2, own, Path("/sys/fs/cgroup")),
        PIDS: Place(2, own, Path("/sys/fs/cgroup")),
    }


def test_a_group_outside_the_mount_or_no_mount_says_why() -> None:
    """A daemon whose group the mounted hierarchy does not show (a mount of a subtree), or
    a host with no cgroup mount, gets one line saying what is missing."""
    subtree = V1_MOUNTS.replace("35 31 0:32 / ", "35 31 0:32 /other ")
    assert "memory controller" in str(locate(subtree.replace("cgroup2 cgroup2", "x x"), V1_OWN))
    assert "no cgroup hierarchy" in str(locate("22 1 0:21 / / rw - ext4 /dev/vda rw\n", "0::/\n"))


def test_v2_counters_name_the_breaches(tmp_path: Path) -> None:
    """v2's ``memory.events`` (an OOM kill) and ``pids.events`` (a fork refused at
    ``pids.max``) become the ``memory`` and ``processes`` breaches; zero counts none."""
    group = RunGroup(parts={MEMORY: (2, tmp_path), PIDS: (2, tmp_path)})
    (tmp_path / "memory.events").write_text("low 0\nhigh 0\nmax 3\noom 0\noom_kill 0\n")
    (tmp_path / "pids.events").write_text("max 0\n")
    assert group.breaches() == ()
    (tmp_path / "memory.events").write_text("low 0\nhigh 0\nmax 7\noom 1\noom_kill 1\n")
    (tmp_path / "pids.events").write_text("max 12\n")
    assert group.breaches() == ("memory", "processes")
    assert group.procs() == [tmp_path / "cgroup.procs"]


def test_v1_counters_name_the_breaches(tmp_path: Path) -> None:
    """v1's ``oom_kill`` in ``memory.oom_control`` is the memory breach (a limit merely
    reached, reclaimed without a kill, is not); a kernel without that line falls back to
    ``memory.failcnt``."""
    memory, pids = tmp_path / "memory", tmp_path / "pids"
    memory.mkdir()
    pids.mkdir()
    group = RunGroup(parts={MEMORY: (1, memory), PIDS: (1, pids)})
    (memory / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 0\n")
    (memory / "memory.failcnt").write_text("40\n")
    (pids / "pids.events").write_text("max 0\n")
    assert group.breaches() == ()
    (memory / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\n")
    assert group.breaches() == ("memory",)
    assert group.procs() == [memory / "cgroup.procs", pids / "cgroup.procs"]


def _runs_left() -> list[Path]:
    found = cgroups.locate(cgroups.MOUNTINFO.read_text(), cgroups.OWN.read_text())
    assert not isinstance(found, str), found
    return [p for place in found.values() for p in place.own.glob("loopbus-run-*")]


@pytest.mark.skipif(os.geteuid() != 0, reason="making control groups needs root here")
async def test_a_run_leaves_no_control_group_behind() -> None:
    """After a run that forked past its limit and left children sleeping, its groups are
    gone (what was left in them killed first)."""
    made = cgroups.make("loopbus-run-probe", 64 * 1024 * 1024, 8)
    if isinstance(made, str):
        pytest.skip(f"no control group can be made here: {made}")
    assert made.remove() == []
    before = _runs_left()
    folder = workdir("loopbus-build-", mode=0o711)
    tree = folder / "tree"
    tree.mkdir(mode=0o700)
    script = (
        "import os, time\nfor _ in range(40):\n    try:\n        pid = os.fork()\n"
        "    except OSError:\n        break\n    if pid == 0:\n        time.sleep(600)\n"
    )
    try:
        result = await LocalExecutor(namespaces=False).run(
            SandboxSpec(
                argv=["/usr/bin/python3", "-c", script],
                stdin=b"",
                worktree=tree,
                env=agent_env({}),
                timeout_s=60,
                limits=Limits(processes=16),
            )
        )
    finally:
        remove(folder)
    assert result.breaches == ("processes",)
    assert _runs_left() == before
