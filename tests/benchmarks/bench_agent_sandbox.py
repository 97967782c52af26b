"""What a sandbox adds to one agent run: start-up and teardown of a trivial agent.

    python tests/benchmarks/bench_agent_sandbox.py [--runs 15] [--files 20 2000] [--python P]

The agent is what the shipped agents are, minus their work: loopbus's own interpreter
(``sys.executable``, as ``python -m loopbus.scripted.builder`` finds it first on the agent's
``PATH``) reading a one-line JSON brief from stdin, with the environment of
:func:`agent_env` and loopbus's paths read-only, as :func:`run_agent` gives every agent.

Five ways to run it, each ``--runs`` times after one warm-up run, for each worktree size:

* ``bare``: a plain subprocess, nothing hidden, nothing limited (the baseline);
* ``local uid``: :class:`LocalExecutor` with ``namespaces=False`` (per-run uid, limits,
  worktree lent and taken back; root only);
* ``local bwrap``: :class:`LocalExecutor` with ``namespaces=True`` (the same, inside
  bubblewrap's namespaces; what ``[agents] executor = "auto"`` picks without an image);
* ``local bwrap, no cgroup``: the same with ``cgroups=False`` (the rlimits alone, as on a
  host where no control group can be made): what the run's control group costs;
* ``container``: :class:`ContainerExecutor` with the test image of ``tests/agent_image.py``
  (built locally, no registry; the host's ``/usr`` and interpreter mounted read-only).

Rounds are interleaved (one run of each way per round, in turn), so load from other work
on the machine falls on every way alike; each way is printed as the median, min and max
wall time per run and the ratio of its median to the bare median of the same worktree.
The worktree is ``--files`` small files in folders of 100, as a checkout is laid out; the
lending walks all of it twice per run. Load averages are printed before and after each
worktree size. Ways that cannot run here are named with the reason and skipped.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: agent_image

from agent_image import ensure_agent_image, host_read_only

from workers.agents.container import ContainerExecutor
from workers.agents.environment import agent_env, loopbus_paths, outermost
from workers.agents.local import LocalExecutor
from workers.agents.sandbox import SandboxExecutor, SandboxSpec
from workers.gates.executors import docker_reachable

STDIN = b'{"brief": "nothing"}\n'
AGENT = "import json, sys; json.load(sys.stdin)"
PER_FOLDER = 100

Run = Callable[[SandboxSpec], Awaitable[None]]


class AgentFailed(Exception):
    """The trivial agent did not exit 0 (its error output is the message)."""


async def bare(spec: SandboxSpec) -> None:
    """The baseline: the same command as a plain subprocess, nothing hidden."""
    process = await asyncio.create_subprocess_exec(
        *spec.argv,
        cwd=spec.worktree,
        env=spec.env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await process.communicate(spec.stdin)
    if process.returncode != 0:
        raise AgentFailed(err.decode("utf-8", "replace").strip())


def through(executor: SandboxExecutor) -> Run:
    async def run(spec: SandboxSpec) -> None:
        result = await executor.run(spec)
        if result.exit_code != 0 or result.start_error:
            why = result.start_error or result.stderr.decode("utf-8", "replace").strip()
            raise AgentFailed(f"exit {result.exit_code}: {why}")

    return run


async def ways(image: str | None) -> list[tuple[str, Run | None, str]]:
    """(name, run or None, why not) for the baseline and every sandbox to measure."""
    found: list[tuple[str, Run | None, str]] = [("bare subprocess", bare, "")]
    for name, local in (
        ("local uid only", LocalExecutor(namespaces=False)),
        ("local bwrap", LocalExecutor(namespaces=True)),
        ("local bwrap, no cgroup", LocalExecutor(namespaces=True, cgroups=False)),
    ):
        why = await local.available()
        found.append((name, through(local) if why is None else None, why or ""))
    container = ContainerExecutor()
    why = await container.available()
    if why is None and image is None:
        why = "the test image could not be built"
    found.append(("container", through(container) if why is None else None, why or ""))
    return found


def worktree_of(root: Path, files: int) -> Path:
    worktree = root / f"worktree-{files}"
    for index in range(files):
        folder = worktree / f"d{index // PER_FOLDER:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{index}.py").write_text("x = 1\n")
    worktree.mkdir(exist_ok=True)
    return worktree


def load() -> str:
    return "/".join(f"{value:.2f}" for value in os.getloadavg())


async def measure(runs: list[tuple[str, Run]], spec: SandboxSpec, n: int) -> dict[str, list[float]]:
    """Seconds per run for each way, ``n`` interleaved rounds after one warm-up round; a
    way whose warm-up run fails is named with its error and left out."""
    working = []
    for name, run in runs:
        try:
            await run(spec)  # first-run costs (page cache, image layers) are not per run
        except AgentFailed as exc:
            print(f"{name}: skipped: the agent failed: {exc}")
        else:
            working.append((name, run))
    runs = working
    times: dict[str, list[float]] = {name: [] for name, _ in runs}
    for _ in range(n):
        for name, run in runs:
            started = time.perf_counter()
            await run(spec)
            times[name].append(time.perf_counter() - started)
    return times


async def main(n: int, sizes: list[int], python: str) -> None:
    image = await ensure_agent_image() if await docker_reachable() is None else None
    found = await ways(image)
    runnable = [(name, run) for name, run, _ in found if run is not None]
    for name, run, why in found:
        if run is None:
            print(f"{name}: skipped: {why}")
    with tempfile.TemporaryDirectory() as scratch:
        for files in sizes:
            worktree = worktree_of(Path(scratch), files)
            spec = SandboxSpec(
                argv=[python, "-c", AGENT],
                stdin=STDIN,
                worktree=worktree,
                env=agent_env({}),
                timeout_s=120,
                # outermost: the engine refuses the same path mounted twice
                read_only=outermost(str(p) for p in (*loopbus_paths(), *host_read_only())),
                image=image,
            )
            before = load()
            times = await measure(runnable, spec, n)
            print(
                f"\nworktree of {files} files; {n} interleaved runs each; "
                f"load average (1/5/15 min) {before} before, {load()} after"
            )
            print("| way | median | min | max | median vs bare | added per run |")
            print("| --- | --- | --- | --- | --- | --- |")
            baseline = statistics.median(times["bare subprocess"])
            for name, values in times.items():
                median = statistics.median(values)
                print(
                    f"| {name} | {median * 1000:.0f} ms | {min(values) * 1000:.0f} ms | "
                    f"{max(values) * 1000:.0f} ms | {median / baseline:.2f}x | "
                    f"{(median - baseline) * 1000:+.0f} ms |"
                )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--files", type=int, nargs="+", default=[20, 2000])
    parser.add_argument(
        "--python",
        default=sys.executable,
        help="the agent's interpreter (default: loopbus's own, as the shipped agents run)",
    )
    args = parser.parse_args()
    asyncio.run(main(args.runs, args.files, args.python))
