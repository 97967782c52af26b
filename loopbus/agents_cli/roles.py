"""Per role: the type its daemon decodes the envelope to, where the CLI's usage goes, and
where the agent works.

The types are the daemons' own (``BuildEnvelope`` for the builder, ``VerdictDocument``
for the reviewer, ``InvestigationReport`` for the investigator, the planner's
``PlannerEnvelope``), so what the wrapper prints is what the daemon accepts as to shape.
The daemon still judges the rest (a verdict's blocking rule, a plan's validity).
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

import msgspec

from loopbus.agents_cli.spec import Answer, Role
from schemas.builds import BuildEnvelope
from schemas.reviews import InvestigationReport, VerdictDocument


class PlannerAnswer(msgspec.Struct, frozen=True, kw_only=True):
    """The planner's envelope as docs/planning.md names it, ``{"plan": …, "summary": …}``:
    used only where ``schemas.planning`` (the planner daemon's) is not installed."""

    plan: dict[str, Any]
    summary: str = ""


def envelope_type(role: Role) -> type[Any]:
    if role == "builder":
        return BuildEnvelope
    if role == "reviewer":
        return VerdictDocument
    if role == "investigator":
        return InvestigationReport
    try:  # the planner daemon's own type, when this install has it
        planning = importlib.import_module("schemas.planning")
    except ImportError:
        return PlannerAnswer
    found: type[Any] = getattr(planning, "PlannerEnvelope", PlannerAnswer)
    return found


def validate(role: Role, document: dict[str, Any]) -> Any:
    """The envelope as the role's type; raises ``msgspec.ValidationError`` naming the field."""
    return msgspec.json.decode(msgspec.json.encode(document), type=envelope_type(role))


def with_usage(role: Role, envelope: Any, answer: Answer) -> Any:
    """The builder's ``tokens`` is what the turn spent: the CLI's count, when it gave one,
    is a measurement and beats the model's own guess. Other envelopes carry no usage."""
    if role == "builder" and answer.tokens > 0:
        return msgspec.structs.replace(envelope, tokens=answer.tokens)
    return envelope


def workdir(role: Role) -> Path:
    """Where the CLI runs: the current directory (the daemon's worktree or read-only copy),
    except that an investigator's and a planner's copy of trunk is the one ``LOOPBUS_REPO``
    names."""
    repo = os.environ.get("LOOPBUS_REPO")
    if role in ("investigator", "planner") and repo and Path(repo).is_dir():
        return Path(repo)
    return Path.cwd()
