"""Benchmark: the entity merge driver against `git merge-file` on a generated corpus.

Run from the project root:

    python tests/benchmarks/bench_merge_driver.py [--variants 5] [--no-process]

Every scenario of tests/merger/entity_merge_cases.py (false conflicts of each kind,
real collisions, files that do not parse) is generated in `--variants` sizes for
Python, JavaScript, TypeScript and Go, merged by both tools, and judged against
the scenario's expected file. Prints Markdown tables for docs/performance.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The corpus is a plain module next to the tests that share it.
sys.path.insert(0, str(ROOT / "tests" / "merger"))

from entity_merge_cases import Scenario, corpus  # noqa: E402

from workers.entity_merge import language_for_path, merge_file  # noqa: E402


@dataclass
class Tally:
    """What one tool did over a set of scenarios."""

    total: int = 0
    clean: int = 0
    with_expected: int = 0
    identical: int = 0
    due_conflicts: int = 0
    flagged: int = 0
    clean_parsing: int = 0
    seconds: list[float] = field(default_factory=list)

    def add(self, s: Scenario, content: bytes, clean: bool, seconds: float) -> None:
        """Score one result against the scenario's expectation."""
        self.total += 1
        self.seconds.append(seconds)
        self.clean += clean
        if s.expected is None:
            self.due_conflicts += 1
            self.flagged += not clean
        else:
            self.with_expected += 1
            self.identical += clean and content == s.expected
        spec = language_for_path(s.lang.path)
        if clean and spec is not None and spec.parses(content):
            self.clean_parsing += 1

    @property
    def median_ms(self) -> float:
        """Median wall time per file, in milliseconds."""
        return statistics.median(self.seconds) * 1000


def _git_merge_file(directory: Path, s: Scenario) -> tuple[bytes, bool, float]:
    for name, data in (("base", s.base), ("ours", s.ours), ("theirs", s.theirs)):
        (directory / name).write_bytes(data)
    start = time.perf_counter()
    done = subprocess.run(
        ["git", "merge-file", "-p", "ours", "base", "theirs"],
        cwd=directory,
        capture_output=True,
        check=False,
    )
    elapsed = time.perf_counter() - start
    return done.stdout, done.returncode == 0, elapsed


def _driver_process(directory: Path, s: Scenario) -> tuple[bytes, bool, float]:
    for name, data in (("base", s.base), ("ours", s.ours), ("theirs", s.theirs)):
        (directory / name).write_bytes(data)
    start = time.perf_counter()
    command = [
        sys.executable,
        "-m",
        "workers.entity_merge",
        "base",
        "ours",
        "theirs",
    ]
    done = subprocess.run(
        [*command, s.lang.path],
        cwd=directory,
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    elapsed = time.perf_counter() - start
    return (directory / "ours").read_bytes(), done.returncode == 0, elapsed


def _row(name: str, t: Tally) -> str:
    return (
        f"| {name} | {t.clean}/{t.total} | {t.identical}/{t.with_expected} "
        f"| {t.flagged}/{t.due_conflicts} | {t.clean_parsing}/{t.clean} | {t.median_ms:.2f} |"
    )


def main() -> int:
    """Run the corpus through both tools and print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", type=int, default=5, help="sizes per scenario kind")
    parser.add_argument(
        "--no-process", action="store_true", help="skip timing the driver as a git-style process"
    )
    args = parser.parse_args()

    scenarios = corpus(args.variants)
    ours, git, process = Tally(), Tally(), Tally()
    by_kind: dict[str, tuple[Tally, Tally]] = defaultdict(lambda: (Tally(), Tally()))
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        for s in scenarios:
            start = time.perf_counter()
            result = merge_file(s.base, s.ours, s.theirs, s.lang.path)
            elapsed = time.perf_counter() - start
            ours.add(s, result.content, result.clean, elapsed)
            content, clean, seconds = _git_merge_file(directory, s)
            git.add(s, content, clean, seconds)
            by_kind[s.kind][0].add(s, result.content, result.clean, elapsed)
            by_kind[s.kind][1].add(s, content, clean, seconds)
            if not args.no_process:
                process.add(s, *_driver_process(directory, s))

    languages = sorted({s.lang.name for s in scenarios})
    print(f"{len(scenarios)} scenarios, {len(by_kind)} kinds, languages: {', '.join(languages)}")
    print()
    print(
        "| tool | resolved (clean) | identical to expected | real conflicts flagged "
        "| clean results that parse | median ms/file |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    print(_row("loopbus entity merge (in process)", ours))
    if not args.no_process:
        print(_row("loopbus merge-driver (one process per file)", process))
    print(_row("git merge-file -p (one process per file)", git))
    print()
    print(f"median time ratio, in process / git merge-file: {ours.median_ms / git.median_ms:.2f}")
    if not args.no_process:
        ratio = process.median_ms / git.median_ms
        print(f"median time ratio, driver process / git merge-file: {ratio:.2f}")
    print()
    print("| scenario kind | loopbus: clean, identical | git merge-file: clean, identical |")
    print("| --- | --- | --- |")
    for kind, (mine, theirs) in by_kind.items():
        due = " (conflict due)" if mine.with_expected == 0 else ""
        print(
            f"| {kind}{due} | {mine.clean}/{mine.total}, {mine.identical} "
            f"| {theirs.clean}/{theirs.total}, {theirs.identical} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
