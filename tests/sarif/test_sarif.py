"""The SARIF document, built from ledgers folded from event lists: schema-valid, stable
fingerprints, locations per target type, suppressions, and GitHub's upload limits."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from loopbus import findings_ledger, sarif
from loopbus.commands.findings import _within_github
from loopbus.errors import LoopbusError
from loopbus.findings_ledger import Entry
from loopbus.sarif_limits import GITHUB, Limits, check, gzip_size
from schemas import Actor, Event, FindingRaised, FindingResolved, parse_target

T0 = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
REVIEWER = Actor(role="reviewer", principal="r1")
SYSTEM = Actor(role="system", principal="units")
EVERY_TARGET = [
    "code:src/app.py:10-14",
    "plan:S1:U2",
    "record:01ABC",
    "check:lint",
    "budget:tokens_per_unit",
    "profile:cli",
    "decision:D7",
]


def raised(target: str, severity: str = "high", criterion: str = "C1", **kw: Any) -> FindingRaised:
    fields: dict[str, Any] = {
        "project": "p",
        "actor": REVIEWER,
        "producer": "reviewer",
        "target": parse_target(target),
        "severity": severity,
        "criterion": criterion,
        "message": f"problem at {target}",
        "at": T0,
    }
    return FindingRaised(**(fields | kw))


def resolved(finding: FindingRaised, why: str = "fixed in abc123") -> FindingResolved:
    return FindingResolved(
        project="p", actor=SYSTEM, finding=finding.id, why=why, at=T0 + timedelta(minutes=5)
    )


def fold(events: list[Event]) -> findings_ledger.FindingsLedger:
    ledger = findings_ledger.initial()
    for event in events:
        findings_ledger.apply(ledger, event)
    return ledger


def export(
    events: list[Event], *, closed: bool = False, anchor: str | None = "loopbus.toml"
) -> dict[str, Any]:
    entries = findings_ledger.entries(fold(events), closed=closed)
    return sarif.document(entries, sarif.Export("p", "0.1.0", anchor))


def results(document: dict[str, Any]) -> list[dict[str, Any]]:
    return list(document["runs"][0]["results"])


def test_every_target_type_validates_against_the_sarif_schema(sarif_schema: Any) -> None:
    """Findings on every target type, open and resolved, make a schema-valid SARIF 2.1.0 log."""
    events: list[Event] = [raised(t, criterion=f"C{i}") for i, t in enumerate(EVERY_TARGET)]
    events.append(resolved(events[1]))  # type: ignore[arg-type]
    for anchor in ("loopbus.toml", None):
        document = export(events, closed=True, anchor=anchor)
        errors = sorted(sarif_schema.iter_errors(document), key=lambda e: list(e.path))
        assert errors == [], [f"{list(e.path)}: {e.message}" for e in errors]
        assert len(results(document)) == len(EVERY_TARGET)


def test_the_schema_check_can_fail(sarif_schema: Any) -> None:
    """The validator is not vacuous: a wrong level or a missing message is reported."""
    document = export([raised("code:a.py:1")])
    results(document)[0]["level"] = "severe"
    del results(document)[0]["message"]
    messages = sorted(e.message for e in sarif_schema.iter_errors(document))
    assert any("'severe' is not one of" in m for m in messages), messages
    assert any("'message' is a required property" in m for m in messages), messages


def test_a_code_finding_is_a_file_and_its_lines() -> None:
    """A code target becomes physicalLocation: repository-relative URI and the line range."""
    [result] = results(export([raised("code:src/my app.py:10-14")]))
    [place] = result["locations"]
    assert place == {
        "physicalLocation": {
            "artifactLocation": {"uri": "src/my%20app.py"},
            "region": {"startLine": 10, "endLine": 14},
        }
    }


@pytest.mark.parametrize(
    "target", ["code:../../etc/passwd:1-2", "code:/etc/passwd:1-1", "code:src/../../x.py:3-3"]
)
def test_a_code_path_outside_the_repository_is_not_a_file(target: str, sarif_schema: Any) -> None:
    """An agent can publish a code target that leaves the repository; the export never
    names that path as the repository's file: it is a logical location, anchored."""
    document = export([raised(target)])
    [place] = results(document)[0]["locations"]
    assert place["physicalLocation"]["artifactLocation"] == {"uri": "loopbus.toml"}
    assert place["logicalLocations"][0]["fullyQualifiedName"] == target
    assert "not inside the repository" in place["message"]["text"]
    assert "passwd" not in json.dumps(place["physicalLocation"])
    assert list(sarif_schema.iter_errors(document)) == []
    [plain] = results(export([raised(target)], anchor=None))
    assert "physicalLocation" not in plain["locations"][0]


