"""How much work one replica takes at once: ``--jobs N`` or ``--jobs auto``."""

from __future__ import annotations

import argparse
import os


def cores() -> int:
    """The cores this process may run on (its affinity, not the machine's total: a
    container or a ``taskset`` limits it)."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # not on every platform
        return max(os.cpu_count() or 1, 1)


def jobs_from(text: str) -> int:
    """``auto`` (the cores here) or a count of 1 or more; anything else raises ValueError
    with the fix."""
    if text.strip().lower() == "auto":  # sized to where the replica runs
        return cores()
    try:
        jobs = int(text)
    except ValueError:
        raise ValueError(f"--jobs {text!r}: give a number of 1 or more, or 'auto'") from None
    if jobs < 1:
        raise ValueError(f"--jobs {jobs}: give 1 or more, or 'auto'")
    return jobs


def jobs_arg(text: str) -> int:
    """:func:`jobs_from` for argparse (its error is the one line argparse prints)."""
    try:
        return jobs_from(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def capacity_arg(text: str) -> int:
    """A count of 1 or more, or ``auto`` (the cores here: a unit in flight past its agent
    holds a gate suite, so more units than cores only wait for gate slots), for argparse
    (``--capacity``)."""
    if text.strip().lower() == "auto":
        return cores()
    try:
        count = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: give a number of 1 or more, or 'auto'"
        ) from None
    if count < 1:
        raise argparse.ArgumentTypeError(f"{count}: give 1 or more, or 'auto'")
    return count


def add_lease_options(
    parser: argparse.ArgumentParser, what: str, *, jobs: int, ttl_s: float
) -> None:
    """``--jobs`` and ``--lease-ttl`` for a daemon whose replicas split ``what`` (plural)."""
    parser.add_argument(
        "--jobs",
        type=jobs_arg,
        default=jobs,
        help=f"{what} of one project run at once by this replica: a number, or 'auto' for "
        "this machine's cores (default %(default)s)",
    )
    parser.add_argument(
        "--lease-ttl",
        type=lease_ttl_arg,
        default=ttl_s,
        metavar="SECONDS",
        help=f"how long this replica's lease on one of its {what} lives unrenewed; another "
        "replica takes it over after that (default %(default)s)",
    )


def lease_ttl_arg(text: str) -> float:
    """Seconds above 0, at most a day, for argparse (``--lease-ttl``)."""
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give seconds, such as 30") from None
    if not 0 < seconds <= 86400:
        raise argparse.ArgumentTypeError(f"{seconds}: give seconds above 0, at most 86400")
    return seconds
