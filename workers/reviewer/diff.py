"""A unit's diff as line sets, and the diff bound on code findings. Pure: no I/O.

The reviewer and the convergence rules need three things from the diff between a unit's
head and the trunk commit it branched from: which files changed, which lines of the head
version were added, and which head lines each hunk spans (its context included). This
module parses a unified diff (``git diff`` or dulwich's ``write_tree_diff`` output) into
exactly that, and decides whether a code finding falls inside it.

Subtraction modes (per project, default ``added``):

* ``added``   — the finding's line range must include a line the unit added or changed;
* ``context`` — it must overlap a hunk, its unchanged context lines included;
* ``file``    — it must be in a file the unit changed.

Non-code targets (plan, record, check, budget, profile, decision) have no lines and are
never subtracted.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Literal

from schemas.reviews import SubtractionMode
from schemas.targets import CodeTarget, Target

FileStatus = Literal["added", "modified", "deleted", "renamed"]

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass(frozen=True, slots=True)
class Hunk:
    """One hunk: where it sits in the old and new file, and the head lines it added."""

    old_start: int
    old_count: int
    new_start: int
    new_count: int
    added: tuple[int, ...] = ()

    @property
    def new_span(self) -> tuple[int, int] | None:
        """The head lines the hunk covers (context included), or ``None`` for a pure
        deletion at the start of a file."""
        if self.new_count == 0:
            return None
        return self.new_start, self.new_start + self.new_count - 1


@dataclass(frozen=True, slots=True)
class FileDiff:
    """One changed file. ``path`` is its path at head (the old path for a deletion)."""

    path: str
    old_path: str | None
    status: FileStatus
    hunks: tuple[Hunk, ...] = ()
    binary: bool = False
    added_text: tuple[tuple[int, str], ...] = ()
    """(head line number, text) of every added line: what secret scanning reads."""

    @property
    def added_lines(self) -> frozenset[int]:
        return frozenset(line for hunk in self.hunks for line in hunk.added)

    def covers(self, start: int, end: int, mode: SubtractionMode) -> bool:
        """True when head lines ``start..end`` are inside this file's diff under ``mode``."""
        if mode == "file":
            return True
        if mode == "context":
            for hunk in self.hunks:
                span = hunk.new_span
                if span is not None and span[0] <= end and start <= span[1]:
                    return True
            return False
        return any(start <= line <= end for line in self.added_lines)


@dataclass(frozen=True, slots=True)
class Diff:
    """A parsed unified diff; ``digest`` is the sha256 of its text (identical diff, same
    digest)."""

    files: tuple[FileDiff, ...]
    text: str
    digest: str = field(default="")

    def file(self, path: str) -> FileDiff | None:
        wanted = normalise_path(path)
        for changed in self.files:
            if changed.path == wanted:
                return changed
        return None

    @property
    def paths(self) -> tuple[str, ...]:
        """Every path the diff touches, at head and (for renames and deletions) before."""
        seen: list[str] = []
        for changed in self.files:
            for path in (changed.path, changed.old_path):
                if path and path not in seen:
                    seen.append(path)
        return tuple(seen)


def digest_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def normalise_path(path: str) -> str:
    """Repository-relative form: no leading ``./`` or ``/``, forward slashes."""
    path = path.replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path.lstrip("/")


def parse_unified_diff(text: str) -> Diff:
    """Parse ``git diff``-style text (with or without ``diff --git`` headers)."""
    parser = _Parser()
    for line in text.split("\n"):
        parser.feed(line)
    parser.flush()
    return Diff(files=tuple(parser.files), text=text, digest=digest_text(text))


def subtraction_reason(target: Target, diff: Diff, mode: SubtractionMode) -> str | None:
    """Why a finding on ``target`` is outside the unit's diff, or ``None`` to keep it."""
    if not isinstance(target, CodeTarget):
        return None  # only code has lines to be outside of
    changed = diff.file(target.path)
    where = f"{normalise_path(target.path)}:{target.start}-{target.end}"
    if changed is None:
        return f"{where} is in a file the unit did not change"
    if changed.covers(target.start, target.end, mode):
        return None
    if mode == "added":
        return f"{where} contains no line the unit added or changed"
    return f"{where} overlaps no hunk of the unit's diff"


