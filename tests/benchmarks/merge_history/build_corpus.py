"""Build the real-history merge corpus: every file a maintainer had to resolve by hand.

Run from the project root, after bringing each repository of `repos.toml` onto the
machine as a bare git directory (``MIRRORS/owner+name/repo``):

    python tests/benchmarks/merge_history/build_corpus.py [--mirrors /work/.mirror]

For each repository, every two-parent merge commit reachable from any ref (branches,
tags and the pull-request refs a full mirror carries) is replayed with
``git merge-tree --write-tree``: the files it reports with all three stages (a
content conflict, not add/add, rename or modify/delete) in a language the entity
driver supports are kept when ``git merge-file`` on those three blobs conflicts too and
the merge commit still has the file. Merges with more than one merge base are left out:
their stage-1 blob is a virtual ancestor no one can look up again.

The corpus is not copied into this repository (the blobs belong to their projects);
`manifest.tsv` names each case by blob ids, which are content hashes, so the benchmark
reads the exact bytes back out of the mirrors and a changed blob cannot go unnoticed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tomllib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
EXTENSIONS = (
    *(".py", ".pyi", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx", ".go"),
    *(".rs", ".java"),
)
# Larger blobs are generated bundles or fixtures, not code anyone resolves by hand.
MAX_BYTES = 400_000
COLUMNS = ("repo", "merge", "path", "base", "ours", "theirs", "result")


@dataclass(frozen=True)
class Case:
    """One conflicting file of one merge, by blob id."""

    repo: str
    merge: str
    path: str
    base: str
    ours: str
    theirs: str
    result: str

    def row(self) -> str:
        """The manifest line for this case."""
        return "\t".join(getattr(self, c) for c in COLUMNS)


def git(git_dir: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
    """Run git on a bare repository."""
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], capture_output=True, check=check)


class Blobs:
    """Blob sizes and contents through one long-lived ``git cat-file --batch``."""

    def __init__(self, git_dir: Path) -> None:
        self._process = subprocess.Popen(
            ["git", f"--git-dir={git_dir}", "cat-file", "--batch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )

    def read(self, oid: str) -> bytes:
        """The blob's bytes (raises KeyError when the object is missing)."""
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write(oid.encode() + b"\n")
        self._process.stdin.flush()
        header = self._process.stdout.readline().split()
        if len(header) < 3:
            raise KeyError(oid)
        data = self._process.stdout.read(int(header[2]) + 1)
        return data[:-1]

    def close(self) -> None:
        """Stop the cat-file process."""
        assert self._process.stdin is not None
        self._process.stdin.close()
        self._process.wait()


def _merges(git_dir: Path) -> list[tuple[str, str, str]]:
    out = git(git_dir, "rev-list", "--all", "--merges", "--parents").stdout.decode()
    merges = []
    for line in out.splitlines():
        ids = line.split()
        if len(ids) == 3:
            merges.append((ids[0], ids[1], ids[2]))
    return merges


def _staged(output: bytes) -> dict[str, dict[int, str]]:
    """Conflicted paths and their stage blobs from ``merge-tree -z --name-only`` output."""
    stages: dict[str, dict[int, str]] = {}
    records = output.split(b"\0")
    # Record 0 is the tree id; conflicted-file records follow until an empty one.
    for record in records[1:]:
        if not record:
            break
        meta, _, path = record.partition(b"\t")
        parts = meta.split()
        if len(parts) != 3:
            break
        stages.setdefault(path.decode("utf-8", "replace"), {})[int(parts[2])] = parts[1].decode()
    return stages


def _merge_file_conflicts(base: bytes, ours: bytes, theirs: bytes, work: Path) -> bool:
    for name, data in (("base", base), ("ours", ours), ("theirs", theirs)):
        (work / name).write_bytes(data)
    done = subprocess.run(
        ["git", "merge-file", "-p", "ours", "base", "theirs"], cwd=work, capture_output=True
    )
    return done.returncode > 0


