"""What GitHub code scanning accepts, checked before a SARIF file is written.

The figures are GitHub's documented upload limits (docs/sarif.md cites the pages they come
from). An export over a hard limit is refused with one line naming the limit, the value and
what to do, rather than written and then rejected by the service; an export over a soft
limit (what GitHub stores but does not show) is written with a note.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Limits:
    """An upload service's limits on one SARIF file."""

    service: str
    gzip_bytes: int
    runs: int
    results_per_run: int
    rules_per_run: int
    locations_per_result: int
    tags_per_rule: int
    shown_results: int
    """Soft: results beyond this are stored but not displayed."""


GITHUB = Limits(
    service="GitHub code scanning",
    gzip_bytes=10 * 1000 * 1000,  # "10 MB", gzip-compressed; the decimal reading is the safe one
    runs=20,
    results_per_run=25_000,
    rules_per_run=25_000,
    locations_per_result=10,  # the result table's "up to a maximum of 10"
    tags_per_rule=20,
    shown_results=5_000,
)


@dataclass
class Verdict:
    problems: list[str]
    """Hard limits exceeded: the service would reject the file."""
    notes: list[str]
    """Soft limits exceeded: the file is accepted, not all of it is shown."""


def gzip_size(data: bytes) -> int:
    return len(gzip.compress(data, mtime=0))


def check(document: dict[str, Any], data: bytes, limits: Limits = GITHUB) -> Verdict:
    """Every way ``document`` (encoded as ``data``) breaks ``limits`` or the service's
    required fields, as one sentence each."""
    problems: list[str] = []
    notes: list[str] = []
    name = limits.service
    size = gzip_size(data)
    if size > limits.gzip_bytes:
        problems.append(
            f"the file is {size:,} bytes gzip-compressed, over {name}'s {limits.gzip_bytes:,}"
        )
    runs = document.get("runs", [])
    if len(runs) > limits.runs:
        problems.append(f"{len(runs)} runs, over {name}'s {limits.runs} per file")
    for run in runs:
        problems += _run_problems(run, limits)
        shown = len(run.get("results", []))
        if limits.results_per_run >= shown > limits.shown_results:
            notes.append(
                f"{shown:,} results: {name} shows only the {limits.shown_results:,} most severe"
            )
    return Verdict(problems, notes)


def _run_problems(run: dict[str, Any], limits: Limits) -> list[str]:
    name = limits.service
    problems: list[str] = []
    results = run.get("results", [])
    rules = run.get("tool", {}).get("driver", {}).get("rules", [])
    if len(results) > limits.results_per_run:
        problems.append(
            f"{len(results):,} results, over {name}'s {limits.results_per_run:,} per run"
        )
    if len(rules) > limits.rules_per_run:
        problems.append(f"{len(rules):,} rules, over {name}'s {limits.rules_per_run:,} per run")
    if any(len(r.get("properties", {}).get("tags", [])) > limits.tags_per_rule for r in rules):
        problems.append(f"a rule has more than {limits.tags_per_rule} tags")
    crowded = sum(1 for r in results if len(r.get("locations", [])) > limits.locations_per_result)
    if crowded:
        problems.append(f"{crowded} results have more than {limits.locations_per_result} locations")
    fileless = sum(1 for r in results if not _has_file(r))
    if fileless:
        problems.append(
            f"{fileless} results have no file location, and {name} rejects a file with any "
            "such result"
        )
    unprinted = sum(1 for r in results if not r.get("message", {}).get("text"))
    if unprinted:
        problems.append(f"{unprinted} results have an empty message")
    return problems


def _has_file(result: dict[str, Any]) -> bool:
    places = result.get("locations") or [{}]
    uri = places[0].get("physicalLocation", {}).get("artifactLocation", {}).get("uri")
    return bool(uri)