class _Parser:
    """A line-at-a-time state machine; hunks end by their line counts, never by guessing,
    so a removed line that happens to start with ``--`` is not taken for a header."""

    def __init__(self) -> None:
        self.files: list[FileDiff] = []
        self._old: str | None = None
        self._new: str | None = None
        self._status: FileStatus = "modified"
        self._binary = False
        self._hunks: list[Hunk] = []
        self._added_text: list[tuple[int, str]] = []
        self._open = False
        self._in_git_header = False
        # the hunk being read
        self._hunk: tuple[int, int, int, int] | None = None
        self._added: list[int] = []
        self._old_left = 0
        self._new_left = 0
        self._new_line = 0

    def feed(self, line: str) -> None:
        if self._hunk is not None and (self._old_left > 0 or self._new_left > 0):
            self._hunk_line(line)
            return
        self._end_hunk()
        if line.startswith("diff --git "):
            self.flush()
            old, new = _git_header_paths(line[len("diff --git ") :])
            self._begin(old, new)
            self._in_git_header = True
        elif line.startswith("new file mode"):
            self._status = "added"
        elif line.startswith("deleted file mode"):
            self._status = "deleted"
        elif line.startswith("rename from "):
            self._old = normalise_path(_unquote(line[len("rename from ") :]))
            self._status = "renamed"
        elif line.startswith("rename to "):
            self._new = normalise_path(_unquote(line[len("rename to ") :]))
            self._status = "renamed"
        elif line.startswith("Binary files ") or line.startswith("GIT binary patch"):
            self._binary = True
        elif line.startswith("--- "):
            path = _file_line_path(line[4:])
            if not self._in_git_header or not self._open:
                self.flush()
                self._begin(path, path)
            if path is None:
                self._status = "added"
            else:
                self._old = path
        elif line.startswith("+++ "):
            path = _file_line_path(line[4:])
            if path is None:
                self._status = "deleted"
            else:
                self._new = path
            self._in_git_header = False
        elif line.startswith("@@") and self._open:
            match = _HUNK.match(line)
            if match is None:
                return
            old_start, old_count, new_start, new_count = (
                int(match.group(1)),
                int(match.group(2) or "1"),
                int(match.group(3)),
                int(match.group(4) or "1"),
            )
            self._hunk = (old_start, old_count, new_start, new_count)
            self._added = []
            self._old_left, self._new_left = old_count, new_count
            self._new_line = new_start
            self._in_git_header = False

    def _hunk_line(self, line: str) -> None:
        tag = line[:1]
        if tag == "+":
            self._added.append(self._new_line)
            self._added_text.append((self._new_line, line[1:]))
            self._new_line += 1
            self._new_left -= 1
        elif tag == "-":
            self._old_left -= 1
        elif tag == "\\":
            return  # "\ No newline at end of file"
        else:  # context (a blank line is context whose leading space was stripped)
            self._new_line += 1
            self._new_left -= 1
            self._old_left -= 1
        if self._old_left <= 0 and self._new_left <= 0:
            self._end_hunk()

    def _end_hunk(self) -> None:
        if self._hunk is None:
            return
        old_start, old_count, new_start, new_count = self._hunk
        self._hunks.append(Hunk(old_start, old_count, new_start, new_count, tuple(self._added)))
        self._hunk = None
        self._added = []
        self._old_left = self._new_left = 0

    def _begin(self, old: str | None, new: str | None) -> None:
        self._old, self._new = old, new
        self._status = "modified"
        self._binary = False
        self._hunks = []
        self._added_text = []
        self._open = True

    def flush(self) -> None:
        self._end_hunk()
        if not self._open:
            return
        path = self._new if self._status != "deleted" else self._old
        path = path or self._old or self._new
        if path is not None:
            old_path = None if self._status == "added" else self._old
            self.files.append(
                FileDiff(
                    path=path,
                    old_path=old_path,
                    status=self._status,
                    hunks=tuple(self._hunks),
                    binary=self._binary,
                    added_text=tuple(self._added_text),
                )
            )
        self._open = False
        self._in_git_header = False


def _file_line_path(text: str) -> str | None:
    """The path of a ``---``/``+++`` line: ``None`` for /dev/null, prefix ``a/``/``b/`` off."""
    text = text.split("\t", 1)[0].rstrip("\r")
    text = _unquote(text)
    if text == "/dev/null":
        return None
    if text[:2] in ("a/", "b/"):
        text = text[2:]
    return normalise_path(text)


def _git_header_paths(rest: str) -> tuple[str | None, str | None]:
    rest = rest.rstrip("\r")
    if rest.startswith('"'):
        old, _, tail = _take_quoted(rest)
        new = _unquote(tail.strip())
    else:
        # "a/x b/x": the two halves are equal when nothing was renamed, which is the case
        # where a space inside the path makes splitting ambiguous.
        half = (len(rest) - 1) // 2
        if rest[half : half + 1] == " " and rest[:half][2:] == rest[half + 1 :][2:]:
            old, new = rest[:half], rest[half + 1 :]
        else:
            old, _, new = rest.partition(" b/")
            new = "b/" + new
    return _strip_prefix(old), _strip_prefix(new)


def _strip_prefix(path: str) -> str:
    path = _unquote(path)
    if path[:2] in ("a/", "b/"):
        path = path[2:]
    return normalise_path(path)


def _take_quoted(text: str) -> tuple[str, str, str]:
    """Split a leading C-quoted string off ``text``: (unquoted, '"', rest)."""
    i = 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == '"':
            return _unquote(text[: i + 1]), '"', text[i + 1 :]
        i += 1
    return _unquote(text), "", ""


def _unquote(text: str) -> str:
    """Undo git's C-style quoting of unusual path names (``"a/caf\\303\\251.py"``)."""
    if len(text) < 2 or not (text.startswith('"') and text.endswith('"')):
        return text
    body = text[1:-1]
    raw = bytearray()
    i = 0
    escapes = {"n": 10, "t": 9, '"': 34, "\\": 92, "a": 7, "b": 8, "f": 12, "r": 13, "v": 11}
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in "01234567" and i + 3 < len(body) + 1:
                raw.append(int(body[i + 1 : i + 4], 8))
                i += 4
                continue
            raw.append(escapes.get(nxt, ord(nxt)))
            i += 2
            continue
        raw.extend(ch.encode("utf-8"))
        i += 1
    return raw.decode("utf-8", "replace")
