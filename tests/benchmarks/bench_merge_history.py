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
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import importlib
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent / "merge_history"
sys.path.insert(0, str(HERE))

from build_corpus import Blobs as CorpusBlobs  # noqa: E402
from checks import bindings, canonical, definitions  # noqa: E402

from workers.entity_merge import language_for_path, merge_file  # noqa: E402
from workers.entity_merge.line_merge import split_lines  # noqa: E402
from workers.entity_merge.reparse import reparse  # noqa: E402

# The driver as issue 26's work found it (the figures docs/performance.md compares
# with). 40778bd, the first default, predates workers/entity_merge and no longer loads.
BASELINE = "1873102"
LANGUAGE_GROUP = {
    "python": "Python",
    "javascript": "JavaScript",
    "typescript": "TypeScript",
    "tsx": "TypeScript",
    "go": "Go",
    "rust": "Rust",
    "java": "Java",
}
LANGUAGE_ORDER = ["Python", "JavaScript", "TypeScript", "Go", "Rust", "Java"]


@dataclass(frozen=True)
class Case:
    """One manifest row."""

    repo: str
    merge: str
    path: str
    base: str
    ours: str
    theirs: str
    result: str

    @property
    def ident(self) -> str:
        """A short stable name: repository, merge commit and path."""
        return f"{self.repo}@{self.merge[:10]}:{self.path}"


class Blobs(CorpusBlobs):
    """Blob contents through the corpus builder's ``git cat-file --batch`` reader, each
    checked against its id (a corrupt mirror must not become a wrong verdict)."""

    def read(self, oid: str) -> bytes:
        try:
            data = super().read(oid)
        except KeyError:
            raise SystemExit(
                f"blob {oid}: missing from the mirror; rebuild it (see repos.toml)"
            ) from None
        digest = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        if digest != oid:
            raise SystemExit(f"blob {oid}: content hashes to {digest}; the mirror is corrupt")
        return data


@dataclass
class Verdict:
    """How one tool's result on one case compares with the committed file."""

    clean: bool
    outcome: str  # conflict | identical | equivalent | different
    wrong: str  # why the clean result is wrong, or ""


def _renamed(text: str, side: dict[str, str], base: dict[str, str]) -> bool:
    """Whether `side` holds a declaration mostly made of `text`'s lines (a rename).

    A name's declarations are joined by NUL (a TypeScript interface and a class may
    share one name); each is compared on its own.
    """
    lines = text.replace("\0", "\n").splitlines()
    if len(lines) <= 3:
        # A declaration of a line or three renamed shares no line with its old self
        # (`type IToastDemo = …` became `type ToastDemo = …`): compare its characters,
        # as the driver's matching does for entities this short, with the names the
        # side newly declares (short declarations alike by characters abound).
        return any(
            difflib.SequenceMatcher(None, text, one, autojunk=False).ratio() >= 0.6
            for name, joined in side.items()
            if name not in base
            for one in joined.split("\0")
            if one
        )
    return any(
        difflib.SequenceMatcher(None, lines, one.splitlines(), autojunk=False).ratio() >= 0.5
        for joined in side.values()
        for one in joined.split("\0")
        if one
    )


class Facts:
    """What the wrong-merge checks need from one case's inputs, computed once."""

    def __init__(self, path: str, data: dict[str, bytes]) -> None:
        spec = language_for_path(path)
        assert spec is not None
        self.spec = spec
        self.parses = True
        self.counts: dict[str, Counter[str]] = {}
        self.defined: dict[str, dict[str, str]] = {}
        for name in ("base", "ours", "theirs"):
            root = spec.parser().parse(data[name]).root_node
            if spec.broken(root):
                self.parses = False  # nothing to hold a result to
                return
            self.counts[name] = bindings(spec.name, root)
            self.defined[name] = definitions(spec.name, root)
        # A name one side deleted (not renamed) and the other changed.
        self.contested = ""
        for name, text in self.defined["base"].items():
            for deleter, keeper in (("ours", "theirs"), ("theirs", "ours")):
                kept = self.defined[keeper].get(name)
                if name in self.defined[deleter] or kept is None or kept == text:
                    continue
                renamed = _renamed(text, self.defined[deleter], self.defined["base"])
                if not self.contested and not renamed:
                    self.contested = (
                        f"defined and deleted: {name.split(' ', 1)[1]} ({deleter} deleted)"
                    )

    def wrong_reason(self, merged: bytes) -> str:
        """Why a clean merge is wrong, found without reading it, or "" when nothing is."""
        if not self.parses:
            return ""
        root = self.spec.parser().parse(merged).root_node
        if self.spec.broken(root):
            return "parse failure"
        ours, theirs = self.counts["ours"], self.counts["theirs"]
        for name, count in bindings(self.spec.name, root).items():
            if count > max(ours[name], theirs[name]):
                return f"duplicate: {name} x{count}"
        if self.spec.name == "java":
            # A Java method declared more often (by erasure) than on either side.
            sides = (self.defined["ours"], self.defined["theirs"])
            for name, text in definitions("java", root).items():
                count = text.count("\0")
                if "(" in name and count > max(side.get(name, "").count("\0") for side in sides):
                    return f"duplicate: {name.split(' ', 1)[1]} x{count}"
        return self.contested


def outcome(path: str, merged: bytes, committed: bytes) -> str:
    """identical, equivalent (formatting or order only) or different."""
    if merged == committed:
        return "identical"
    spec = language_for_path(path)
    assert spec is not None
    a = spec.parser().parse(merged).root_node
    b = spec.parser().parse(committed).root_node
    return "equivalent" if canonical(a) == canonical(b) else "different"


def _load_baseline(revision: str, into: Path) -> Callable[..., Any]:
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


def judge(
    merge: Callable[..., Any], case: Case, data: dict[str, bytes], facts: Facts
) -> tuple[Verdict, bytes]:
    """Merge one case with `merge` and judge the result."""
    result = merge(data["base"], data["ours"], data["theirs"], case.path)
    if not result.clean:
        return Verdict(False, "conflict", ""), result.content
    merged = result.content
    wrong = facts.wrong_reason(merged)
    return Verdict(True, outcome(case.path, merged, data["result"]), wrong), merged


def load_manifest(path: Path, limit: int | None) -> list[Case]:
    """The manifest's cases, optionally only the first `limit` per repository."""
    lines = path.read_text().splitlines()
    cases = [Case(*line.split("\t")) for line in lines[1:] if line]
    if limit is None:
        return cases
    taken: dict[str, int] = defaultdict(int)
    kept = []
    for c in cases:
        if taken[c.repo] < limit:
            taken[c.repo] += 1
            kept.append(c)
    return kept


def _read_verdicts(path: Path) -> dict[str, tuple[str, str]]:
    """Case -> (verdict, sha1 of the merged file that was read)."""
    if not path.exists():
        return {}
    cases = tomllib.loads(path.read_text()).get("case", [])
    return {c["case"]: (c["verdict"], c["merged"]) for c in cases}


def _dump(directory: Path, case: Case, data: dict[str, bytes], merged: bytes, n: int) -> None:
    folder = directory / f"{n:04d}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "case.txt").write_text(f"{case.ident}\n{hashlib.sha1(merged).hexdigest()}\n")
    for name in ("base", "ours", "theirs"):
        (folder / name).write_bytes(data[name])
    (folder / "committed").write_bytes(data["result"])
    (folder / "merged").write_bytes(merged)
    diff = subprocess.run(
        ["git", "diff", "--no-index", "-U2", "committed", "merged"],
        cwd=folder,
        capture_output=True,
        check=False,
    )
    (folder / "committed-vs-merged.diff").write_bytes(diff.stdout)


