"""``loopbus findings export`` end to end: findings reported through the CLI on a real
server come out as a schema-valid SARIF file GitHub code scanning would accept."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sarif_cli import loopbus

from bus import Bus
from loopbus.sarif import FINGERPRINT
from loopbus.sarif_limits import check
from schemas import Actor, FindingResolved

REPORTS = [
    ("reviewer", "code:src/app.py:10-14", "high", "C1", "unchecked None"),
    ("operator", "plan:S1", "medium", "intent", "not what I asked for"),
    ("builder", "check:lint", "low", "", "lint is slow"),
]


OPENED: set[str] = set()
"""Projects this module has reported to: a later report must not say --new."""


def report(url: str, project: str, producer: str, target: str, severity: str, criterion: str,
           message: str) -> str:  # fmt: skip
    new = [] if project in OPENED else ["--new"]  # only the first event opens a project
    done = loopbus(
        "report", "finding", "--project", project, *new, "--producer", producer,
        "--target", target, "--severity", severity, "--criterion", criterion,
        "--message", message, url=url,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    OPENED.add(project)
    return done.stdout.split()[1]  # "finding <id> published at seq N"


def exported(url: str, *args: str) -> dict[str, Any]:
    done = loopbus("findings", "export", *args, url=url)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


async def test_reported_findings_export_as_valid_sarif(
    nats_url: str, project: str, bus: Bus, sarif_schema: Any, tmp_path: Path
) -> None:
    """Reported findings export schema-valid and within GitHub's limits; a resolved one is
    left out by default and written as suppressed with --all; -o writes the same bytes."""
    ids = [report(nats_url, project, *r) for r in REPORTS]
    document = exported(nats_url, "--project", project, "--format", "sarif")
    assert list(sarif_schema.iter_errors(document)) == []
    assert check(document, json.dumps(document).encode()).problems == []
    run = document["runs"][0]
    assert run["automationDetails"] == {"id": f"loopbus/{project}/"}
    assert {r["ruleId"] for r in run["results"]} == {
        "reviewer/C1",
        "operator/intent",
        "builder/lint",
    }

    await bus.publish(
        FindingResolved(
            project=project, actor=Actor(role="system", principal="tests"), finding=ids[0],
            why="fixed in 4f2a",
        )
    )  # fmt: skip
    still_open = exported(nats_url, "--project", project)
    assert [r["properties"]["finding"] for r in still_open["runs"][0]["results"]] == ids[1:]
    everything = loopbus("findings", "export", "--project", project, "--all", url=nats_url)
    assert everything.returncode == 0, everything.stderr
    assert "1 closed findings are written with a suppression" in everything.stderr
    results = {
        r["properties"]["finding"]: r for r in json.loads(everything.stdout)["runs"][0]["results"]
    }
    assert results[ids[0]]["suppressions"][0]["justification"] == "resolved by tests: fixed in 4f2a"
    assert list(sarif_schema.iter_errors(json.loads(everything.stdout))) == []

    target = tmp_path / "out" / "findings.sarif"
    target.parent.mkdir()
    written = loopbus("findings", "export", "--project", project, "-o", str(target), url=nats_url)
    assert written.returncode == 0, written.stderr
    assert written.stdout == f"wrote 2 results (2 rules) of {project} to {target}\n"
    again = loopbus("findings", "export", "--project", project, url=nats_url)
    assert target.read_text() == again.stdout, "the same log exports the same bytes"
    assert [p.name for p in target.parent.iterdir()] == ["findings.sarif"], "no temporary left"


def test_a_raise_again_keeps_the_fingerprint(nats_url: str, project: str) -> None:
    """Raising the same key again (a new event, a new id) leaves the export's fingerprint as
    it was: a re-upload de-duplicates instead of opening a second alert."""
    report(nats_url, project, *REPORTS[0])
    before = exported(nats_url, "--project", project)["runs"][0]["results"]
    report(nats_url, project, *REPORTS[0])
    after = exported(nats_url, "--project", project)["runs"][0]["results"]
    assert [r["partialFingerprints"][FINGERPRINT] for r in after] == [
        r["partialFingerprints"][FINGERPRINT] for r in before
    ]
    assert after[0]["properties"]["times"] == 2


def test_plain_sarif_keeps_only_logical_locations(nats_url: str, project: str) -> None:
    """--for sarif writes a plan finding with its logical location only."""
    report(nats_url, project, *REPORTS[1])
    [result] = exported(nats_url, "--project", project, "--for", "sarif")["runs"][0]["results"]
    assert list(result["locations"][0]) == ["logicalLocations"]


def test_min_severity_leaves_out_the_less_severe(nats_url: str, project: str) -> None:
    """--min-severity medium drops the low finding."""
    for entry in REPORTS:
        report(nats_url, project, *entry)
    results = exported(nats_url, "--project", project, "--min-severity", "medium")["runs"][0][
        "results"
    ]
    assert [r["properties"]["severity"] for r in results] == ["high", "medium"]


def test_bad_export_input_is_one_line(nats_url: str, project: str, tmp_path: Path) -> None:
    """A bad anchor, an unwritable or empty -o and a project that cannot be found are one
    line each (an empty -o was taken for '.', which "cannot be written (Device or resource
    busy)")."""
    report(nats_url, project, *REPORTS[0])
    cases = [
        (("--project", "p", "--anchor", "../up.toml"), "--anchor '../up.toml' must be a file path"),
        (
            ("--project", project, "-o", "/proc/nope/x.sarif"),
            "-o '/proc/nope/x.sarif' cannot be written",
        ),
        (
            ("--project", project, "-o", ""),
            "-o '' is empty: name the file to write, or leave -o out for stdout",
        ),
        (("--project", project, "-o", "."), "-o '.' is a directory: name a file in it"),
        ((), "no project: pass --project ID, set LOOPBUS_PROJECT"),
        (("--project", f"{project}x"), "has no event on the log"),
    ]
    for args, needle in cases:
        done = loopbus("findings", "export", *args, url=nats_url, cwd=tmp_path)
        assert done.returncode == 2, (args, done.stderr)
        assert needle in done.stderr and done.stderr.count("\n") == 1, done.stderr
        assert "Traceback" not in done.stderr
