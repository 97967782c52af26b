"""The labels on what the container executor makes in the Docker engine, and which daemon
process made it, so a daemon that died mid-run leaves nothing no one can clean up.

Every agent container (and every per-run network) carries :data:`AGENT_LABEL` and
:data:`DAEMON_LABEL`: the host, the process id and that process's start time (so a reused
process id is not mistaken for the daemon that made it). ``container_sweep`` removes only
what a process of this host that no longer runs made.
"""

from __future__ import annotations

import os
import socket

AGENT_LABEL = "org.loopbus.agent"
WORKTREE_LABEL = "org.loopbus.agent.worktree"
DAEMON_LABEL = "org.loopbus.agent.daemon"
OWNER_LABEL = "org.loopbus.agent.owner"  # uid:gid the worktree goes back to
FENCE_LABEL = "org.loopbus.agent.fence"  # the run id of its network fence, or ""


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot, or ``None`` if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            stat = handle.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # The command name may hold spaces and parentheses: fields count from the last ')'.
    return stat[stat.rindex(")") + 2 :].split()[19]


def daemon_id() -> str:
    """This process, as :data:`DAEMON_LABEL` records it: ``host/pid/start``."""
    pid = os.getpid()
    return f"{socket.gethostname()}/{pid}/{_start_time(pid)}"


def is_orphan(label: str | None) -> bool:
    """Whether ``label`` names a process of this host that no longer runs. Anything
    unlabelled, from another host, or unreadable is not ours to judge: ``False``."""
    if not label or label.count("/") != 2:
        return False
    host, pid, start = label.split("/")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    return _start_time(int(pid)) != start
