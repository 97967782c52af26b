"""Cancels that nats-py can swallow, and the check that re-raises them."""

from __future__ import annotations

import asyncio

__all__ = ["raise_if_cancelled"]


def raise_if_cancelled() -> None:
    """Re-raise a cancellation that an await swallowed.

    Python 3.11's ``asyncio.wait_for`` returns the result instead of raising when the
    cancellation arrives as the awaited future completes (gh-86296), and nats-py waits for
    every publish acknowledgement with it: a daemon cancelled while publishing would carry
    on reading for ever. The task still counts the request (``cancelling()``), so the
    loops check it after each step.
    """
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError
