""".ci/engine: the Docker engine CI starts as compose-check --install does, stopped only
when CI started it. What can be tried without starting or stopping this machine's engine:
the networking record surviving between the two processes, and never signalling a process
that is not the dockerd recorded."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from compose_check import ci_engine, netstate

ROOT = Path(__file__).resolve().parents[2]


def test_the_networking_record_reads_back_as_it_was_taken() -> None:
    """start and stop are two processes: what start snapshots, stop must restore exactly."""
    state = netstate.NetState(
        tables={"ip": {"filter": "*filter\n:INPUT ACCEPT [0:0]\nCOMMIT\n"}, "ip6": {}},
        links=frozenset({"lo", "eth0"}),
        sysctls={"net/ipv4/ip_forward": "0"},
    )
    assert netstate.load(netstate.dump(state)) == state


def test_stop_without_a_record_touches_nothing(tmp_path: Path) -> None:
    """An engine CI did not start (one already ran, or none could) is left alone."""
    done = subprocess.run(
        [sys.executable, str(ROOT / ".ci" / "engine"), "stop", str(tmp_path / "engine.json")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout == "" and done.stderr == ""


def test_only_a_live_dockerd_counts_as_the_recorded_engine(tmp_path: Path) -> None:
    """A recorded pid now held by another process (pid reuse), or a dockerd that exited
    and waits to be reaped, is not signalled; a running dockerd is."""
    fake = tmp_path / "dockerd"  # `sleep` under dockerd's name: the kernel reports that name
    shutil.copy(shutil.which("sleep") or "/bin/sleep", fake)
    other = subprocess.Popen(["sleep", "60"])
    dockerd = subprocess.Popen([str(fake), "60"])
    try:
        assert ci_engine.is_dockerd(dockerd.pid)
        assert not ci_engine.is_dockerd(other.pid) and not ci_engine.is_dockerd(os.getpid())
        dockerd.kill()
        while Path(f"/proc/{dockerd.pid}/stat").read_text().split(") ")[1][0] != "Z":
            time.sleep(0.05)  # exited, not yet reaped
        assert not ci_engine.is_dockerd(dockerd.pid)
        dockerd.wait()
        assert not ci_engine.is_dockerd(dockerd.pid)  # gone
    finally:
        for process in (other, dockerd):
            process.kill()
            process.wait()


def test_an_unknown_action_is_refused_in_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / ".ci" / "engine"), "restart", str(tmp_path / "s")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "invalid choice: 'restart'" in done.stderr
    assert not (tmp_path / "s").exists()
