"""A Docker engine for the length of a CI run: ``.ci/run`` starts one as ``compose-check
--install`` does, runs the tests and compose-check against it, and stops it at the end.

``start STATE`` leaves an engine answering ``docker info`` and exits 0: the one already
running (it is not ours, and nothing is recorded), or dockerd installed from apt if missing
and started in the background, with its pid, the host's networking as it was before and
whether ``/run/docker`` existed written to ``STATE``. Where no engine can be started (not
root, no apt-get, dockerd will not come up) it prints why and exits 3; the container tests
then skip, printing their own reason. ``stop STATE`` stops only a dockerd that ``STATE``
records, and puts the host's networking back (:mod:`netstate`); without ``STATE`` it does
nothing. The steps are engine.py's and netstate.py's, the ones compose-check itself runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import time
from pathlib import Path

from . import netstate
from .engine import RUN_DIR, engine_answers, install_packages, start_dockerd
from .shell import CheckFailed, say

NO_ENGINE = 3


def why_not() -> str | None:
    """Why this machine cannot start an engine, or ``None`` when it can try."""
    if os.geteuid() != 0:
        return "not root, so dockerd cannot be installed or started here"
    if shutil.which("dockerd") is None and shutil.which("apt-get") is None:
        return "dockerd is not installed and there is no apt-get to install docker.io"
    return None


def start(state: Path, workdir: Path) -> int:
    if engine_answers():
        say("a Docker engine answers `docker info`: using it (it is not ours to stop)")
        return 0
    reason = why_not()
    if reason is not None:
        say(f"no Docker engine: {reason}; the container tests will skip")
        return NO_ENGINE
    log = workdir / "engine.log"
    before: netstate.NetState | None = None
    try:
        if shutil.which("dockerd") is None:
            install_packages(log)  # compose-check's packages: docker.io and what it uses
        before = netstate.snapshot()
        run_dir_was_there = RUN_DIR.exists()
        process = start_dockerd(workdir / "dockerd.log")
    except CheckFailed as exc:
        if before is not None:  # dockerd may have changed the host before it gave up
            netstate.restore(before)
        say(f"no Docker engine: {exc}; the container tests will skip")
        return NO_ENGINE
    record = {
        "pid": process.pid,
        "run_dir_was_there": run_dir_was_there,
        "network": netstate.dump(before),
    }
    state.write_text(json.dumps(record))
    say(f"dockerd (pid {process.pid}) answers; .ci/run stops it at the end")
    return 0


def is_dockerd(pid: int) -> bool:
    """Whether ``pid`` is still a live dockerd (not another process that got its pid, and
    not a zombie waiting for a parent that does not reap)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    name, fields = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2 :]
    return name == "dockerd" and not fields.startswith(("Z", "X"))


def stop(state: Path, timeout: float = 60) -> int:
    if not state.exists():
        return 0
    record = json.loads(state.read_text())
    pid = int(record["pid"])
    if is_dockerd(pid):
        os.kill(pid, signal.SIGTERM)  # it stops its own containerd with it
        deadline = time.monotonic() + timeout
        while is_dockerd(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if is_dockerd(pid):
            os.kill(pid, signal.SIGKILL)
            while is_dockerd(pid):
                time.sleep(0.2)
    if not record["run_dir_was_there"]:
        shutil.rmtree(RUN_DIR, ignore_errors=True)
    before = netstate.load(record["network"])
    done = netstate.restore(before)
    left = netstate.residue(before)
    state.unlink()
    say(f"dockerd (pid {pid}) stopped; host networking: {'; '.join(done) or 'nothing to undo'}")
    if left:
        print(f"ci engine: host networking still differs: {', '.join(left)}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=".ci/engine", description="start (and later stop) a Docker engine for CI"
    )
    parser.add_argument("action", choices=("start", "stop"))
    parser.add_argument("state", type=Path, help="where start records what stop undoes")
    args = parser.parse_args(argv)
    if args.action == "start":
        return start(args.state, args.state.parent)
    return stop(args.state)
