"""What one merge result on a corpus case is: conflict, identical, equivalent, different, wrong.

The pieces of bench_merge_history.py that judge a result, apart from the loop that
times the tools: a manifest row (`Case`) and its blobs, the facts of its three versions
that the wrong-merge checks need (`Facts`, using checks.py, written apart from the
driver), the comparison with the committed file (`outcome`), and the verdicts people
recorded after reading a different result (verdicts.toml).
"""

from __future__ import annotations

import difflib
import hashlib
import subprocess
import tomllib
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from build_corpus import Blobs as CorpusBlobs
from build_corpus import Case as CorpusCase
from checks import bindings, canonical, definitions

from workers.entity_merge import language_for_path

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


class Case(CorpusCase):
    """One manifest row (the corpus builder's row, with a name to print)."""

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


def _mixed(data: bytes) -> bool:
    """Whether `data` has lines ending in CRLF and lines ending in a bare LF."""
    crlf = data.count(b"\r\n")
    return 0 < crlf < data.count(b"\n")


def _unqualified(name: str) -> str:
    """A Java method's key without its class: ``needZc(Config, int)``."""
    head, _, parameters = name.partition("(")
    return f"{head.rsplit('.', 1)[-1]}({parameters}"


def _in_file(defined: dict[str, str], name: str) -> int:
    """How many methods of `name`'s erased signature, in any class, `defined` holds."""
    wanted = _unqualified(name)
    return sum(
        text.count("\0")
        for key, text in defined.items()
        if "(" in key and _unqualified(key) == wanted
    )


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
        # A merge may mix CRLF and LF lines only where a side already did.
        self.mixes = any(_mixed(data[name]) for name in ("base", "ours", "theirs"))
        self.counts: dict[str, Counter[str]] = {}
        self.defined: dict[str, dict[str, str]] = {}
        for name in ("base", "ours", "theirs"):
            # Line endings are not what these checks judge: a side that only turned CRLF
            # into LF has not changed a definition another side deleted.
            root = spec.parser().parse(data[name].replace(b"\r\n", b"\n")).root_node
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
        if _mixed(merged) and not self.mixes:
            return "mixed line endings: CRLF and LF lines, where no side mixed them"
        root = self.spec.parser().parse(merged).root_node
        if self.spec.broken(root):
            return "parse failure"
        ours, theirs = self.counts["ours"], self.counts["theirs"]
        for name, count in bindings(self.spec.name, root).items():
            if count > max(ours[name], theirs[name]):
                return f"duplicate: {name} x{count}"
        if self.spec.name == "java":
            # A Java method declared more often (by erasure) than on either side, in its
            # class and in the file: a method one side added to a class the other side
            # renamed is keyed under the new class name in the merge and under the old
            # one on its side, which is not a second declaration.
            sides = (self.defined["ours"], self.defined["theirs"])
            merged = definitions("java", root)
            for name, text in merged.items():
                count = text.count("\0")
                if "(" not in name or count <= max(
                    side.get(name, "").count("\0") for side in sides
                ):
                    continue
                if _in_file(merged, name) > max(_in_file(side, name) for side in sides):
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


def read_verdicts(path: Path) -> dict[str, tuple[str, str]]:
    """Case -> (verdict, sha1 of the merged file that was read)."""
    if not path.exists():
        return {}
    cases = tomllib.loads(path.read_text()).get("case", [])
    return {c["case"]: (c["verdict"], c["merged"]) for c in cases}


def dump_case(directory: Path, case: Case, data: dict[str, bytes], merged: bytes, n: int) -> None:
    """Write case `n` for reading: `case.txt` (its name and the merged file's SHA-1), the
    three inputs, the committed file, the merge, and the diff between those two."""
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