def main() -> int:
    """Run every case through the three tools and print the tables."""
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

    cases = load_manifest(args.manifest, args.limit)
    if args.only:
        cases = [c for c in cases if c.repo in args.only]
    held_out = {
        r["name"]
        for r in tomllib.loads(args.repos.read_text())["repository"]
        if r.get("held_out", False)
    }
    read = _read_verdicts(args.verdicts)
    missing = sorted(
        {c.repo for c in cases if not (args.mirrors / c.repo.replace("/", "+") / "repo").is_dir()}
    )
    if missing:
        print(
            f"--mirrors {args.mirrors}: no bare git directory for {', '.join(missing)}",
            file=sys.stderr,
        )
        return 2
    # part ("held out" or "tuned on") -> language -> counter
    tables: dict[str, dict[str, dict[str, int]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(int))
    )
    # part -> tool -> best time of each file
    timings: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    blobs: dict[str, Blobs] = {}
    dumped = 0
    with tempfile.TemporaryDirectory() as tmp:
        old_merge = _load_baseline(args.baseline, Path(tmp))
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
            group = LANGUAGE_GROUP[spec.name]
            part = "held out" if case.repo in held_out else "tuned on"
            row = tables[part][group]
            times = timings[part]
            row["files"] += 1
            # Each tool's time is the best of --repeat runs, taken in turn, so a burst
            # of other work on the machine does not land on one tool only.
            best = {k: float("inf") for k in ("git", "new", "old", "parse", "reparse")}
            parser = spec.parser()
            for turn in range(args.repeat):
                _, seconds = _git_merge_file(work, data["base"], data["ours"], data["theirs"])
                best["git"] = min(best["git"], seconds)
                # The floor of any merge that reads the syntax: parsing the three
                # versions once each, nothing else.
                start = time.perf_counter()
                for name in ("base", "ours", "theirs"):
                    parser.parse(data[name])
                best["parse"] = min(best["parse"], time.perf_counter() - start)
                # The floor of this driver's way of reading them: the base parsed
                # whole, each side as an edit of it (tree-sitter reuses what is equal).
                start = time.perf_counter()
                base_tree, base_lines = parser.parse(data["base"]), split_lines(data["base"])
                for name in ("ours", "theirs"):
                    reparse(parser, base_tree, base_lines, split_lines(data[name]), data[name])
                best["reparse"] = min(best["reparse"], time.perf_counter() - start)
                # The drivers take turns going first, the first turn's changing from
                # file to file: the second finds the file's data in the processor's
                # caches (worth a few per cent).
                drivers = (("new", merge_file), ("old", old_merge))
                for tool, merge in drivers[:: 1 if (turn + number) % 2 == 0 else -1]:
                    start = time.perf_counter()
                    merge(data["base"], data["ours"], data["theirs"], case.path)
                    best[tool] = min(best[tool], time.perf_counter() - start)
            for tool, seconds in best.items():
                times[tool].append(seconds)
            outcomes = {}
            facts = Facts(case.path, data)
            # A side the grammar cannot parse leaves the driver a line merge only.
            row["unparsed"] += not facts.parses
            for tool, merge in (("new", merge_file), ("old", old_merge)):
                verdict, merged = judge(merge, case, data, facts)
                outcomes[tool] = verdict.outcome
                if not verdict.clean:
                    continue
                row[f"{tool} resolved"] += 1
                row[f"{tool} {verdict.outcome}"] += 1
                if verdict.wrong:
                    row[f"{tool} wrong auto"] += 1
                    if args.list_wrong:
                        print(f"{tool} WRONG {case.ident}: {verdict.wrong}")
                if tool == "new" and verdict.outcome == "different":
                    said, seen = read.get(case.ident, ("", ""))
                    if said and seen != hashlib.sha1(merged).hexdigest():
                        # The driver's answer changed since it was read: read it again.
                        row["new read stale"] += 1
                    elif said:
                        row["new read"] += 1
                        row["new wrong read"] += said == "wrong"
                    current = said and seen == hashlib.sha1(merged).hexdigest()
                    if args.dump is not None and not (args.unread and current):
                        dumped += 1
                        _dump(args.dump, case, data, merged, dumped)
            if args.list_changed and outcomes["new"] != outcomes["old"]:
                print(f"CHANGED {case.ident}: old {outcomes['old']}, new {outcomes['new']}")
    for part in ("tuned on", "held out"):
        if part in tables:
            repos = {c.repo for c in cases if (c.repo in held_out) == (part == "held out")}
            print(f"\n{part} ({len(repos)} repositories):\n")
            _report(tables[part], timings[part])
    if len(tables) > 1:
        print("\nboth parts:\n")
        both: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        every: dict[str, list[float]] = defaultdict(list)
        for part, table in tables.items():
            for group, row in table.items():
                for key, value in row.items():
                    both[group][key] += value
            for tool, seconds in timings[part].items():
                every[tool] += seconds
        _report(both, every)
    print(f"\nverdicts on file: {len(read)}")
    return 0


def _report(table: dict[str, dict[str, int]], times: dict[str, list[float]]) -> None:
    order = LANGUAGE_ORDER
    total: dict[str, int] = defaultdict(int)
    print(
        "| language | files | resolved old | resolved new | identical | equivalent "
        "| different | wrong (auto) old / new | different read: wrong / read |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for group in [*order, "all"]:
        row = total if group == "all" else table.get(group, defaultdict(int))
        if group != "all":
            for k, v in row.items():
                total[k] += v
        files = row["files"]

        def pct(n: int, files: int = files) -> str:
            return f"{n} ({100 * n / files:.1f}%)" if files else str(n)

        print(
            f"| {group} | {files} | {pct(row['old resolved'])} | {pct(row['new resolved'])} "
            f"| {row['new identical']} | {row['new equivalent']} | {row['new different']} "
            f"| {row['old wrong auto']} / {row['new wrong auto']} "
            f"| {row['new wrong read']} / {row['new read']} |"
        )
    new, old, git = (statistics.median(times[k]) * 1000 for k in ("new", "old", "git"))
    print()
    print(
        f"median ms/file (best of the repeats per file): new driver {new:.2f}, "
        f"old driver {old:.2f}, git merge-file -p {git:.2f} (process included); "
        f"new/git {new / git:.2f}, old/git {old / git:.2f}"
    )
    parse = statistics.median(times["parse"]) * 1000
    print(
        f"median ms/file of parsing the three versions alone (tree-sitter, no merge): "
        f"{parse:.2f}, {parse / git:.2f}x git's whole merge"
    )
    reread = statistics.median(times["reparse"]) * 1000
    print(
        f"median ms/file of parsing the base and each side as an edit of it, as the "
        f"driver does (no merge): {reread:.2f}, {reread / git:.2f}x git's whole merge"
    )
    ratios = [n / g for n, g in zip(times["new"], times["git"], strict=True) if g > 0]
    print(
        f"median of each file's new/git time ratio: {statistics.median(ratios):.2f}; "
        f"files with a version the grammar does not parse: {total['unparsed']}"
    )
    print(
        f"different results read and still current: {total['new read']}, "
        f"of which wrong: {total['new wrong read']}; stale (the driver's answer changed "
        f"since it was read): {total['new read stale']}"
    )


if __name__ == "__main__":
    raise SystemExit(main())
