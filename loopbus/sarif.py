"""Findings as a SARIF 2.1.0 log: one run of the tool ``loopbus``, one result per finding key.

Pure: :func:`document` turns ledger entries into the SARIF document; nothing here reads the
log or writes a file. docs/sarif.md says how each field is chosen and what was checked
against GitHub code scanning, the service most SARIF files are uploaded to.

* A code finding's location is the file (a URI relative to the repository root, as loopbus
  targets already are) and its lines. A path that leaves the repository (absolute, or with
  ``..``) is exported as a logical location instead, and impossible lines are clamped or
  left out: an agent can publish such a finding directly.
* Any other target (plan, record, check, budget, profile, decision) is a *logical* location
  naming it. GitHub code scanning rejects a whole file if one result lacks a file location,
  so for GitHub (``anchor`` set, the default) such a result also carries a file location on
  the anchor file (``loopbus.toml``, line 1), keeping the logical one beside it.
* The fingerprint is a hash of the finding key (target|severity|criterion), never of an
  event id, so exporting again (after a restart, a replay, new raises of the same key) gives
  the same fingerprint and a service that de-duplicates on it shows one alert.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from loopbus.findings_ledger import Entry, suppression
from projections.findings import OpenFinding
from schemas import InvalidValue, parse_target
from schemas.targets import MAX_LINE, CodeTarget, inside_repository

SARIF_VERSION = "2.1.0"
SCHEMA_URI = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
FINGERPRINT = "loopbusFindingKey/v1"
"""The full key hash, for any consumer that reads partialFingerprints."""
LINE_HASH = "primaryLocationLineHash"
"""The only fingerprint GitHub code scanning reads; loopbus fills it from the key too."""
LEVELS = {"critical": "error", "high": "error", "medium": "warning", "low": "note", "info": "note"}
TEXT_CHARS = 1024
"""GitHub shows at most this many characters of a rule's descriptions."""
NAME_CHARS = 255
"""... and of a rule's name."""
MAX_TAGS = 10
"""GitHub keeps 10 tags of a rule (and rejects more than 20)."""


@dataclass(frozen=True)
class Export:
    """What one export is of, and for whom."""

    project: str
    version: str
    anchor: str | None = "loopbus.toml"
    """File (relative to the repository root) a finding without one is anchored on; None for
    logical locations only (valid SARIF that GitHub code scanning refuses)."""


def rule_id(finding: OpenFinding) -> str:
    """``producer/criterion``; a finding with no criterion is named by its check or class."""
    criterion = finding.criterion
    if not criterion and finding.target.startswith("check:"):
        criterion = finding.target.removeprefix("check:")
    return f"{finding.producer}/{criterion or finding.cls}"


def fingerprint(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def document(entries: list[Entry], export: Export) -> dict[str, Any]:
    """The SARIF log of ``entries``, in their order (worst severity first)."""
    rules: dict[str, list[Entry]] = {}
    for entry in entries:
        rules.setdefault(rule_id(entry.finding), []).append(entry)
    index = {rid: i for i, rid in enumerate(rules)}
    run = {
        "tool": {
            "driver": {
                "name": "loopbus",
                "version": export.version,
                "rules": [_rule(rid, found) for rid, found in rules.items()],
            }
        },
        # GitHub keeps one analysis per tool and category: one category per project, so
        # two projects exported from one repository do not replace each other's alerts.
        "automationDetails": {"id": f"loopbus/{export.project}/"},
        "results": [_result(e, index[rule_id(e.finding)], export) for e in entries],
        "properties": {"project": export.project},
    }
    return {"$schema": SCHEMA_URI, "version": SARIF_VERSION, "runs": [run]}


def _rule(rid: str, entries: list[Entry]) -> dict[str, Any]:
    producer, _, criterion = rid.partition("/")
    worst = LEVELS[entries[0].finding.severity]  # entries come worst first
    classes = sorted({e.finding.cls for e in entries})
    return {
        "id": rid,
        "name": rid[:NAME_CHARS],
        "shortDescription": {"text": f"{producer}: {criterion}"[:TEXT_CHARS]},
        "fullDescription": {
            "text": (
                f"Findings the loopbus producer '{producer}' raised against '{criterion}' "
                f"(class {', '.join(classes)})."
            )[:TEXT_CHARS]
        },
        "help": {
            "text": (
                f"Raised by {producer} on the loopbus log; `loopbus tail --kind finding "
                f"--producer {producer}` shows each raise with its evidence."
            )[:TEXT_CHARS]
        },
        "defaultConfiguration": {"level": worst},
        "properties": {"tags": ["loopbus", producer, *classes][:MAX_TAGS]},
    }


def _result(entry: Entry, rule_index: int, export: Export) -> dict[str, Any]:
    finding = entry.finding
    digest = fingerprint(entry.key)
    result: dict[str, Any] = {
        "ruleId": rule_id(finding),
        "ruleIndex": rule_index,
        "level": LEVELS[finding.severity],
        "message": {"text": finding.message or f"{rule_id(finding)} on {finding.target}"},
        "locations": [location(finding.target, export.anchor)],
        "partialFingerprints": {FINGERPRINT: digest, LINE_HASH: f"{digest[:16]}:1"},
        "properties": {
            "finding": finding.id,
            "target": finding.target,
            "severity": finding.severity,
            "class": finding.cls,
            "producer": finding.producer,
            "units": list(entry.units),
            "times": entry.times,
            "status": entry.status,
            "raisedAt": finding.raised_at.isoformat(),
            "lastRaisedAt": finding.last_raised_at.isoformat(),
        },
    }
    suppressed = suppression(entry)
    if suppressed is not None:
        result["suppressions"] = [suppressed]
    return result


def location(target: str, anchor: str | None) -> dict[str, Any]:
    """A code target's file and lines; any other target as a logical location (anchored on
    ``anchor`` line 1 when given).

    An agent can publish a finding straight to the log, so a code target is not trusted to
    be a file of the repository: one whose path is absolute or climbs out with ``..`` is
    exported as a logical location like a non-file target (a consumer would otherwise open
    ``../../etc/passwd`` as the repository's file), and lines past :data:`MAX_LINE` are
    clamped (an end) or left out (a start: the file without a region)."""
    try:
        parsed = parse_target(target)
    except InvalidValue:
        parsed = None
    if isinstance(parsed, CodeTarget):
        path = inside_repository(parsed.path)
        if path is not None:
            place: dict[str, Any] = {"artifactLocation": {"uri": _uri(path)}}
            if parsed.start <= MAX_LINE:
                place["region"] = {"startLine": parsed.start, "endLine": min(parsed.end, MAX_LINE)}
            return {"physicalLocation": place}
    kind, _, name = target.partition(":")
    logical: dict[str, Any] = {
        "logicalLocations": [{"name": name or target, "fullyQualifiedName": target, "kind": kind}]
    }
    if anchor is not None:
        logical["physicalLocation"] = {
            "artifactLocation": {"uri": _uri(anchor)},
            "region": {"startLine": 1},
        }
        what = "not inside the repository" if isinstance(parsed, CodeTarget) else "not a file"
        logical["message"] = {"text": f"{target} is {what}; anchored on {anchor}"}
    return logical


def _uri(path: str) -> str:
    """A repository-relative path as a URI reference (spaces and the like percent-encoded)."""
    return quote(path)