def test_impossible_lines_are_clamped_or_left_out(sarif_schema: Any) -> None:
    """Lines past what a file can have (32-bit consumers) never reach the SARIF file: an end
    is clamped, a start past it leaves the file without a region."""
    huge = 99999999999999999999
    document = export(
        [raised(f"code:a.py:{huge}-{huge}"), raised(f"code:b.py:3-{huge}", criterion="C2")]
    )
    places = {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]: r["locations"][0]
        for r in results(document)
    }
    assert places["a.py"] == {"physicalLocation": {"artifactLocation": {"uri": "a.py"}}}
    assert places["b.py"]["physicalLocation"]["region"] == {
        "startLine": 3,
        "endLine": 2**31 - 1,
    }
    assert str(huge) not in json.dumps(places)
    assert list(sarif_schema.iter_errors(document)) == []


@pytest.mark.parametrize("target", EVERY_TARGET[1:])
def test_a_finding_without_a_file_is_a_logical_location(target: str) -> None:
    """Plan, record, check, budget, profile and decision targets are logical locations; for
    GitHub they are also anchored on loopbus.toml line 1, for plain SARIF they are not."""
    kind, _, name = target.partition(":")
    [anchored] = results(export([raised(target)]))
    [place] = anchored["locations"]
    assert place["logicalLocations"] == [{"name": name, "fullyQualifiedName": target, "kind": kind}]
    assert place["physicalLocation"] == {
        "artifactLocation": {"uri": "loopbus.toml"},
        "region": {"startLine": 1},
    }
    [plain] = results(export([raised(target)], anchor=None))
    assert "physicalLocation" not in plain["locations"][0]


