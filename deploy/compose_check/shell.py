"""Running commands and reporting progress: the one place that calls subprocess.run."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

_STARTED = time.monotonic()


class CheckFailed(Exception):
    """A step failed; the message is the one line the person running the check reads."""


def say(message: str) -> None:
    """One progress line, stamped with the seconds since the check started."""
    print(f"[{time.monotonic() - _STARTED:7.1f}s] {message}", flush=True)


def run(
    argv: Sequence[str],
    *,
    log: Path | None = None,
    timeout: float = 600,
    stdin: str | None = None,
    check: bool = True,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``argv``; with ``log`` its output is appended there instead of captured.

    A non-zero exit raises :class:`CheckFailed` naming the command (and where its output
    went) unless ``check`` is false; a timeout is a failure too, never a hang.
    """
    try:
        if log is None:
            done = subprocess.run(
                list(argv),
                input=stdin,
                capture_output=True,
                text=True,
                timeout=timeout,
                cwd=cwd,
                stdin=None if stdin is not None else subprocess.DEVNULL,
            )
        else:
            with log.open("a") as out:
                out.write(f"\n$ {' '.join(argv)}\n")
                out.flush()
                done = subprocess.run(
                    list(argv),
                    input=stdin,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    text=True,
                    timeout=timeout,
                    cwd=cwd,
                    stdin=None if stdin is not None else subprocess.DEVNULL,
                )
    except subprocess.TimeoutExpired as exc:
        raise CheckFailed(f"`{' '.join(argv)}` did not finish within {timeout:.0f} s") from exc
    except FileNotFoundError as exc:
        raise CheckFailed(f"`{argv[0]}` is not installed") from exc
    if check and done.returncode != 0:
        where = f"; its output is in {log}" if log else f": {last_line(done.stderr)}"
        raise CheckFailed(f"`{' '.join(argv)}` exited {done.returncode}{where}")
    return done


def last_line(text: str | None) -> str:
    """The last non-empty line of ``text`` (what a failing tool usually says)."""
    lines = [line for line in (text or "").splitlines() if line.strip()]
    return lines[-1].strip() if lines else "(no output)"


def fail(message: str) -> int:
    """Print the one-line failure and give the exit code for it."""
    print(f"compose-check: FAILED: {message}", file=sys.stderr, flush=True)
    return 1
