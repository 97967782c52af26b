"""List the corpus versions a grammar does not parse, with the line it stops at.

Run from the project root, with the mirrors of repos.toml under --mirrors:

    python tests/benchmarks/merge_history/unparsed.py [--mirrors /work/.mirror]

For each case of manifest.tsv, the first of base, ours and theirs whose tree has an
error (or breaks a rule the grammar is lenient about) is printed with the line of
its first ERROR or MISSING node. unparsed.md explains every one of them.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[2]))

from build_corpus import Blobs  # noqa: E402
from tree_sitter import Node  # noqa: E402

from workers.entity_merge import language_for_path  # noqa: E402


def _first_error(node: Node) -> Node:
    if node.type == "ERROR" or node.is_missing:
        return node
    for child in node.children:
        if child.has_error:
            return _first_error(child)
    return node


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    args = parser.parse_args()
    blobs: dict[str, Blobs] = {}
    found = 0
    with (HERE / "manifest.tsv").open() as manifest:
        for row in csv.DictReader(manifest, delimiter="\t"):
            spec = language_for_path(row["path"])
            if spec is None:
                continue
            if row["repo"] not in blobs:
                blobs[row["repo"]] = Blobs(args.mirrors / row["repo"].replace("/", "+") / "repo")
            for side in ("base", "ours", "theirs"):
                data = blobs[row["repo"]].read(row[side])
                root = spec.parser().parse(data).root_node
                if not spec.broken(root):
                    continue
                found += 1
                where = "a rule the grammar is lenient about (an empty body)"
                if root.has_error:
                    error = _first_error(root)
                    line = data.split(b"\n")[error.start_point[0]]
                    text = line.decode("utf-8", "replace").strip()[:110]
                    kind = f"{error.type}{' missing' if error.is_missing else ''}"
                    where = f"line {error.start_point[0] + 1} {kind}: {text}"
                print(f"{row['repo']}@{row['merge'][:10]}:{row['path']} [{side}] {where}")
                break
    print(f"{found} cases with a version the grammar does not parse")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
