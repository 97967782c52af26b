"""Benchmark: the key merge of JSON and YAML files against `git merge-file`, same files.

Run from the project root:

    python tests/benchmarks/bench_data_merge.py [--repeat 3]

For each format and size, a generated configuration file (a lock-file-like mapping of
entries, each a small record) gets two sides that each add an entry at the end and change
one entry's field: a false conflict for a line merge whenever the additions meet. Each file
is merged by the driver in process and by `git merge-file -p` (process start included, as
in bench_merge_driver.py); the best of `--repeat` runs of each is kept. Prints a Markdown
table for docs/performance.md: sizes, who merged cleanly, and the time ratio.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from workers.entity_merge import merge_file  # noqa: E402

SIZES = (10, 100, 1_000, 10_000)


def _document(entries: int) -> dict[str, Any]:
    return {
        "name": "shop",
        "version": 3,
        "packages": {
            f"pkg-{i}": {"version": f"1.{i}.0", "integrity": f"sha512-{i:064d}", "dev": i % 3 == 0}
            for i in range(entries)
        },
    }


def _sides(entries: int) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    base = _document(entries)
    ours, theirs = json.loads(json.dumps(base)), json.loads(json.dumps(base))
    ours["packages"]["pkg-0"]["version"] = "9.0.0"
    ours["packages"]["added-by-ours"] = {"version": "1.0.0"}
    theirs["packages"][f"pkg-{entries - 1}"]["dev"] = True
    theirs["packages"]["added-by-theirs"] = {"version": "2.0.0"}
    return base, ours, theirs


def _dump(fmt: str, doc: dict[str, Any]) -> bytes:
    if fmt == "json":
        return (json.dumps(doc, indent=2) + "\n").encode()
    return str(yaml.safe_dump(doc, sort_keys=False)).encode()


def _best(repeat: int, run: Any) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        out = run()
        best = min(best, time.perf_counter() - start)
    return best, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print("| format | entries | size | git merge-file | driver | clean: git / driver | ratio |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in ("json", "yaml"):
            for entries in SIZES:
                base, ours, theirs = (_dump(fmt, d) for d in _sides(entries))
                paths = [Path(tmp) / f"{name}.{fmt}" for name in ("ours", "base", "theirs")]
                for path, data in zip(paths, (ours, base, theirs), strict=True):
                    path.write_bytes(data)
                command = ["git", "merge-file", "-p", *map(str, paths)]
                git_s, git = _best(
                    args.repeat, lambda c=command: subprocess.run(c, capture_output=True)
                )
                trio = (base, ours, theirs, f"lock.{fmt}")
                ours_s, result = _best(args.repeat, lambda trio=trio: merge_file(*trio))
                expected = _sides(entries)[0]
                expected["packages"].update(_sides(entries)[1]["packages"])
                expected["packages"][f"pkg-{entries - 1}"]["dev"] = True
                expected["packages"]["added-by-theirs"] = {"version": "2.0.0"}
                load = json.loads if fmt == "json" else yaml.safe_load
                right = result.clean and load(result.content) == expected
                print(
                    f"| {fmt.upper()} | {entries:,} | {len(base) / 1024:,.0f} KiB "
                    f"| {git_s * 1000:.1f} ms | {ours_s * 1000:.1f} ms "
                    f"| {'yes' if git.returncode == 0 else 'no'} / "
                    f"{'yes' if right else ('WRONG' if result.clean else 'no')} "
                    f"| {ours_s / git_s:.1f}x |"
                )


if __name__ == "__main__":
    main()
