"""The scripted verifier, run as a command on a real checkout: it boots, runs the criteria
that name tests, and says what it could not reach."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import msgspec

from schemas.verify import VerifierEnvelope


def run(tmp_path: Path, brief: dict[str, object]) -> VerifierEnvelope:
    done = subprocess.run(
        [sys.executable, "-m", "loopbus.scripted.verifier"],
        input=json.dumps(brief),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=True,
        timeout=120,
    )
    return msgspec.json.decode(done.stdout, type=VerifierEnvelope)


def test_a_failing_criterion_is_a_finding_and_an_unrunnable_one_is_unreached(
    tmp_path: Path,
) -> None:
    """One criterion passes, one fails (a finding, correctness 4), one names no test
    (unreached, never counted as passed); the boot command runs first."""
    (tmp_path / "test_calc.py").write_text(
        "def test_add():\n    assert 1 + 1 == 2\n\n\ndef test_mul():\n    assert 2 * 2 == 5\n"
    )
    envelope = run(
        tmp_path,
        {
            "boot": {"check": "boot", "command": f"{sys.executable} -c pass"},
            "criteria": [
                {"id": "test_calc.py::test_add"},
                {"id": "test_calc.py::test_mul"},
                {"id": "the page loads fast"},
            ],
        },
    )
    assert [(c.id, c.passed) for c in envelope.checks] == [
        ("boot", True),
        ("test_calc.py::test_add", True),
        ("test_calc.py::test_mul", False),
    ]
    [finding] = envelope.findings
    assert finding.check == "test_calc.py::test_mul"
    assert envelope.unreached == ["the page loads fast: not a test this verifier can run"]
    scores = {s.axis: s.score for s in envelope.scores}
    assert scores == {
        "correctness": 4,
        "testing_strategy": 10,
        "plan_adherence": 10,
        "regression_surface": 6,
    }


def test_an_increment_that_does_not_start_is_a_finding(tmp_path: Path) -> None:
    envelope = run(tmp_path, {"boot": {"command": f"{sys.executable} -c 'raise SystemExit(3)'"}})
    assert [f.check for f in envelope.findings] == ["boot"]
    assert envelope.checks[0].passed is False
