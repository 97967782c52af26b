"""Fuzz the entity merge on lines of text inside strings that span lines.

Run from the project root (not part of the test suite: it reports, it does not assert):

    python tests/benchmarks/fuzz_string_merge.py [--seconds 10] [--show 2]

Inside a docstring, a template literal, a raw string or a text block, spacing and
indentation are content. For each of ten shapes of such a string (its lines alone, its
last line closing a call, a `${…}` alone on a line, …) the script writes random lines,
lets each side re-indent, re-space or change a word of some of them, and merges. Where
the merge is clean, each line must read as the one side that changed it wrote it (or
as both wrote it alike); a line both sides changed differently may be one side's line
only where that side's spacing already holds the other's (both only re-spaced it).
Any other line combines or drops rewrites of one line of text, and is printed. The
figure is the count of such merges (0 expected) against the count of clean merges.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from workers.entity_merge import merge_file
from workers.entity_merge.line_merge import Clash, merge3
from workers.entity_merge.words import _tokens

WORDS = [b"alpha", b"beta", b"gamma"]
# name: (path, text before the lines, text after them, what the last line carries)
SHAPES: dict[str, tuple[str, bytes, bytes, bytes]] = {
    "js template": ("a.js", b"const s = `\nhead\n", b"`;\n", b""),
    "js template, last line": ("a.js", b"const s = `\nhead\n", b";\n", b"`"),
    "js template, substitutions": ("a.js", b"const s = `\nhead ${x}\n", b"`;\n", b""),
    "ts template": ("a.ts", b"export const s: string = `\nhead\n", b"`;\n", b""),
    "python docstring": ("a.py", b'def f():\n    """Doc.\n\n', b'    """\n', b""),
    "python string, last line": ("a.py", b'def f():\n    return g("""Doc.\n', b")\n", b'"""'),
    "go raw string": ("a.go", b"package p\n\nvar s = `\nhead\n", b"`\n", b""),
    "go raw string, last line": ("a.go", b"package p\n\nvar s = f(`\nhead\n", b")\n", b"`"),
    "rust raw string": ("a.rs", b'fn f() -> &str {\n    r"\nhead\n', b'"\n}\n', b""),
    "java text block": ("A.java", b'class F {\n    String s = """\n', b'        """;\n}\n', b""),
}


def _line(rng: random.Random, substitutions: bool) -> bytes:
    if substitutions and rng.random() < 0.4:
        return b" " * rng.choice([2, 4]) + b"${" + rng.choice(WORDS) + b"}"
    gaps = [rng.choice([b" ", b"  "]) for _ in range(2)]
    words = [rng.choice(WORDS) for _ in range(3)]
    return b" " * rng.choice([2, 4]) + words[0] + gaps[0] + words[1] + gaps[1] + words[2]


def _edit(rng: random.Random, line: bytes) -> bytes:
    body = line.lstrip(b" ")
    indent = line[: len(line) - len(body)]
    choice = rng.randrange(3)
    if choice == 0:
        return b" " * rng.choice([0, 2, 4, 6]) + body
    if choice == 1:
        return indent + re.sub(rb" +", lambda _: rng.choice([b" ", b"  "]), body)
    words = re.findall(rb"\w+", body)
    if not words:
        return line
    return indent + body.replace(rng.choice(words), rng.choice(WORDS), 1)


def _spacing_merged(base: bytes, ours: bytes, theirs: bytes) -> bytes | None:
    """The three-way merge of one line's words and gaps, or None where they clash."""
    out: list[bytes] = []
    for chunk in merge3(_tokens([base]), _tokens([ours]), _tokens([theirs])):
        if isinstance(chunk, Clash):
            return None
        out.extend(chunk.lines)
    return b"".join(out)


def _text(shape: tuple[str, bytes, bytes, bytes], lines: list[bytes]) -> bytes:
    _, before, after, last = shape
    return before + b"\n".join(lines) + last + b"\n" + after


def _combined(
    base: list[bytes],
    ours: list[bytes],
    theirs: list[bytes],
    merged: bytes,
    shape: tuple[str, bytes, bytes, bytes],
) -> bytes | None:
    """The first merged line that is not the line the sides' changes call for, or None."""
    _, before, after, last = shape
    body = merged[len(before) : len(merged) - len(after)].rstrip(b"\n")
    lines = body[: len(body) - len(last)].split(b"\n") if last else body.split(b"\n")
    if len(lines) != len(base):
        return None  # lines added or dropped: not a shape this fuzzer judges
    for b, o, t, m in zip(base, ours, theirs, lines, strict=True):
        wanted = t if o == b else o if t in (b, o) else None
        if wanted is None and m in (o, t) and _spacing_merged(b, o, t) == m:
            continue  # both sides only re-spaced it, and one side's spacing holds both
        if m != wanted:
            return m
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="per shape")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--show", type=int, default=2, help="print this many bad merges")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    shown = 0
    total_clean = total_bad = 0
    for name, shape in SHAPES.items():
        tried = clean = bad = 0
        stop = time.monotonic() + args.seconds
        while time.monotonic() < stop:
            base = [_line(rng, "substitutions" in name) for _ in range(rng.randint(2, 4))]
            ours = [_edit(rng, line) if rng.random() < 0.5 else line for line in base]
            theirs = [_edit(rng, line) if rng.random() < 0.5 else line for line in base]
            if base in (ours, theirs) or ours == theirs:
                continue
            tried += 1
            texts = [_text(shape, lines) for lines in (base, ours, theirs)]
            result = merge_file(*texts, shape[0])
            if not result.clean:
                continue
            clean += 1
            line = _combined(base, ours, theirs, result.content, shape)
            if line is not None:
                bad += 1
                if shown < args.show:
                    shown += 1
                    print(f"--- {name}: {line!r} is neither side's line")
                    for label, text in zip(("base", "ours", "theirs"), texts, strict=True):
                        print(f"{label}:\n{text.decode()}")
        total_clean += clean
        total_bad += bad
        print(f"{name}: {tried} merges tried, {clean} clean, {bad} with a combined line")
    print(f"all shapes: {total_bad} combined lines in {total_clean} clean merges")


if __name__ == "__main__":
    main()
