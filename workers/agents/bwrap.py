"""Bubblewrap for the local executor: whether it can make a sandbox here, and the mount
layout of one run.

The layout (new pid, ipc, uts and mount namespaces, and a network namespace with no
interface but its own loopback when the run may reach nothing): ``/usr`` and the ``/bin``,
``/sbin``, ``/lib*`` links or folders, the whole ``/etc`` read-only (host configuration:
name resolution, certificates, users; loopbus keeps nothing there, and files unreadable to
an ordinary uid stay so), a private ``/proc``, a minimal ``/dev``, an empty private
``/tmp``, then the read-only paths, the writable ones, the private temporary directory and
the worktree, each at its host path. Nothing else of the host exists inside.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from workers.agents.environment import outermost
from workers.agents.sandbox import SandboxSpec
from workers.agents.uids import LAUNCHER

SYSTEM_DIRS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
PROBE_TIMEOUT_S = 30


class Bubblewrap:
    """One ``bwrap`` binary (``None``: not installed), probed once."""

    def __init__(self, path: str | None, *, as_root: bool) -> None:
        self.path = path
        self.as_root = as_root
        self._probed: str | bool | None = False  # False: not probed yet

    async def problem(self) -> str | None:
        """``None`` when bubblewrap can build a sandbox here; else why not (probed once)."""
        if self._probed is not False:
            return self._probed  # type: ignore[return-value]
        self._probed = await self._probe()
        return self._probed

    async def _probe(self) -> str | None:
        if self.path is None:
            return (
                "bubblewrap (bwrap) is not installed: install it (apt-get install "
                "bubblewrap) or run agents in containers ([agents] image)"
            )
        argv = [*self.base(network=False), "--", "true"]
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
            )
            _, err = await asyncio.wait_for(proc.communicate(), PROBE_TIMEOUT_S)
        except (OSError, TimeoutError) as exc:
            return f"bubblewrap at {self.path} did not run: {exc}"
        if proc.returncode != 0:
            why = err.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no message"]
            return (
                f"bubblewrap at {self.path} cannot make a sandbox here ({why[0]}): the "
                "kernel, or the container this runs in, forbids the namespaces it makes; "
                "allow them, or run agents in containers ([agents] image)"
            )
        return None

    def base(self, *, network: bool) -> list[str]:
        """The namespaces and the system folders every run gets."""
        assert self.path is not None
        args = [
            self.path,
            "--die-with-parent",
            "--new-session",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--hostname",
            "loopbus-agent",
        ]
        if not self.as_root:
            args.append("--unshare-user")
        if not network:
            args.append("--unshare-net")
        args += ["--ro-bind", "/usr", "/usr"]
        for name in SYSTEM_DIRS:
            path = Path("/", name)
            if path.is_symlink():
                args += ["--symlink", os.readlink(path), str(path)]
            elif path.is_dir():
                args += ["--ro-bind", str(path), str(path)]
        args += ["--ro-bind", "/etc", "/etc", "--proc", "/proc", "--dev", "/dev"]
        args += ["--tmpfs", "/tmp"]
        return args

    def wrap(self, spec: SandboxSpec, tmp: Path, launch: list[str]) -> list[str]:
        """``launch`` run inside a sandbox showing ``spec``'s paths and ``tmp``."""
        args = self.base(network=bool(spec.network))
        own = outermost([sys.base_prefix, sys.base_exec_prefix, str(LAUNCHER.parent.parent)])
        inside = [p for p in spec.read_only if _within(p, spec.worktree)]
        outside = [p for p in (*own, *spec.read_only) if p not in inside]
        made: set[str] = set()
        for path in outside:
            args += [*_parents(path, made), "--ro-bind", str(path), str(path)]
        for path in (*spec.writable, tmp, spec.worktree):
            args += [*_parents(path, made), "--bind", str(path), str(path)]
        for path in inside:
            args += ["--ro-bind", str(path), str(path)]
        args += ["--chdir", str(spec.cwd or spec.worktree), "--", *launch]
        return args


def _within(path: Path, folder: Path) -> bool:
    return path == folder or path.is_relative_to(folder)


def _parents(path: Path, made: set[str]) -> list[str]:
    """``--dir`` for every ancestor of ``path`` not made yet: bubblewrap would otherwise
    copy the host's modes (``/root`` 0700), and the run's uid could not reach the path."""
    args: list[str] = []
    for parent in reversed(path.parents):
        text = str(parent)
        if text in ("/", "/tmp") or text in made:
            continue
        made.add(text)
        args += ["--dir", text]
    return args
