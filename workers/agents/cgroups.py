"""A control group per local run: its memory and process limits, and which of them the
kernel saw the run hit.

The local executor's rlimits stop a command at its limits, but a refused allocation or
fork fails inside the command, where only the command could say so — and an agent's word
never counts. A control group makes the breach the kernel's record instead: every process
of the run (bubblewrap's included) is put in a group of its own, with the run's memory
limit (``memory.limit_in_bytes`` / ``memory.max``, swap included where the kernel
accounts it) and process limit (``pids.max``); after the run the executor reads the
group's counters:

* memory: a process of the run killed by the kernel's OOM killer (``oom_kill`` in
  ``memory.oom_control`` (v1) or ``memory.events`` (v2), or v2's ``oom``; on an old v1
  kernel without ``oom_kill``, ``memory.failcnt``);
* processes: a fork refused at the limit (``max`` in ``pids.events``).

Where the groups live: the daemon's own group of each hierarchy (v1: the ``memory`` and
``pids`` hierarchies; v2: the unified one). cgroup v2 lets a group hand controllers to its
children only when it holds no process itself (the root excepted), so there the runs'
groups go in the daemon's own group only when it may enable ``memory`` and ``pids`` for
them, else beside the daemon's group when the parent was delegated to it (systemd's
``Delegate=yes`` with ``DelegateSubgroup=``: the ``trusted.delegate`` mark). Anywhere
else :func:`make` says why not in one line, and the executor keeps the rlimits alone.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from workers.agents.sandbox import Breach

MEMORY = "memory"
PIDS = "pids"
CONTROLLERS = (MEMORY, PIDS)
MOUNTINFO = Path("/proc/self/mountinfo")
OWN = Path("/proc/self/cgroup")
REMOVE_TRIES = 50
REMOVE_PAUSE_S = 0.02  # a killed process leaves its group a moment after SIGKILL

Version = Literal[1, 2]


@dataclass(frozen=True)
class Place:
    """Where one controller's run groups may go: the daemon's own group in the
    controller's hierarchy."""

    version: Version
    own: Path
    mount: Path


def locate(mountinfo: str, own: str) -> dict[str, Place] | str:
    """The place of each of :data:`CONTROLLERS` (from ``/proc/self/mountinfo`` and
    ``/proc/self/cgroup`` text), or why there is none. Pure."""
    mounts: list[tuple[str, Path, Path, set[str]]] = []  # (fstype, root, point, options)
    for line in mountinfo.splitlines():
        fields = line.split()
        if " - " not in line or len(fields) < 5:
            continue
        after = line.split(" - ", 1)[1].split()
        if after and after[0] in ("cgroup", "cgroup2"):
            options = set(after[2].split(",")) if len(after) > 2 else set()
            root, point = Path(_unescape(fields[3])), Path(_unescape(fields[4]))
            mounts.append((after[0], root, point, options))
    paths: dict[str, str] = {}
    for line in own.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            for name in parts[1].split(",") if parts[1] else [""]:
                paths[name] = parts[2]
    found: dict[str, Place] = {}
    for controller in CONTROLLERS:
        place = _v1(controller, mounts, paths) or _v2(mounts, paths)
        if place is None:
            return f"no cgroup hierarchy with the {controller} controller is mounted here"
        found[controller] = place
    return found


def _v1(
    controller: str, mounts: list[tuple[str, Path, Path, set[str]]], paths: dict[str, str]
) -> Place | None:
    path = paths.get(controller)
    for fstype, root, point, options in mounts:
        if fstype == "cgroup" and controller in options and path is not None:
            inside = _inside(point, root, path)
            if inside is not None:
                return Place(1, inside, point)
    return None


def _v2(mounts: list[tuple[str, Path, Path, set[str]]], paths: dict[str, str]) -> Place | None:
    path = paths.get("")
    for fstype, root, point, _options in mounts:
        if fstype == "cgroup2" and path is not None:
            inside = _inside(point, root, path)
            if inside is not None:
                return Place(2, inside, point)
    return None


def _inside(point: Path, root: Path, path: str) -> Path | None:
    """The folder of group ``path`` under a mount of ``root`` at ``point`` (``None``: the
    group is outside what the mount shows)."""
    group = Path(path)
    if group != root and not group.is_relative_to(root):
        return None
    return point / group.relative_to(root)


