"""CPU per check spent finding whether a uid runs a process: the scan of every process's
state that collected every uid (before) against :func:`workers.agents.uids.uid_alive`.

    python tests/benchmarks/bench_uid_lookup.py [--rounds 5] [--calls 200] [--extra 0,300]

A check run in the agent sandbox under a root daemon makes three of these lookups at least
(two when its uid is leased, one when the uid is swept after the run), so the figure per
check is three lookups. Measured with ``time.process_time`` (this process's CPU, not the
wall clock: the machine is shared), in interleaved rounds; ``--extra N`` starts N idle
processes of another uid first, as a busy host would have.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from workers.agents.uids import uid_alive  # noqa: E402

LOOKUPS_PER_CHECK = 3
UID = 60998  # a uid of the executor's range that runs nothing: the usual answer, a full scan


def uids_alive_before() -> set[int]:
    """The lookup as it was (every process's state read, every uid collected)."""
    alive: set[int] = set()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError):
            with open(os.path.join(entry.path, "stat"), "rb") as handle:
                state = handle.read().rsplit(b")", 1)[1].split()[0]
            if state not in (b"Z", b"X"):
                alive.add(entry.stat().st_uid)
    return alive


def cpu_per_call(call: object, calls: int) -> float:
    assert callable(call)
    started = time.process_time()
    for _ in range(calls):
        call()
    return (time.process_time() - started) / calls


def measure(rounds: int, calls: int) -> tuple[float, float]:
    before: list[float] = []
    after: list[float] = []
    for _ in range(rounds):  # interleaved: a busy spell hits both alike
        before.append(cpu_per_call(lambda: UID in uids_alive_before(), calls))
        after.append(cpu_per_call(lambda: uid_alive(UID), calls))
    return min(before), min(after)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--extra", default="0,300")
    args = parser.parse_args()
    assert uid_alive(UID) == (UID in uids_alive_before())
    for extra in [int(n) for n in args.extra.split(",")]:
        idle = [subprocess.Popen(["sleep", "3600"], stdin=subprocess.DEVNULL) for _ in range(extra)]
        try:
            processes = sum(1 for e in os.scandir("/proc") if e.name.isdigit())
            before, after = measure(args.rounds, args.calls)
        finally:
            for child in idle:
                child.kill()
                child.wait()
        per_check = [v * LOOKUPS_PER_CHECK * 1e3 for v in (before, after)]
        print(
            f"{processes} processes: per lookup before {before * 1e6:.0f} us, "
            f"after {after * 1e6:.0f} us; per check ({LOOKUPS_PER_CHECK} lookups) "
            f"{per_check[0]:.2f} ms -> {per_check[1]:.2f} ms "
            f"(saved {per_check[0] - per_check[1]:.2f} ms CPU, {before / after:.1f}x)"
        )


if __name__ == "__main__":
    main()
