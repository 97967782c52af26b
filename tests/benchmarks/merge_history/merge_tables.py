"""The tables bench_merge_history.py prints: per part of the corpus, then both parts.

`Tables` collects counters by part ("tuned on", "held out") and language, and each
tool's best time per file; `print_tables` prints each part, then the two together.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

from judging import LANGUAGE_ORDER

PARTS = ("tuned on", "held out")


def _counters() -> defaultdict[str, defaultdict[str, int]]:
    return defaultdict(lambda: defaultdict(int))


@dataclass
class Tables:
    """part -> language -> counter, and part -> tool -> best time of each file."""

    counts: dict[str, defaultdict[str, defaultdict[str, int]]] = field(
        default_factory=lambda: defaultdict(_counters)
    )
    times: dict[str, defaultdict[str, list[float]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )


def print_tables(tables: Tables, repositories: dict[str, int]) -> None:
    """Each part's table (`repositories`: how many each part has), then both parts'."""
    for part in PARTS:
        if part in tables.counts:
            print(f"\n{part} ({repositories[part]} repositories):\n")
            report(tables.counts[part], tables.times[part])
    if len(tables.counts) > 1:
        print("\nboth parts:\n")
        both = _counters()
        every: dict[str, list[float]] = defaultdict(list)
        for part, table in tables.counts.items():
            for group, row in table.items():
                for key, value in row.items():
                    both[group][key] += value
            for tool, seconds in tables.times[part].items():
                every[tool] += seconds
        report(both, every)


def report(table: Mapping[str, Mapping[str, int]], times: Mapping[str, list[float]]) -> None:
    """One part's table by language, then its times: the tools' medians and the floors."""
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