def _unescape(text: str) -> str:
    """mountinfo writes a space, tab, newline or backslash in a path as an octal escape."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        text = text.replace(code, char)
    return text


@dataclass
class RunGroup:
    """The groups holding one run: per controller, its version and folder (one folder for
    both under v2)."""

    parts: dict[str, tuple[Version, Path]]
    made: list[Path] = field(default_factory=list)

    def procs(self) -> list[Path]:
        """The ``cgroup.procs`` files a process of the run writes its pid into."""
        folders = dict.fromkeys(folder for _version, folder in self.parts.values())
        return [folder / "cgroup.procs" for folder in folders]

    def breaches(self) -> tuple[Breach, ...]:
        """The limits the kernel counted the run hitting, in :data:`CONTROLLERS` order."""
        found: list[Breach] = []
        if _memory_hit(*self.parts[MEMORY]):
            found.append("memory")
        if _counter(self.parts[PIDS][1] / "pids.events", "max") > 0:
            found.append("processes")
        return tuple(found)

    def remove(self) -> list[Path]:
        """Kill what is left in the groups and remove them (blocking); the folders that
        would not go (a process the kernel has not let go of yet)."""
        left = []
        for folder in reversed(self.made):
            for _ in range(REMOVE_TRIES):
                _kill_members(folder)
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(REMOVE_PAUSE_S)
            else:
                left.append(folder)
        return left


def make(name: str, memory_bytes: int, processes: int) -> RunGroup | str:
    """A run group named ``name`` with these limits (blocking), or why none can be made."""
    try:
        located = locate(MOUNTINFO.read_text(), OWN.read_text())
    except OSError as exc:
        return f"cannot read this process's control groups ({exc.strerror})"
    if isinstance(located, str):
        return located
    group = RunGroup(parts={})
    try:
        for controller in CONTROLLERS:
            place = located[controller]
            parent = _parent(place, controller) if place.version == 2 else place.own
            if isinstance(parent, str):
                group.remove()
                return parent
            folder = parent / name
            if folder not in group.made:
                folder.mkdir(mode=0o755)
                group.made.append(folder)
            group.parts[controller] = (place.version, folder)
        _limit(group, memory_bytes, processes)
    except OSError as exc:
        group.remove()
        where = exc.filename or "a control group"
        return f"cannot make the run's control group ({where}: {exc.strerror})"
    return group


def _parent(place: Place, controller: str) -> Path | str:
    """Where v2 run groups go: a group that may enable memory and pids for children."""
    own = place.own
    try:
        offered = (place.mount / "cgroup.controllers").read_text().split()
    except OSError as exc:
        return f"cannot read {place.mount}/cgroup.controllers ({exc.strerror})"
    if controller not in offered:
        return f"no cgroup hierarchy here has the {controller} controller"
    if _enable(own):
        return own
    parent = own.parent
    if own != place.mount and _delegated(parent) and _enable(parent):
        return parent
    return (
        f"cgroup v2: {own} cannot give its child groups the memory and pids controllers "
        "(a group holding processes cannot, the root excepted); run loopbus as a systemd "
        "service with Delegate=yes and DelegateSubgroup=daemon"
    )


def _enable(folder: Path) -> bool:
    """Whether ``folder``'s children get memory and pids (enabling them if it may)."""
    try:
        enabled = (folder / "cgroup.subtree_control").read_text().split()
        if all(c in enabled for c in CONTROLLERS):
            return True
        (folder / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in CONTROLLERS))
    except OSError:
        return False
    return True


def _delegated(folder: Path) -> bool:
    for mark in ("trusted.delegate", "user.delegate"):
        with contextlib.suppress(OSError):
            if os.getxattr(folder, mark) == b"1":
                return True
    return False


def _limit(group: RunGroup, memory_bytes: int, processes: int) -> None:
    version, folder = group.parts[MEMORY]
    if version == 1:
        (folder / "memory.limit_in_bytes").write_text(str(memory_bytes))
        optional = [(folder / "memory.memsw.limit_in_bytes", str(memory_bytes))]
    else:
        (folder / "memory.max").write_text(str(memory_bytes))
        optional = [(folder / "memory.swap.max", "0")]
    for path, value in optional:  # swap is accounted only where the kernel was told to
        with contextlib.suppress(OSError):
            path.write_text(value)
    group.parts[PIDS][1].joinpath("pids.max").write_text(str(processes))


def _memory_hit(version: Version, folder: Path) -> bool:
    if version == 2:
        events = folder / "memory.events"
        return _counter(events, "oom_kill") > 0 or _counter(events, "oom") > 0
    control = folder / "memory.oom_control"
    if _has(control, "oom_kill"):
        return _counter(control, "oom_kill") > 0
    return _number(folder / "memory.failcnt") > 0  # kernels before 4.13 count no kills


def _counter(path: Path, key: str) -> int:
    """The value of ``key`` in a flat-keyed cgroup file (``0``: absent or unreadable)."""
    with contextlib.suppress(OSError, ValueError):
        for line in path.read_text().splitlines():
            words = line.split()
            if len(words) == 2 and words[0] == key:
                return int(words[1])
    return 0


def _has(path: Path, key: str) -> bool:
    with contextlib.suppress(OSError):
        return any(line.split()[:1] == [key] for line in path.read_text().splitlines())
    return False


def _number(path: Path) -> int:
    with contextlib.suppress(OSError, ValueError):
        return int(path.read_text().strip())
    return 0


def _kill_members(folder: Path) -> None:
    """SIGKILL every process still in the group (v2's ``cgroup.kill`` where it exists)."""
    with contextlib.suppress(OSError):
        (folder / "cgroup.kill").write_text("1")
    with contextlib.suppress(OSError, ValueError):
        for pid in (folder / "cgroup.procs").read_text().split():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(pid), signal.SIGKILL)
