"""What a parser concludes from one run: an outcome, a one-line summary, and findings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from schemas.findings import Severity
from schemas.gates import GateOutcome
from schemas.targets import Target


@dataclass(frozen=True)
class Finding:
    """A finding before it is published: the runner adds producer, criterion, unit, ids."""

    target: Target
    severity: Severity
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Verdict:
    """``error`` is the one-line reason when ``outcome`` is error (and empty otherwise)."""

    outcome: GateOutcome
    summary: str
    findings: list[Finding] = field(default_factory=list)
    error: str = ""
    tests: dict[str, str] = field(default_factory=dict)
    """How each collected test ended (pytest only): see ``GateResultRecorded.tests``."""
