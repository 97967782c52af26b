"""Finishing agent runs whose daemon died mid-run (a crash, SIGKILL, a power cut).

:meth:`ContainerExecutor.run` deletes its container, removes its network fence and gives
the worktree back before it returns; a daemon that dies first leaves all three, and the
container's command may run on as long as it likes. :func:`sweep`, called when a daemon
starts (and safe to call at any time), finds what a process of this host that no longer
runs made (:func:`.labels.is_orphan`), and finishes it in the same order as a run does:
delete the container, remove its fence, and only then give the worktree back to the
owner recorded on the container, never following a link and clearing set-id bits.
Containers of live daemons, of other hosts sharing the engine, or without our labels are
left alone.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

import structlog

from workers.agents.fence import FenceError, remove_fence
from workers.agents.labels import (
    AGENT_LABEL,
    DAEMON_LABEL,
    FENCE_LABEL,
    OWNER_LABEL,
    WORKTREE_LABEL,
    is_orphan,
)
from workers.agents.lending import Owner, take_back

if TYPE_CHECKING:
    import aiodocker

log = structlog.get_logger()


async def sweep() -> list[str]:
    """Finish every orphaned agent run on the engine; one line per thing done."""
    import aiodocker
    from aiodocker.exceptions import DockerError

    done: list[str] = []
    docker = aiodocker.Docker()
    try:
        found = await docker.containers.list(all=True, filters={"label": [AGENT_LABEL]})
        for container in found:
            info = await container.show()
            labels: dict[str, str] = info["Config"].get("Labels") or {}
            if not is_orphan(labels.get(DAEMON_LABEL)):
                continue
            try:
                await container.delete(force=True)
            except DockerError as exc:
                log.warning("orphaned agent container not deleted", id=container.id, error=exc)
                continue  # its worktree stays lent: its processes may still run
            done.append(f"deleted container {container.id[:12]}")
            done += await _give_back(labels)
        # Fences after every container is gone: a network still in use cannot be removed,
        # and one whose container was never made (death in between) has none to delete.
        for network in await docker.networks.list(filters={"label": [AGENT_LABEL]}):
            labels = network.get("Labels") or {}
            if labels.get(FENCE_LABEL) and is_orphan(labels.get(DAEMON_LABEL)):
                done += await _unfence(docker, labels[FENCE_LABEL])
    finally:
        await docker.close()
    return done


async def _unfence(docker: aiodocker.Docker, run_id: str) -> list[str]:
    from aiodocker.exceptions import DockerError

    try:
        await remove_fence(docker, run_id)
    except (FenceError, DockerError) as exc:
        log.warning("orphaned agent network fence not removed", run=run_id, error=str(exc))
        return []
    return [f"removed network fence {run_id}"]


async def _give_back(labels: dict[str, str]) -> list[str]:
    worktree = Path(labels.get(WORKTREE_LABEL, ""))
    uid, _, gid = labels.get(OWNER_LABEL, "").partition(":")
    if not worktree.is_absolute() or worktree.is_symlink() or not worktree.is_dir():
        return []
    if not (uid.isdigit() and gid.isdigit()):
        return []
    owner = Owner(int(uid), int(gid))
    await asyncio.to_thread(take_back, worktree, owner)
    return [f"gave {worktree} back to {owner.uid}:{owner.gid}"]
