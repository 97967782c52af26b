"""A tiny agent image built without any registry, for tests that run agents in containers.

The image holds only merged-``/usr`` links, a ``passwd``/``group`` naming the agent uid,
and empty mount points; programs come from the host, mounted read-only (``/usr`` and the
interpreter running the tests, see :func:`host_read_only`). It is built from a tar
context (``FROM scratch``), so no network is needed, in well under a second, and only
once per engine: the tag carries a hash of the content.

Call :func:`agent_image_or_skip` from a session fixture (it is synchronous: session
fixtures run outside the tests' event loop), or await :func:`ensure_agent_image`; build
a run with :func:`python_spec` and check for leftovers with :func:`containers_of`.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import sys
import tarfile
import textwrap
from pathlib import Path

import pytest

from workers.agents.container import AGENT_UID, WORKTREE_LABEL
from workers.agents.sandbox import Limits, SandboxSpec
from workers.gates.executors import docker_reachable

MERGED = ("bin", "lib", "lib64", "sbin")
FILES = {
    "etc/passwd": (
        f"root:x:0:0:root:/root:/nonexistent\nagent:x:{AGENT_UID}:{AGENT_UID}::/tmp:/nonexistent\n"
    ),
    "etc/group": f"root:x:0:\nagent:x:{AGENT_UID}:\n",
    "Dockerfile": "FROM scratch\nCOPY rootfs/ /\n",
}
# Mount points the engine would otherwise create; /root must be traversable by the agent
# uid because the host's interpreter may live under it (pyenv). /var/tmp is world-writable
# as in most images: only a read-only root filesystem keeps an agent from writing there.
FOLDERS = {
    "etc": 0o755,
    "tmp": 0o1777,
    "var": 0o755,
    "var/tmp": 0o1777,
    "proc": 0o555,
    "sys": 0o555,
    "dev": 0o755,
    "root": 0o755,
}


def host_read_only() -> tuple[Path, ...]:
    """What the image needs from the host, read-only: ``/usr``, the running interpreter's
    prefix, and any of ``/bin``, ``/lib``… that is a real folder rather than a link."""
    paths = [Path("/usr"), Path(sys.base_prefix)]
    for name in MERGED:
        folder = Path("/", name)
        if folder.is_dir() and not folder.is_symlink():
            paths.append(folder)
    return tuple(dict.fromkeys(p for p in paths if p.exists()))


def agent_python() -> str:
    """The host's interpreter by its real path (a virtual environment's ``python`` is a
    link into a folder the container does not see)."""
    return str(Path(sys.base_prefix, "bin", f"python{sys.version_info[0]}.{sys.version_info[1]}"))


def python_spec(
    image: str,
    worktree: Path,
    code: str,
    *,
    stdin: bytes = b"",
    env: dict[str, str] | None = None,
    timeout_s: float = 60,
    limits: Limits | None = None,
    read_only: tuple[Path, ...] = (),
    network: tuple[str, ...] = (),
) -> SandboxSpec:
    """A spec that runs ``code`` (dedented) with the host's interpreter, isolated (-I), in
    the test image: :func:`host_read_only` is added to ``read_only``."""
    return SandboxSpec(
        argv=[agent_python(), "-I", "-c", textwrap.dedent(code)],
        stdin=stdin,
        worktree=worktree,
        env=env if env is not None else {"PATH": "/usr/bin:/bin"},
        timeout_s=timeout_s,
        read_only=host_read_only() + read_only,
        limits=limits or Limits(),
        image=image,
        network=network,
    )


async def containers_of(worktree: Path) -> list[str]:
    """Ids of every container (running or not) the container executor made for
    ``worktree``: after a run there must be none."""
    import aiodocker

    docker = aiodocker.Docker()
    try:
        found = await docker.containers.list(
            all=True, filters={"label": [f"{WORKTREE_LABEL}={worktree}"]}
        )
        return [c.id for c in found]
    finally:
        await docker.close()


def _context() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:

        def add(name: str, kind: bytes, mode: int, data: bytes = b"", link: str = "") -> None:
            info = tarfile.TarInfo(name)
            info.type, info.mode, info.size, info.linkname = kind, mode, len(data), link
            info.mtime = 0  # a stable tar: the same content builds the same layer
            tar.addfile(info, io.BytesIO(data) if data else None)

        add("Dockerfile", tarfile.REGTYPE, 0o644, FILES["Dockerfile"].encode())
        add("rootfs", tarfile.DIRTYPE, 0o755)
        for name, mode in sorted(FOLDERS.items()):
            add(f"rootfs/{name}", tarfile.DIRTYPE, mode)
        for name in MERGED:
            if Path("/", name).is_symlink():
                add(f"rootfs/{name}", tarfile.SYMTYPE, 0o777, link=str(Path("/", name).readlink()))
        for name in ("etc/passwd", "etc/group"):
            add(f"rootfs/{name}", tarfile.REGTYPE, 0o644, FILES[name].encode())
    return buffer.getvalue()


async def ensure_agent_image() -> str:
    """The test image's tag, built on the engine if it is not there yet."""
    import aiodocker
    from aiodocker.exceptions import DockerError

    context = _context()
    tag = f"loopbus-agent-test:{hashlib.sha256(context).hexdigest()[:12]}"
    docker = aiodocker.Docker()
    try:
        try:
            await docker.images.inspect(tag)
            return tag
        except DockerError:
            pass
        await docker.images.build(
            fileobj=io.BytesIO(context), encoding="application/x-tar", tag=tag, rm=True
        )
        await docker.images.inspect(tag)  # a build that said nothing useful still fails here
        return tag
    finally:
        await docker.close()


def engine_or_skip() -> None:
    """Skip, saying why, when no Docker engine can be reached at all."""
    reason = asyncio.run(docker_reachable())
    if reason is not None:
        pytest.skip(f"no Docker engine for the container executor: {reason}")


def agent_image_or_skip() -> str:
    """The test image's tag, for a session fixture; skips (saying why) without an engine."""
    engine_or_skip()
    return asyncio.run(ensure_agent_image())
