"""The pipes and the process of a local run, from the daemon's side: what it prints (kept
up to a cap), what it is fed, when its own process has ended, and a cleanup that a
cancellation cannot interrupt."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

from workers.gates.executors import OUTPUT_CAP

T = TypeVar("T")
EXIT_POLL_S = 0.05


async def both(out: Awaitable[bytes], err: Awaitable[bytes]) -> None:
    await asyncio.gather(out, err)


async def exited(proc: asyncio.subprocess.Process) -> None:
    """Until the command's own process has exited (``proc.wait()`` also waits for its
    output pipes, which a child it left behind may hold open forever)."""
    while proc.returncode is None:
        await asyncio.sleep(EXIT_POLL_S)


async def drain(stream: asyncio.StreamReader) -> bytes:
    """Everything the stream says, up to ``OUTPUT_CAP`` bytes kept (the rest is read and
    dropped, so a command that prints without end cannot fill the daemon's memory)."""
    kept = bytearray()
    while chunk := await stream.read(1 << 16):
        if len(kept) < OUTPUT_CAP:
            kept += chunk[: OUTPUT_CAP - len(kept)]
    return bytes(kept)


async def feed(stdin: asyncio.StreamWriter, data: bytes) -> None:
    try:
        stdin.write(data)
        await stdin.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass  # the command did not read all of it: its answer says what it made of that
    finally:
        stdin.close()


async def unstoppable(work: Awaitable[T]) -> T:
    """Await ``work`` to its end even when cancelled meanwhile (then cancel after)."""
    task = asyncio.ensure_future(work)
    cancelled = False
    while True:
        try:
            result = await asyncio.shield(task)
            break
        except asyncio.CancelledError:
            if task.done():
                raise
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError
    return result
