"""Does the merge driver give the same answer under every hash seed? On the whole corpus.

    python tests/benchmarks/check_merge_seeds.py [--seeds 0,1,2,3,7] [--every 1]

Python salts the hash of str and bytes per process (PYTHONHASHSEED), so a set's order of
lines or names changes from one run of the merger to the next. A driver that reads a
result out of such an order (the first of a set) answers differently from run to run:
a different conflict note, or worse. This runs the driver over the corpus of
bench_merge_history.py (every `--every`-th case, blobs from the same mirrors) once per
seed, each in an interpreter of its own, and prints how many cases differ from the
first seed's answer in any of: clean or not, the content, the note, the conflicts.
It exits 0 when none does, 1 when any does, 2 on bad arguments or a failed run.

Not collected by pytest (the file name does not start with ``test_``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

CORPUS = Path(__file__).resolve().parent / "merge_history"
sys.path.insert(0, str(CORPUS))

import msgspec  # noqa: E402
from judging import Blobs, load_manifest  # noqa: E402

from workers.entity_merge import language_for_path, merge_file  # noqa: E402


def answers(mirrors: Path, every: int) -> list[str]:
    """One line per case: repository, path and a digest of the driver's whole answer."""
    cases = load_manifest(CORPUS / "manifest.tsv", None)[::every]
    blobs: dict[str, Blobs] = {}
    lines = []
    for case in cases:
        if language_for_path(case.path) is None:
            continue
        if case.repo not in blobs:
            blobs[case.repo] = Blobs(mirrors / case.repo.replace("/", "+") / "repo")
        data = [blobs[case.repo].read(oid) for oid in (case.base, case.ours, case.theirs)]
        try:
            result = merge_file(*data, case.path)
        except Exception as exc:  # the parent shows the last line: let it name the case
            raise SystemExit(f"{case.ident}: the driver raised {exc!r}") from exc
        whole = msgspec.json.encode(result)
        lines.append(f"{case.ident} {hashlib.sha1(whole).hexdigest()}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2,3,7", help="comma-separated hash seeds")
    parser.add_argument("--every", type=int, default=1, help="take every n-th case")
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # a child run
    args = parser.parse_args()
    if args.one:
        print(json.dumps(answers(args.mirrors, args.every)))
        return 0
    seeds = _seeds(parser, args.seeds)
    if args.every < 1:
        parser.error(f"--every {args.every}: give a whole number of 1 or more")
    cases = load_manifest(CORPUS / "manifest.tsv", None)[:: args.every]
    needed = {c.repo for c in cases if language_for_path(c.path) is not None}
    mirror = {repo: args.mirrors / repo.replace("/", "+") / "repo" for repo in needed}
    missing = sorted(repo for repo, path in mirror.items() if not path.is_dir())
    if missing:
        parser.error(f"--mirrors {args.mirrors}: no bare git directory for {', '.join(missing)}")
    runs: dict[str, list[str]] = {}
    child_args = ["--one", f"--every={args.every}", f"--mirrors={args.mirrors}"]
    for seed in seeds:
        child = subprocess.run(
            [sys.executable, __file__, *child_args],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=False,
        )
        if child.returncode != 0:
            said = child.stderr.strip().splitlines() or [f"exit {child.returncode}"]
            print(f"seed {seed}: the run failed: {said[-1]}", file=sys.stderr)
            return 2
        runs[seed] = json.loads(child.stdout)
    first = seeds[0]
    differing = 0
    for seed in seeds[1:]:
        changed = [a for a, b in zip(runs[first], runs[seed], strict=True) if a != b]
        differing += len(changed)
        print(f"seed {seed} against seed {first}: {len(changed)} of {len(runs[first])} differ")
        for line in changed[:5]:
            print(f"  {line.rsplit(' ', 1)[0]}")
    return 1 if differing else 0


def _seeds(parser: argparse.ArgumentParser, given: str) -> list[str]:
    """Two or more different hash seeds, each a whole number Python accepts."""
    seeds: list[str] = []
    for text in (part.strip() for part in given.split(",") if part.strip()):
        if not (text.isascii() and text.isdigit() and int(text) <= 4_294_967_295):
            parser.error(f"--seeds {given!r}: {text!r} is not a seed; give 0 to 4294967295")
        if str(int(text)) not in seeds:
            seeds.append(str(int(text)))
    if len(seeds) < 2:
        parser.error(f"--seeds {given!r}: give two or more different seeds, as 0,1,2")
    return seeds


if __name__ == "__main__":
    raise SystemExit(main())
