"""Benchmark: what the builder's worktree ``.git`` costs per round, on a real repository.

Run from the project root, on any git repository (bare or not; a clone of a mid-size
public project is the point):

    python tests/benchmarks/bench_builder_worktree.py REPO [--runs 7] [--rev HEAD]

It times, for the commit ``--rev`` names, the round's worktree as the builder daemon makes
it (:func:`workers.builder.worktree.prepare`: the checkout plus a ``.git`` holding
the commit shallow, the branch and a matching index) against the plain checkout the
daemon made before (files only, :func:`workers.repository.checkout`), and checks
that ``git status`` in the result is clean. With ``--conflict OTHER`` it also times a
conflict round's start (:func:`workers.builder.conflict.merge` of ``OTHER`` into
``--rev`` plus its worktree). Prints one Markdown table row per measure: median wall and
CPU seconds over ``--runs``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from workers.builder import conflict, worktree
from workers.repository import checkout, commit_at, open_repo


def measure(runs: int, make: Callable[[Path], None], check: bool) -> tuple[float, float]:
    walls, cpus = [], []
    for _ in range(runs):
        folder = Path(tempfile.mkdtemp(prefix="bench-worktree-"))
        dest = folder / "tree"
        try:
            wall, cpu = time.perf_counter(), time.process_time()
            make(dest)
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)
            if check:
                status = subprocess.run(
                    ["git", "status", "--porcelain", "--untracked-files=no"],
                    cwd=dest,
                    capture_output=True,
                    text=True,
                )
                assert status.returncode == 0, status.stderr
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("--rev", default="HEAD")
    parser.add_argument("--conflict", help="a commit to merge into --rev, as a conflict round")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    with open_repo(args.repo) as opened:
        head = commit_at(opened, args.rev)
        sha, tree = head.id.decode(), head.tree.decode()
        files = sum(1 for _ in opened.object_store.iter_tree_contents(head.tree))

    def plain(dest: Path) -> None:
        worktree.fresh(dest)
        checkout(args.repo, tree, dest)

    def with_git(dest: Path) -> None:
        worktree.prepare(args.repo, sha, dest, branch="loopbus/bench/U1")

    rows = [
        ("files only (before)", measure(args.runs, plain, check=False)),
        ("files and `.git` (now)", measure(args.runs, with_git, check=True)),
    ]
    if args.conflict:

        def merged(dest: Path) -> None:
            started = conflict.merge(args.repo, sha, args.conflict, finding="bench")
            worktree.fresh(dest)
            conflict.prepare(args.repo, started, dest, branch="loopbus/bench/U1")

        rows.append(("conflict round: merge and worktree", measure(args.runs, merged, False)))
    print(f"{args.repo} at {sha[:12]}: {files} files, median of {args.runs} runs\n")
    print("| worktree | wall | CPU |\n| --- | --- | --- |")
    for name, (wall, cpu) in rows:
        print(f"| {name} | {wall:.2f} s | {cpu:.2f} s |")


if __name__ == "__main__":
    main()
