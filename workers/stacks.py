"""What a running daemon is waiting on: every asyncio task's await chain and every thread's
stack, written to its log on ``SIGUSR1``.

A daemon that looks stuck (a lease renewed for minutes with no work to show for it) is
parked on some ``await``. ``asyncio.Task.get_stack`` shows only a suspended task's
outermost frame, which says which task is stuck but not on what; here each task's chain is
followed down through what each frame awaits (a coroutine's ``cr_await``, a generator's
``gi_yieldfrom``, and through ``async for`` into the async generator it steps) to the
innermost frame, and the future the task waits on is named. Threads are included because a
blocking call handed to ``asyncio.to_thread`` parks the task that awaits it.

``kill -USR1 <pid>`` writes a ``daemon.stacks`` line (how many tasks and threads), then one
``daemon.stacks.task`` line per task and one ``daemon.stacks.thread`` line per thread (one
line each, so no log driver splits a dump of hundreds of tasks); the daemon goes on running.
"""

from __future__ import annotations

import asyncio
import gc
import inspect
import signal
import sys
import threading
import traceback
from types import FrameType
from typing import Any

import structlog

log = structlog.get_logger()

MAX_DEPTH = 64
"""Awaits followed per task: deep enough for any chain here, bounded against a cycle."""


def _frame_of(awaitable: Any) -> FrameType | None:
    for name in ("cr_frame", "ag_frame", "gi_frame"):
        frame = getattr(awaitable, name, None)
        if frame is not None:
            return frame  # type: ignore[no-any-return]
    return None


def _awaited_by(awaitable: Any) -> Any:
    for name in ("cr_await", "ag_await", "gi_yieldfrom"):
        inner = getattr(awaitable, name, None)
        if inner is not None:
            return _stepped(inner)
    return None


def _stepped(awaitable: Any) -> Any:
    """``async for`` awaits an ``async_generator_asend`` object, which has no frame and no
    attribute naming its generator: the generator is found among what it refers to."""
    if type(awaitable).__name__ in ("async_generator_asend", "async_generator_athrow"):
        for referred in gc.get_referents(awaitable):
            if inspect.isasyncgen(referred):
                return referred
    return awaitable


def _where(frame: FrameType) -> str:
    code = frame.f_code
    return f"{code.co_filename}:{frame.f_lineno} in {code.co_qualname}"


def await_chain(task: asyncio.Task[Any]) -> list[str]:
    """``task``'s frames from its coroutine down to the innermost await, then what it waits
    on (the future its step is parked on, when it has one)."""
    lines: list[str] = []
    current: Any = task.get_coro()
    for _ in range(MAX_DEPTH):
        if current is None:
            break
        frame = _frame_of(current)
        if frame is not None:
            lines.append(_where(frame))
        current = _awaited_by(current)
    waiter = getattr(task, "_fut_waiter", None)  # private, but the one place it is said
    if waiter is not None:
        lines.append(f"waits on {_named(waiter)}"[:500])  # a repr may hold payload: capped
    return lines


def _named(future: Any) -> str:
    """A future a task waits on, by what it is: another task (by name, to find its chain),
    a gather of several, or the future's own repr."""
    if isinstance(future, asyncio.Task):
        return f"task {future.get_name()}"
    children = getattr(future, "_children", None)  # asyncio.gather's future
    if children:
        return "gather of " + ", ".join(_named(child) for child in children)
    return repr(future)


def task_stacks() -> list[dict[str, Any]]:
    """Every task of the running loop, with its await chain."""
    return [
        {"task": task.get_name(), "chain": await_chain(task)}
        for task in sorted(asyncio.all_tasks(), key=lambda t: t.get_name())
    ]


def thread_stacks() -> list[dict[str, Any]]:
    """Every thread's stack (the loop's own included), innermost frame last."""
    names = {thread.ident: thread.name for thread in threading.enumerate()}
    return [
        {
            "thread": names.get(ident, str(ident)),
            "stack": [line.strip() for line in traceback.format_stack(frame)][-12:],
        }
        for ident, frame in sys._current_frames().items()
    ]


def write_stacks() -> None:
    """Every task's and thread's stack in the log, a line each (see the module)."""
    try:
        tasks, threads = task_stacks(), thread_stacks()
        log.warning("daemon.stacks", tasks=len(tasks), threads=len(threads))
        for task in tasks:
            log.warning("daemon.stacks.task", **task)
        for thread in threads:
            log.warning("daemon.stacks.thread", **thread)
    except Exception as exc:  # a diagnostic never takes the daemon down
        log.warning("daemon.stacks_failed", error=repr(exc))


def dump_on_signal(loop: asyncio.AbstractEventLoop) -> None:
    """Write the stacks whenever the process gets ``SIGUSR1`` (see the module)."""
    loop.add_signal_handler(signal.SIGUSR1, write_stacks)
