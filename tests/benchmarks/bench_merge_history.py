"""Benchmark: the entity merge driver on real merge history, against git merge-file.

Run from the project root, with the repositories of
tests/benchmarks/merge_history/repos.toml as bare git directories under --mirrors:

    python tests/benchmarks/bench_merge_history.py [--mirrors /work/.mirror]

Every case of merge_history/manifest.tsv (a file that ``git merge-file`` could not
merge in a real two-parent merge commit) is merged three ways in one run: by this
driver in process, by the driver as it was before the real-history work (`--baseline`,
a git revision of this repository, loaded from ``git archive`` into a temporary
directory), and by ``git merge-file -p``; the time of parsing the three versions
alone with the file's tree-sitter grammar is printed too, as the floor of any merge
that reads the syntax, and the time of parsing them as this driver does (the sides as
edits of the base, which tree-sitter re-reads in part), the floor of this driver.
Each clean result is compared with the file the maintainers committed (identical,
equivalent: only formatting or entity order, or different) and checked for a wrong
merge (merge_history/checks.py): a parse failure,
a duplicate top-level declaration, import or export neither side had, or a name one
side deleted and the other changed. `--dump DIR` writes each different result with its
inputs for reading (`--unread`: only those with no current verdict);
merge_history/verdicts.toml holds the verdicts of that reading.

The repositories repos.toml marks `held_out` are reported in a table of their own: the
driver is never tuned on them, so their figures say how it does on history it has not
seen. `--only OWNER/NAME` (repeatable) runs some repositories alone.

The judging of one result is in merge_history/judging.py, the tables in
merge_history/merge_tables.py; this file times the tools and counts.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent / "merge_history"
sys.path.insert(0, str(HERE))

from judging import (  # noqa: E402
    LANGUAGE_GROUP,
    Blobs,
    Case,
    Facts,
    dump_case,
    judge,
    load_manifest,
    read_verdicts,
)
from merge_tables import Tables, print_tables  # noqa: E402

from workers.entity_merge import language_for_path, merge_file  # noqa: E402
from workers.entity_merge.line_merge import split_lines  # noqa: E402
from workers.entity_merge.reparse import reparse  # noqa: E402

__all__ = ["HERE", "Blobs", "load_baseline", "load_manifest"]

# The driver as issue 26's work found it (the figures docs/performance.md compares
# with). 40778bd, the first default, predates workers/entity_merge and no longer loads.
BASELINE = "1873102"
Merge = Callable[..., Any]


def load_baseline(revision: str, into: Path) -> Callable[..., Any]:
    """`merge_file` of the driver at `revision`, imported under its own package name."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", revision, "workers/entity_merge"],
        capture_output=True,
        check=False,
    )
    if archive.returncode != 0:
        raise SystemExit(f"--baseline {revision!r}: {archive.stderr.decode().strip()}")
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    package = into / "baseline_entity_merge"
    (into / "workers/entity_merge").rename(package)
    sys.path.insert(0, str(into))
    module: ModuleType = importlib.import_module("baseline_entity_merge")
    return module.merge_file  # type: ignore[no-any-return]


def _git_merge_file(work: Path, base: bytes, ours: bytes, theirs: bytes) -> tuple[bytes, float]:
    for name, data in (("base", base), ("ours", ours), ("theirs", theirs)):
        (work / name).write_bytes(data)
    start = time.perf_counter()
    done = subprocess.run(
        ["git", "merge-file", "-p", "ours", "base", "theirs"],
        cwd=work,
        capture_output=True,
        check=False,
    )
    return done.stdout, time.perf_counter() - start


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--manifest", type=Path, default=HERE / "manifest.tsv")
    parser.add_argument("--verdicts", type=Path, default=HERE / "verdicts.toml")
    parser.add_argument("--baseline", default=BASELINE, help="git revision of the old driver")
    parser.add_argument("--limit", type=int, help="at most this many cases per repository")
    parser.add_argument(
        "--only", action="append", metavar="OWNER/NAME", help="run this repository's cases"
    )
    parser.add_argument("--repos", type=Path, default=HERE / "repos.toml")
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="time each tool this many times per file, keep the best",
    )
    parser.add_argument("--dump", type=Path, help="write each different result here")
    parser.add_argument(
        "--unread",
        action="store_true",
        help="with --dump, write only results with no current verdict in --verdicts",
    )
    parser.add_argument("--list-wrong", action="store_true", help="print each wrong case")
    parser.add_argument(
        "--list-changed", action="store_true", help="print each case old and new disagree on"
    )
    args = parser.parse_args()
    for name in ("limit", "repeat"):
        value = getattr(args, name)
        if value is not None and value < 1:
            parser.error(f"--{name} {value}: give a whole number of 1 or more")
    return args