def scan(repo: str, git_dir: Path, work: Path, limit: int, merges: int) -> list[Case]:
    """The corpus cases of one repository, newest merge first.

    Stops before the first merge reached with `limit` cases or more already found, so
    the corpus is the newest history of each repository, whole merges at a time, or
    after `merges` merge commits were replayed: a repository merged by a bot that only
    lands clean merges would otherwise be replayed whole for a handful of cases.
    """
    work.mkdir(parents=True, exist_ok=True)
    blobs = Blobs(git_dir)
    cases: list[Case] = []
    try:
        for merge, first, second in _merges(git_dir)[:merges]:
            if len(cases) >= limit:
                break
            tree = git(
                git_dir,
                "merge-tree",
                "--write-tree",
                "-z",
                "--no-messages",
                first,
                second,
                check=False,
            )
            if tree.returncode != 1:
                continue
            wanted = {
                path: s
                for path, s in _staged(tree.stdout).items()
                if path.endswith(EXTENSIONS) and set(s) == {1, 2, 3}
            }
            if not wanted:
                continue
            bases = git(git_dir, "merge-base", "--all", first, second, check=False).stdout.split()
            if len(bases) != 1:
                continue
            for path, s in sorted(wanted.items()):
                found = git(git_dir, "rev-parse", "--verify", "-q", f"{merge}:{path}", check=False)
                if found.returncode != 0:
                    continue
                result = found.stdout.decode().strip()
                three = [blobs.read(s[i]) for i in (1, 2, 3)]
                if any(len(d) > MAX_BYTES or b"\0" in d[:8000] for d in three):
                    continue
                if not _merge_file_conflicts(*three, work):
                    continue
                cases.append(Case(repo, merge, path, s[1], s[2], s[3], result))
    finally:
        blobs.close()
    print(f"{repo}: {len(cases)} conflicting files", file=sys.stderr, flush=True)
    return cases


def main() -> int:
    """Scan every repository of repos.toml and write manifest.tsv."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--repos", type=Path, default=HERE / "repos.toml")
    parser.add_argument("--out", type=Path, default=HERE / "manifest.tsv")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--work", type=Path, default=Path("/tmp/loopbus-merge-history"))
    parser.add_argument(
        "--only",
        action="append",
        metavar="OWNER/NAME",
        help="scan only this repository (repeatable); the manifest keeps the others' rows",
    )
    args = parser.parse_args()
    config = tomllib.loads(args.repos.read_text())
    repos = config["repository"]
    known = {r["name"] for r in repos}
    unknown = sorted(set(args.only or ()) - known)
    if unknown:
        print(
            f"--only {', '.join(unknown)}: not in {args.repos}; add it there first",
            file=sys.stderr,
        )
        return 2
    if args.only:
        repos = [r for r in repos if r["name"] in args.only]
    missing = [r["name"] for r in repos if not (args.mirrors / _dir(r["name"])).is_dir()]
    if missing:
        print(
            f"--mirrors {args.mirrors}: no bare git directory for {', '.join(missing)}; "
            "bring each repository there first",
            file=sys.stderr,
        )
        return 2
    with ThreadPoolExecutor(args.jobs) as pool:
        found = list(
            pool.map(
                lambda r: scan(
                    r["name"],
                    args.mirrors / _dir(r["name"]),
                    args.work / r["name"].replace("/", "+"),
                    r.get("limit", config.get("limit", 10**9)),
                    r.get("merges", config.get("merges", 10**9)),
                ),
                repos,
            )
        )
    scanned = {r["name"]: cases for r, cases in zip(repos, found, strict=True)}
    rows = [c.row() for cases in found for c in cases]
    if args.only:
        rows = _merged_rows(args.out, scanned, [r["name"] for r in config["repository"]])
    lines = ["\t".join(COLUMNS), *rows]
    args.out.write_text("\n".join(lines) + "\n")
    print(f"{len(rows)} cases written to {args.out}", file=sys.stderr)
    return 0


def _merged_rows(manifest: Path, scanned: dict[str, list[Case]], order: list[str]) -> list[str]:
    """The manifest's rows with those of the repositories just scanned replaced.

    Rows keep the order of repos.toml, so a rescan of some repositories leaves the
    rest of the file (and its diff) untouched.
    """
    kept: dict[str, list[str]] = {}
    if manifest.exists():
        for line in manifest.read_text().splitlines()[1:]:
            if line:
                kept.setdefault(line.split("\t", 1)[0], []).append(line)
    for repo, cases in scanned.items():
        kept[repo] = [c.row() for c in cases]
    return [row for repo in order for row in kept.get(repo, [])]


def _dir(name: str) -> str:
    return f"{name.replace('/', '+')}/repo"


if __name__ == "__main__":
    raise SystemExit(main())
