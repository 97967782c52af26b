"""Fuzz the entity merge on random Python functions: a clean merge must compile.

Run from the project root (not part of the test suite: it reports, it does not assert):

    python tests/benchmarks/fuzz_word_merge.py [--seeds 20000] [--show 3]

Each seed writes a small function (loops, conditions, assignments, calls), then two
sides that each make one or two edits to it: re-indent a line (into or out of a
block), insert a statement, rename a variable, add a near-copy of a line. Where both
sides and the base compile and the driver's merge is clean, the merge must compile
too; every clean merge that does not is printed with its inputs. The figure is the
count of such merges (0 expected) against the count of clean merges tried.
"""

from __future__ import annotations

import argparse
import random
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from workers.entity_merge import merge_file

STATEMENTS = ["self.a = x", "self.b = y", "self.save()", "self.log(x)", "x = f(x)", "y = g(x, y)"]
HEADERS = ["for item in items:", "if x:", "while y:"]


def _function(rng: random.Random) -> list[str]:
    lines = ["def f(self, x, y, items):", "    count = 0"]
    depth = 1
    for _ in range(rng.randrange(3, 8)):
        if rng.random() < 0.2 and depth < 3:
            lines.append("    " * depth + rng.choice(HEADERS))
            depth += 1
            lines.append("    " * depth + rng.choice(STATEMENTS))
        else:
            if depth > 1 and rng.random() < 0.3:
                depth -= 1
            lines.append("    " * depth + rng.choice(STATEMENTS))
    lines.append("    return count")
    return lines


def _side(rng: random.Random, lines: list[str]) -> list[str]:
    lines = list(lines)
    for _ in range(rng.randrange(1, 3)):
        at = rng.randrange(2, len(lines) - 1)
        indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
        edit = rng.randrange(4)
        if edit == 0:
            deeper = len(indent) <= 4 or rng.random() < 0.5
            lines[at] = (indent + "    " if deeper else indent[4:]) + lines[at].strip()
        elif edit == 1:
            lines.insert(at, indent + rng.choice(STATEMENTS))
        elif edit == 2:
            lines[at] = lines[at].replace("x", "z", 1)
        else:
            copy = lines[at].strip().replace("a", "c").replace("save", "flush")
            lines.insert(at, indent + copy.replace("log", "warn"))
    return lines


def _compiles(text: str) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            compile(text, "<fuzz>", "exec", dont_inherit=True)
        except SyntaxError:
            return False
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20000)
    parser.add_argument("--show", type=int, default=3, help="print this many failures")
    args = parser.parse_args()
    clean = broken = 0
    for seed in range(args.seeds):
        rng = random.Random(seed)
        base = _function(rng)
        ours, theirs = _side(rng, base), _side(rng, base)
        texts = ["\n".join(lines) + "\n" for lines in (base, ours, theirs)]
        if not all(_compiles(text) for text in texts):
            continue
        result = merge_file(*(text.encode() for text in texts), "fuzz.py")
        if not result.clean:
            continue
        clean += 1
        if not _compiles(result.content.decode()):
            broken += 1
            if broken <= args.show:
                print(f"seed {seed}:")
                for name, text in zip(("base", "ours", "theirs"), texts, strict=True):
                    print(f"--- {name}\n{text}", end="")
                print(f"--- merged\n{result.content.decode()}")
    print(f"clean merges that do not compile: {broken} of {clean} clean ({args.seeds} seeds)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
