"""Gate cache: what a cache hit costs against a real run of a generated 200-test suite, and
N units whose merge results share one tree running that suite once.

    python tests/benchmarks/bench_gate_cache.py [--tests 200] [--units 8] [--repeat 3]

Everything is measured in this one run against one embedded nats-server:

* raw: ``python -m pytest -q`` on a checkout of the same tree, started directly (no loopbus);
* loopbus run: ``GateRunner.evaluate(force=True)`` recorded: checkout, the same pytest with the
  reporting plugin, parse, sign, atomic publish of the result;
* loopbus hit: ``GateRunner.evaluate()`` answered from the cache (index get, read back
  the result, verify its signature);
* N units: N commits with different histories but one tree, gated concurrently (as N
  merge candidates would be) and then again one after another.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "gate_runner"))
sys.path.insert(0, str(ROOT / "tests"))

from gate_repos import GitRepo  # noqa: E402
from gatekit import run_commit  # noqa: E402

from bus import EmbeddedServer, connect, ensure_log, free_port  # noqa: E402
from workers import repository  # noqa: E402
from workers.gates.runner import GateRunner  # noqa: E402
from workers.gates.signing import load_or_create  # noqa: E402
from workers.runtime import configure_logging  # noqa: E402

PER_FILE = 10


def suite_files(project: str, tests: int, salt: str = "") -> dict[str, str]:
    files = {
        "loopbus.toml": (
            f'[project]\nid = "{project}"\nsalt = "{salt}"\n\n[[check]]\nid = "tests"\n'
            'command = "python -m pytest -q"\nparser = "pytest"\ntimeout = 300\n'
        ),
        "calc.py": "def total(xs):\n    return sum(xs)\n",
    }
    for index in range(0, tests, PER_FILE):
        body = ["from calc import total\n"]
        for n in range(index, min(index + PER_FILE, tests)):
            body.append(f"\ndef test_total_{n}():\n    assert total([{n}, 1]) == {n + 1}\n")
        files[f"tests/test_gen_{index // PER_FILE:03d}.py"] = "".join(body)
    return files


def raw_pytest(repo: Path, tree: str) -> float:
    """One plain pytest run on a checkout of ``tree`` (the checkout is not timed)."""
    scratch = Path(tempfile.mkdtemp(prefix="bench-raw-"))
    try:
        repository.checkout(repo, tree, scratch)
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
            cwd=scratch,
            capture_output=True,
            check=False,
        )
        elapsed = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"raw pytest failed:\n{done.stdout.decode()[-2000:]}")
        return elapsed
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


async def main(tests: int, units: int, repeat: int) -> None:
    workdir = Path(tempfile.mkdtemp(prefix="bench-gates-"))
    server = EmbeddedServer(workdir / "nats", port=free_port(), auth=None)
    await server.start()
    bus = await connect(server.url, name="bench")
    try:
        await ensure_log(bus.js)
        repo = GitRepo(workdir / "repo")
        commit = repo.commit(suite_files("bench", tests))
        tree = repo.tree_of(commit)
        runner = GateRunner(bus, repo.path, load_or_create(workdir / "data"), project="bench")

        raw: list[float] = []
        runs: list[float] = []
        for _ in range(repeat):  # interleaved, so drift on a shared machine hits both alike
            raw.append(raw_pytest(repo.path, tree))
            started = time.perf_counter()
            suite = await run_commit(runner, commit, force=True)
            runs.append(time.perf_counter() - started)
            assert suite.outcome == "pass" and not suite.checks[0].cached, suite.checks[0].result
        assert suite.checks[0].result.summary == f"{tests} passed"
        hits = []
        for _ in range(max(repeat * 10, 20)):
            started = time.perf_counter()
            suite = await run_commit(runner, commit)
            hits.append(time.perf_counter() - started)
            assert suite.checks[0].cached
        raw_s, run_s, hit_s = (statistics.median(x) for x in (raw, runs, hits))

        # N units whose merge results share one tree: fresh salt, so nothing is cached yet.
        shared = suite_files("bench", tests, salt=f"units-{time.time_ns()}")
        base = repo.commit(shared, message="trunk")
        merges = [repo.commit(shared, parent=base, message=f"merge unit {n}") for n in range(units)]
        assert len({repo.tree_of(m) for m in merges}) == 1
        before = runner.executions
        started = time.perf_counter()
        suites = await asyncio.gather(*(run_commit(runner, m, reason="trunk") for m in merges))
        together_s = time.perf_counter() - started
        ran_together = runner.executions - before
        started = time.perf_counter()
        for m in merges:
            await run_commit(runner, m, reason="trunk")
        again_s = time.perf_counter() - started
        ran_total = runner.executions - before
        fresh = sum(not s.checks[0].cached for s in suites)

        print(f"gate cache benchmark: {tests}-test pytest suite, median of {repeat} runs")
        print(f"  raw python -m pytest -q          {raw_s:8.3f} s")
        print(
            f"  loopbus real run (force)         {run_s:8.3f} s   ratio to raw {run_s / raw_s:.2f}"
        )
        print(
            f"  loopbus cache hit                {hit_s * 1000:8.2f} ms  "
            f"ratio to raw {hit_s / raw_s:.4f} ({raw_s / hit_s:.0f}x faster)"
        )
        print(
            f"  {units} units, one merge tree, gated concurrently: suite ran {ran_together} "
            f"time(s), {fresh} fresh result(s), {together_s:.3f} s "
            f"(vs {units} x raw = {units * raw_s:.3f} s)"
        )
        print(
            f"  the same {units} again, one after another: suite ran {ran_total - ran_together} "
            f"more time(s), {again_s:.3f} s"
        )
    finally:
        await bus.close()
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=200)
    parser.add_argument("--units", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=5)
    ns = parser.parse_args()
    configure_logging("warning", json=False)
    asyncio.run(main(ns.tests, ns.units, ns.repeat))
