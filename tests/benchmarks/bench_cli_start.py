"""How long a ``loopbus`` command takes to start, against ``python -c pass``.

    python tests/benchmarks/bench_cli_start.py [--runs 15] [--python OTHER/.venv/bin/python]
                                                [--every-help]

One embedded server with one project on it (a unit and a finding, materialised by the
projector daemon, as ``loopbus up`` runs it); then each command below is run as users run
it, the installed ``loopbus`` script in a new process, ``--runs`` times, and its median
wall time is printed next to the median of ``python -c pass`` measured in the same rounds,
with their ratio. The commands run in an empty directory with no ``LOOPBUS_*`` variable, so
nothing but the command line decides what they do, and without ``PYTHONDONTWRITEBYTECODE``,
so they start from cached bytecode as a user's do (the first round writes it).

``--every-help`` adds ``loopbus COMMAND --help`` for every other command.

``--python`` names another installation's interpreter (another checkout's venv, e.g. the
code before a change): its ``loopbus`` script is run alternately with this one's, command by
command within each round, so both see the same machine, and a third column gives the
speed-up. Each side's ``python -c pass`` is its own baseline.

Not collected by pytest (the file name does not start with ``test_``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bus import EmbeddedServer, Views, connect, ensure_log, free_port
from schemas import Actor, FindingRaised, UnitPlanned, parse_target

PROJECT = "bench"
SYSTEM = Actor(role="system", principal="bench")
REVIEWER = Actor(role="reviewer", principal="bench")

HELP_COMMANDS: list[tuple[str, list[str]]] = [
    ("--version", ["--version"]),
    ("--help", ["--help"]),
    ("status --help", ["status", "--help"]),
    ("tail --help", ["tail", "--help"]),
    ("report --help", ["report", "--help"]),
]


def every_help() -> list[tuple[str, list[str]]]:
    """``--help`` of each command ``HELP_COMMANDS`` does not time already."""
    from loopbus.cli import COMMANDS

    timed = {name for name, _ in HELP_COMMANDS}
    return [
        (f"{name} --help", [name, "--help"]) for name in COMMANDS if f"{name} --help" not in timed
    ]


def bus_commands(url: str) -> list[tuple[str, list[str]]]:
    """The commands that talk to the server (each reads or writes the project)."""
    where = ["--project", PROJECT, "--nats-url", url]
    return [
        ("status", ["status", *where]),
        ("tail --no-follow", ["tail", "--no-follow", *where]),
        ("report heartbeat", ["report", "heartbeat", "--unit", "U1", *where]),
    ]


async def seed(url: str) -> None:
    """The project: one unit and one open finding, materialised by the projector."""
    bus = await connect(url)
    try:
        await ensure_log(bus.js)
        await bus.publish_many(
            [
                UnitPlanned(project=PROJECT, actor=SYSTEM, unit="U1", slice="S1", title="one"),
                FindingRaised(
                    project=PROJECT,
                    actor=REVIEWER,
                    producer="reviewer",
                    target=parse_target("code:src/app.py:1-2"),
                    severity="medium",
                    criterion="C1",
                    message="the value may be None here",
                    unit="U1",
                ),
            ]
        )
        last = await bus.stream_last_seq()
        views = await Views.open(bus)
        command = [sys.executable, "-m", "workers.projector", "--nats-url", url]
        child = subprocess.Popen([*command, "--log-level", "warning"], stderr=subprocess.DEVNULL)
        try:
            async with asyncio.timeout(120):
                while True:
                    with contextlib.suppress(Exception):
                        if (await views.checkpoint()).seq >= last:
                            return
                    await asyncio.sleep(0.2)
        finally:
            child.terminate()
            child.wait()
    finally:
        await bus.close()


class Side:
    """One installation: its interpreter and its ``loopbus`` script, with their timings."""

    def __init__(self, label: str, python: Path, cwd: Path, env: dict[str, str]) -> None:
        self.label = label
        self.python = python
        self.script = python.parent / "loopbus"
        if not self.script.exists():
            raise SystemExit(f"--python {python}: no loopbus script beside it ({self.script})")
        self.cwd = cwd
        self.env = env
        self.times: dict[str, list[float]] = {}

    def run(self, name: str, command: list[str]) -> None:
        began = time.perf_counter()
        done = subprocess.run(command, cwd=self.cwd, env=self.env, capture_output=True, text=True)
        elapsed = time.perf_counter() - began
        if done.returncode != 0:
            raise SystemExit(
                f"{self.label}: {' '.join(command)} exited {done.returncode}: "
                f"{done.stderr.strip()[-400:]}"
            )
        self.times.setdefault(name, []).append(elapsed)

    def baseline(self) -> None:
        self.run("python -c pass", [str(self.python), "-c", "pass"])

    def loopbus(self, name: str, args: list[str]) -> None:
        self.run(name, [str(self.script), *args])

    def median_ms(self, name: str) -> float:
        return statistics.median(self.times[name]) * 1000


def measure(sides: list[Side], commands: list[tuple[str, list[str]]], runs: int) -> None:
    for _ in range(runs):
        for name, args in [("python -c pass", []), *commands]:
            for side in sides:  # alternate: each command on every side before the next
                if args:
                    side.loopbus(name, args)
                else:
                    side.baseline()


def report(sides: list[Side], commands: list[tuple[str, list[str]]], runs: int) -> None:
    heads = "".join(f" {side.label:>12} {'ratio':>6}" for side in sides)
    extra = f" {'speed-up':>9}" if len(sides) == 2 else ""
    print(f"median of {runs} runs, milliseconds; ratio = command / python -c pass, same side")
    print(f"{'command':24}{heads}{extra}")
    for name in ["python -c pass", *(n for n, _ in commands)]:
        line = f"{name:24}"
        for side in sides:
            ms = side.median_ms(name)
            line += f" {ms:12.0f} {ms / side.median_ms('python -c pass'):6.1f}"
        if len(sides) == 2:
            line += f" {sides[0].median_ms(name) / sides[1].median_ms(name):8.1f}x"
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="runs of each command (median)")
    parser.add_argument(
        "--python",
        type=Path,
        default=None,
        help="another installation's interpreter, measured alternately as 'before'",
    )
    parser.add_argument(
        "--every-help", action="store_true", help="also time --help of every other command"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        server = EmbeddedServer(root / "server", port=free_port(), auth=None)
        asyncio.run(server.start())
        try:
            asyncio.run(seed(server.url))
            work = root / "work"
            work.mkdir()
            env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPBUS_")}
            # Python caches compiled modules unless told not to; a user's shell does
            # not say so, some CI and sandbox images do, and then every command
            # compiles loopbus's sources again at each start (about 0.1 s here).
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["LOOPBUS_DATA_DIR"] = str(root / "no-data")  # no credential to pick up
            this = Side("this", Path(sys.executable), work, env)
            sides = (
                [this] if args.python is None else [Side("before", args.python, work, env), this]
            )
            commands = HELP_COMMANDS + bus_commands(server.url)
            if args.every_help:
                commands += every_help()
            measure(sides, commands, args.runs)
            load = os.getloadavg()
            report(sides, commands, args.runs)
            print(f"load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