def main() -> int:
    """Run every case through the three tools and print the tables."""
    args = _arguments()
    cases = load_manifest(args.manifest, args.limit)
    if args.only:
        cases = [c for c in cases if c.repo in args.only]
    held_out = {
        r["name"]
        for r in tomllib.loads(args.repos.read_text())["repository"]
        if r.get("held_out", False)
    }
    missing = sorted(
        {c.repo for c in cases if not (args.mirrors / c.repo.replace("/", "+") / "repo").is_dir()}
    )
    if missing:
        print(
            f"--mirrors {args.mirrors}: no bare git directory for {', '.join(missing)}",
            file=sys.stderr,
        )
        return 2
    tables = Tables()
    scorer = _Scorer(args, read_verdicts(args.verdicts))
    blobs: dict[str, Blobs] = {}
    with tempfile.TemporaryDirectory() as tmp:
        drivers = {"new": merge_file, "old": load_baseline(args.baseline, Path(tmp))}
        work = Path(tmp) / "work"
        work.mkdir()
        for number, case in enumerate(cases):
            spec = language_for_path(case.path)
            if spec is None:
                continue
            if case.repo not in blobs:
                blobs[case.repo] = Blobs(args.mirrors / case.repo.replace("/", "+") / "repo")
            data = {
                n: blobs[case.repo].read(getattr(case, n))
                for n in ("base", "ours", "theirs", "result")
            }
            part = "held out" if case.repo in held_out else "tuned on"
            row = tables.counts[part][LANGUAGE_GROUP[spec.name]]
            row["files"] += 1
            best = _best_times(case, data, drivers, work, args.repeat, number)
            for tool, seconds in best.items():
                tables.times[part][tool].append(seconds)
            scorer.score(case, data, drivers, row)
    repositories = {
        part: len({c.repo for c in cases if (c.repo in held_out) == (part == "held out")})
        for part in ("tuned on", "held out")
    }
    print_tables(tables, repositories)
    print(f"\nverdicts on file: {len(scorer.read)}")
    return 0


def _best_times(
    case: Case,
    data: dict[str, bytes],
    drivers: dict[str, Merge],
    work: Path,
    repeat: int,
    number: int,
) -> dict[str, float]:
    """Each tool's best time on one case over `repeat` turns, and the parsing floors.

    The tools are timed in turn, so a burst of other work on the machine does not land
    on one tool only.
    """
    spec = language_for_path(case.path)
    assert spec is not None
    best = {k: float("inf") for k in ("git", "new", "old", "parse", "reparse")}
    parser = spec.parser()
    for turn in range(repeat):
        _, seconds = _git_merge_file(work, data["base"], data["ours"], data["theirs"])
        best["git"] = min(best["git"], seconds)
        # The floor of any merge that reads the syntax: parsing the three versions once
        # each, nothing else.
        start = time.perf_counter()
        for name in ("base", "ours", "theirs"):
            parser.parse(data[name])
        best["parse"] = min(best["parse"], time.perf_counter() - start)
        # The floor of this driver's way of reading them: the base parsed whole, each
        # side as an edit of it (tree-sitter reuses what is equal).
        start = time.perf_counter()
        base_tree, base_lines = parser.parse(data["base"]), split_lines(data["base"])
        for name in ("ours", "theirs"):
            reparse(parser, base_tree, base_lines, split_lines(data[name]), data[name])
        best["reparse"] = min(best["reparse"], time.perf_counter() - start)
        # The drivers take turns going first, the first turn's changing from file to
        # file: the second finds the file's data in the processor's caches (worth a few
        # per cent).
        order = ["new", "old"] if (turn + number) % 2 == 0 else ["old", "new"]
        for tool in order:
            start = time.perf_counter()
            drivers[tool](data["base"], data["ours"], data["theirs"], case.path)
            best[tool] = min(best[tool], time.perf_counter() - start)
    return best


class _Scorer:
    """Judges both drivers' results on each case into its row of the tables, and
    prints, dumps and checks against the recorded verdicts as the arguments ask."""

    def __init__(self, args: argparse.Namespace, read: dict[str, tuple[str, str]]) -> None:
        self.args = args
        self.read = read
        self.dumped = 0

    def score(
        self,
        case: Case,
        data: dict[str, bytes],
        drivers: dict[str, Merge],
        row: dict[str, int],
    ) -> None:
        outcomes = {}
        facts = Facts(case.path, data)
        # A side the grammar cannot parse leaves the driver a line merge only.
        row["unparsed"] += not facts.parses
        for tool, merge in drivers.items():
            verdict, merged = judge(merge, case, data, facts)
            outcomes[tool] = verdict.outcome
            if not verdict.clean:
                continue
            row[f"{tool} resolved"] += 1
            row[f"{tool} {verdict.outcome}"] += 1
            if verdict.wrong:
                row[f"{tool} wrong auto"] += 1
                if self.args.list_wrong:
                    print(f"{tool} WRONG {case.ident}: {verdict.wrong}")
            if tool == "new" and verdict.outcome == "different":
                self._different(case, data, merged, row)
        if self.args.list_changed and outcomes["new"] != outcomes["old"]:
            print(f"CHANGED {case.ident}: old {outcomes['old']}, new {outcomes['new']}")

    def _different(
        self, case: Case, data: dict[str, bytes], merged: bytes, row: dict[str, int]
    ) -> None:
        """Count a result that differs from the committed file against its verdict."""
        said, seen = self.read.get(case.ident, ("", ""))
        current = bool(said) and seen == hashlib.sha1(merged).hexdigest()
        if said and not current:
            # The driver's answer changed since it was read: read it again.
            row["new read stale"] += 1
        elif said:
            row["new read"] += 1
            row["new wrong read"] += said == "wrong"
        if self.args.dump is not None and not (self.args.unread and current):
            self.dumped += 1
            dump_case(self.args.dump, case, data, merged, self.dumped)


if __name__ == "__main__":
    raise SystemExit(main())