def test_rule_and_level_come_from_producer_criterion_and_severity() -> None:
    """ruleId is producer/criterion (the check when no criterion); level follows severity."""
    document = export(
        [
            raised("code:a.py:1", "critical", "C1"),
            raised("code:a.py:2", "medium", "C1"),
            raised("check:lint", "low", "", producer="builder"),
            raised("code:a.py:3", "info", "", cls="meta"),
        ]
    )
    found = {(r["ruleId"], r["level"]) for r in results(document)}
    assert found == {
        ("reviewer/C1", "error"),
        ("reviewer/C1", "warning"),
        ("builder/lint", "note"),
        ("reviewer/meta", "note"),
    }
    rules = document["runs"][0]["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == ["reviewer/C1", "builder/lint", "reviewer/meta"]
    for result in results(document):
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
    assert rules[0]["defaultConfiguration"] == {"level": "error"}, "a rule's worst result"


def test_fingerprints_follow_the_key_not_the_event() -> None:
    """The same key raised by other events, later, or after a resolution has the same
    fingerprints; a different severity or criterion does not."""
    first = results(export([raised("code:a.py:3-4")]))[0]["partialFingerprints"]
    again = raised("code:a.py:3-4", at=T0 + timedelta(days=3))
    assert again.id != raised("code:a.py:3-4").id
    assert results(export([again]))[0]["partialFingerprints"] == first
    gone_and_back = [raised("code:a.py:3-4"), raised("code:a.py:3-4")]
    gone_and_back.insert(1, resolved(gone_and_back[0]))  # type: ignore[arg-type]
    assert results(export(gone_and_back))[0]["partialFingerprints"] == first
    assert first[sarif.FINGERPRINT] == sarif.fingerprint("code:a.py:3-4|high|C1")
    assert first[sarif.LINE_HASH] == first[sarif.FINGERPRINT][:16] + ":1"
    other = results(export([raised("code:a.py:3-4", "low")]))[0]["partialFingerprints"]
    assert other != first


def test_one_result_per_key_names_every_unit() -> None:
    """The same key open in two units is one result (one fingerprint) naming both units."""
    events: list[Event] = [
        raised("code:a.py:1", unit="U2", at=T0 + timedelta(seconds=1)),
        raised("code:a.py:1", unit="U1"),
    ]
    [result] = results(export(events))
    assert result["properties"]["units"] == ["U1", "U2"]
    assert result["properties"]["times"] == 2
    assert result["properties"]["finding"] == events[1].id, "the first raise names it"


def test_open_only_by_default_and_closed_as_suppressions_with_all() -> None:
    """--open leaves resolved findings out; --all writes them with an accepted external
    suppression saying who resolved them and why; open ones carry none."""
    fixed, still = raised("code:a.py:1"), raised("code:b.py:2")
    events: list[Event] = [fixed, still, resolved(fixed, "fixed in abc123")]
    assert [r["properties"]["finding"] for r in results(export(events))] == [still.id]
    by_id = {r["properties"]["finding"]: r for r in results(export(events, closed=True))}
    assert "suppressions" not in by_id[still.id]
    assert by_id[fixed.id]["suppressions"] == [
        {
            "kind": "external",
            "status": "accepted",
            "justification": "resolved by units: fixed in abc123",
        }
    ]
    assert by_id[fixed.id]["properties"]["status"] == "resolved"


def test_suppression_is_one_function_of_the_entry() -> None:
    """suppression() is None for an open finding and names how any closed one was closed,
    a dismissal (issue 14's fact, folded the same way) included."""
    [entry] = findings_ledger.entries(fold([raised("plan:S1")]))
    assert findings_ledger.suppression(entry) is None
    dismissed = Entry(
        key=entry.key,
        finding=entry.finding,
        units=(),
        status="dismissed",
        times=1,
        why="a false positive: the None is checked upstream",
        closed_by="alice",
    )
    assert findings_ledger.suppression(dismissed) == {
        "kind": "external",
        "status": "accepted",
        "justification": "dismissed by alice: a false positive: the None is checked upstream",
    }


def test_same_log_same_bytes() -> None:
    """Exporting the same events twice gives byte-identical output (no time, no random)."""
    events: list[Event] = [raised(t) for t in EVERY_TARGET]
    assert json.dumps(export(events)) == json.dumps(export(list(reversed(events))))


def test_the_github_limits_are_the_documented_ones() -> None:
    """The hard limits encoded are GitHub's documented ones (docs/sarif.md cites them)."""
    assert (GITHUB.gzip_bytes, GITHUB.runs, GITHUB.results_per_run) == (10_000_000, 20, 25_000)
    assert (GITHUB.rules_per_run, GITHUB.tags_per_rule, GITHUB.shown_results) == (25_000, 20, 5_000)
    assert GITHUB.locations_per_result == 10


def many(count: int) -> list[Event]:
    return [raised(f"code:src/f{i}.py:1", criterion="C1") for i in range(count)]


def test_over_25000_results_is_refused_at_githubs_real_limit() -> None:
    """25,001 results in a run is over GitHub's hard limit: the export is refused in one line
    naming the count, the limit and what to do; 25,000 passes."""
    document = export(many(25_001))
    data = json.dumps(document).encode()
    entries = findings_ledger.entries(fold(many(25_001)))
    with pytest.raises(
        LoopbusError, match=r"25,001 results, over GitHub code scanning's 25,000"
    ) as refused:
        _within_github(document, data, entries)
    assert "\n" not in str(refused.value) and "--min-severity" in str(refused.value)
    at_limit = export(many(25_000))
    verdict = check(at_limit, json.dumps(at_limit).encode())
    assert verdict.problems == []
    assert verdict.notes == [
        "25,000 results: GitHub code scanning shows only the 5,000 most severe"
    ]


def test_a_fileless_result_is_refused_for_github() -> None:
    """Plain SARIF with a logical-only location is what GitHub rejects whole: check says so."""
    document = export([raised("plan:S1")], anchor=None)
    verdict = check(document, json.dumps(document).encode())
    assert verdict.problems == [
        "1 results have no file location, and GitHub code scanning rejects a file with any "
        "such result"
    ]


def test_size_runs_rules_and_tags_are_checked() -> None:
    """Over the gzip size, the run count, the rule count or the tags per rule is refused."""
    document = export(many(3))
    data = json.dumps(document).encode()
    small = Limits(
        service="S", gzip_bytes=gzip_size(data) - 1, runs=0, results_per_run=3,
        rules_per_run=0, locations_per_result=1, tags_per_rule=2, shown_results=3,
    )  # fmt: skip
    problems = check(document, data, small).problems
    assert len(problems) == 4, problems
    assert problems[0].startswith(f"the file is {gzip_size(data):,} bytes gzip-compressed")
    assert "1 runs, over S's 0 per file" in problems
    assert "1 rules, over S's 0 per run" in problems
    assert "a rule has more than 2 tags" in problems
