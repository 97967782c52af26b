"""Benchmark: this entity merge driver against an earlier revision of it, by CPU time.

    python tests/benchmarks/bench_merge_cpu.py --baseline REV [--every 3] [--first new]

bench_merge_history.py times whole tools by the wall clock beside `git merge-file`,
which on a shared machine moves with whatever else runs. To tell whether a change to
the driver made it faster, this script merges the same corpus cases (every
`--every`-th of merge_history/manifest.tsv, blobs from the same mirrors) with both
drivers in one process and times each merge by the thread's CPU time, best of three,
the two drivers taking turns going first. It prints each driver's median, the ratio of
the medians, and the median of the per-file ratios. `--first` fixes who goes first in
every turn instead, to see what that order is worth.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_merge_history import HERE, Blobs, load_baseline, load_manifest

from workers.entity_merge import language_for_path, merge_file


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, help="git revision of the other driver")
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--every", type=int, default=3, help="take every n-th case")
    parser.add_argument("--first", choices=("new", "old"), help="always time this one first")
    args = parser.parse_args()
    if args.every < 1:
        parser.error(f"--every {args.every}: give a whole number of 1 or more")
    cases = load_manifest(HERE / "manifest.tsv", None)[:: args.every]
    cases = [c for c in cases if language_for_path(c.path) is not None]
    missing = sorted(
        {c.repo for c in cases if not (args.mirrors / c.repo.replace("/", "+") / "repo").is_dir()}
    )
    if missing:
        parser.error(f"--mirrors {args.mirrors}: no bare git directory for {', '.join(missing)}")
    blobs: dict[str, Blobs] = {}
    times: dict[str, list[float]] = {"new": [], "old": []}
    with tempfile.TemporaryDirectory() as tmp:
        drivers = {"new": merge_file, "old": load_baseline(args.baseline, Path(tmp))}
        for number, case in enumerate(cases):
            if case.repo not in blobs:
                blobs[case.repo] = Blobs(args.mirrors / case.repo.replace("/", "+") / "repo")
            data = [blobs[case.repo].read(oid) for oid in (case.base, case.ours, case.theirs)]
            best = {"new": float("inf"), "old": float("inf")}
            for turn in range(3):
                # Who goes first changes each turn, and the first turn's from file to
                # file, so over the corpus each driver goes first as often.
                order = ["new", "old"] if (turn + number) % 2 == 0 else ["old", "new"]
                if args.first is not None:
                    order.sort(key=lambda name: name != args.first)
                for name in order:
                    start = time.thread_time()
                    drivers[name](*data, case.path)
                    best[name] = min(best[name], time.thread_time() - start)
            for name, seconds in best.items():
                times[name].append(seconds)
    new, old = (statistics.median(times[name]) for name in ("new", "old"))
    per_file = statistics.median(n / o for n, o in zip(times["new"], times["old"], strict=True))
    first = args.first or "alternating"
    print(f"{len(cases)} files, CPU ms per file (median, best of 3), first: {first}")
    print(f"this driver {new * 1000:.3f}, {args.baseline} {old * 1000:.3f}; ratio {new / old:.3f}")
    print(f"median of the per-file ratios: {per_file:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
