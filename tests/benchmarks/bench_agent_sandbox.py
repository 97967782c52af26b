"""What a sandbox adds to one agent run: start-up and teardown of a trivial command.

    python tests/benchmarks/bench_agent_sandbox.py [--runs 20] [--files 200]

The command is ``python -I -c pass`` through the interpreter running this script, with a
one-line stdin, in a worktree of ``--files`` small files. Each executor runs it ``--runs``
times, one after another; the bare baseline (a plain subprocess, no sandbox) is measured
in the same run, and each executor is printed as its median wall time per run and its
ratio to the baseline's median. Executors that cannot run here (no Docker engine, no
local executor yet) are named with the reason and skipped.

The container executor runs the test image of ``tests/agent_image.py`` (built locally,
no registry) with the host's ``/usr`` and interpreter mounted read-only, as the tests do.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: agent_image

from agent_image import agent_python, ensure_agent_image, host_read_only
from loopbus.workers.agents.sandbox import SandboxExecutor, SandboxSpec

STDIN = b'{"brief": "nothing"}\n'


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
    await process.communicate(spec.stdin)
    assert process.returncode == 0


def through(executor: SandboxExecutor) -> Callable[[SandboxSpec], Awaitable[None]]:
    async def run(spec: SandboxSpec) -> None:
        result = await executor.run(spec)
        assert result.exit_code == 0 and not result.start_error, result

    return run


async def executors(image: str | None) -> list[tuple[str, SandboxExecutor | None, str]]:
    """(name, executor or None, why not) for every sandbox executor to measure."""
    found: list[tuple[str, SandboxExecutor | None, str]] = []
    from loopbus.workers.agents.container import ContainerExecutor

    container = ContainerExecutor()
    why = await container.available()
    found.append(("container", container if why is None and image else None, why or ""))
    try:  # imported by name: the local executor may not be merged yet
        local_module = importlib.import_module("loopbus.workers.agents.local")
    except ImportError as exc:
        found.append(("local", None, f"workers/agents/local.py not importable: {exc}"))
    else:
        local: SandboxExecutor = local_module.LocalExecutor()
        why = await local.available()
        found.append(("local", local if why is None else None, why or ""))
    return found


async def timed(run: Callable[[SandboxSpec], Awaitable[None]], spec: SandboxSpec, n: int) -> float:
    await run(spec)  # warm up: first-run costs (page cache, image layers) are not per run
    times = []
    for _ in range(n):
        started = time.perf_counter()
        await run(spec)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


async def main(runs: int, files: int) -> None:
    from loopbus.workers.gates.executors import docker_reachable

    image = await ensure_agent_image() if await docker_reachable() is None else None
    with tempfile.TemporaryDirectory() as scratch:
        worktree = Path(scratch, "worktree")
        worktree.mkdir()
        for index in range(files):
            Path(worktree, f"f{index}.py").write_text("x = 1\n")
        spec = SandboxSpec(
            argv=[agent_python(), "-I", "-c", "pass"],
            stdin=STDIN,
            worktree=worktree,
            env={"PATH": "/usr/bin:/bin"},
            timeout_s=120,
            read_only=host_read_only(),
            image=image,
        )
        baseline = await timed(bare, spec, runs)
        print(f"{runs} runs each, median per run, worktree of {files} files")
        print(f"{'bare subprocess':18} {baseline * 1000:8.1f} ms   1.0x")
        for name, executor, why in await executors(image):
            if executor is None:
                print(f"{name:18} skipped: {why}")
                continue
            median = await timed(through(executor), spec, runs)
            print(f"{name:18} {median * 1000:8.1f} ms {median / baseline:5.1f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--files", type=int, default=200)
    args = parser.parse_args()
    asyncio.run(main(args.runs, args.files))
