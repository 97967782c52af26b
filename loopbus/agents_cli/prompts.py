"""A role's stdin document turned into a prompt: the role's instructions, the fields of the
brief that bear on the work, and what to print (``prompt_text``).

The documents are read as plain JSON, not decoded to the daemons' Structs: a field a newer
daemon adds is passed on as JSON rather than refused.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from loopbus.agents_cli import prompt_text as words
from loopbus.agents_cli.spec import Role

Doc = dict[str, Any]


def prompt(role: Role, doc: Doc) -> str:
    """The whole prompt for ``role`` given its stdin document ``doc``."""
    head, body, answer = RENDER[role]
    sections = [head, *body(doc), answer, words.ANSWER_RULE]
    return "\n\n".join(s.strip("\n") for s in sections if s) + "\n"


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def _section(title: str, value: Any) -> str:
    if value in (None, "", [], {}):
        return ""
    text = value if isinstance(value, str) else _json(value)
    return f"## {title}\n{text}"


def builder(doc: Doc) -> list[str]:
    criteria = [
        f"- {c.get('test')}\n```python\n{c.get('text', '')}\n```" for c in doc.get("criteria", [])
    ]
    conflict = doc.get("conflict")
    return [
        f"## The unit\n{doc.get('unit')} of slice {doc.get('slice')} "
        f"(project {doc.get('project')}), round {doc.get('round', 1)}: {doc.get('title', '')}",
        _section("Files the unit owns", "\n".join(f"- {f}" for f in doc.get("files", []))),
        _section("Criterion tests to make pass (pending until you pass them)", "\n".join(criteria)),
        _section("Design", doc.get("design", "")),
        _section("Open findings to address", doc.get("findings", [])),
        _section("Tactic", f"rung {doc.get('rung', 0)}: {doc.get('tactic', '')}")
        if doc.get("tactic")
        else "",
        _section("Decisions in force", doc.get("decisions", [])),
        _section("Superseded decisions (do not build to these)", doc.get("superseded", [])),
        _section("What went wrong last time", doc.get("problem", "")),
        _section(
            "A merge conflict to resolve first: the files hold conflict markers (ours is "
            "the unit, theirs is trunk); keep what each side meant and remove every marker",
            conflict,
        ),
    ]


def reviewer(doc: Doc) -> list[str]:
    return [
        _section("Criteria the unit serves", doc.get("criteria", [])),
        _section("Gate results of the head", doc.get("gate_results", [])),
        _section(
            "Decisions picked without a person (escalate any you will not let stand)",
            doc.get("decisions", []),
        ),
        f"## The diff\n```diff\n{doc.get('diff', '')}\n```",
    ]


def planner(doc: Doc) -> list[str]:
    return [
        f"## What to plan\nproject {doc.get('project')}: a {doc.get('kind', 'build')} slice "
        f"with id {doc.get('slice')} (try {doc.get('attempt', 1)})",
        _section("Unit ids already used (take none of these)", doc.get("used_units", [])),
        _section("The charter", doc.get("charter")),
        _section("Reconnaissance: facts about the repository", doc.get("recon", [])),
        _section("Trunk's tree", _tree(doc)),
        _section("Slices closed so far, with their run records", doc.get("closed", [])),
        _section("Findings routed to the planner", doc.get("findings", [])),
        _section("Decisions in force", doc.get("decisions", [])),
        _section("Why earlier tries were refused (fix every one)", doc.get("refusals", [])),
        _section("Everything else in the brief", _rest(doc, PLANNER_FIELDS)),
    ]


PLANNER_FIELDS = frozenset(
    {
        "project",
        "kind",
        "slice",
        "attempt",
        "used_units",
        "charter",
        "recon",
        "tree",
        "tree_more",
        "closed",
        "findings",
        "decisions",
        "refusals",
    }
)


def _tree(doc: Doc) -> str:
    lines = [f"{e.get('path')} ({e.get('size', '?')} bytes)" for e in doc.get("tree", [])]
    if doc.get("tree_more"):
        lines.append(f"… and {doc['tree_more']} more paths")
    return "\n".join(lines)


def _rest(doc: Doc, known: frozenset[str]) -> Doc:
    return {k: v for k, v in doc.items() if k not in known}


def investigator(doc: Doc) -> list[str]:
    return [
        f"## The trigger\n{doc.get('trigger')} (kind {doc.get('kind')}"
        + (f", unit {doc['unit']}" if doc.get("unit") else "")
        + ")",
        _section("The failures", doc.get("failures", [])),
        _section(
            "Everything else in the request",
            _rest(doc, frozenset({"trigger", "kind", "unit", "failures"})),
        ),
    ]


RENDER: dict[Role, tuple[str, Callable[[Doc], list[str]], str]] = {
    "builder": (words.BUILDER, builder, words.BUILDER_ANSWER),
    "reviewer": (words.REVIEWER, reviewer, words.REVIEWER_ANSWER),
    "planner": (words.PLANNER, planner, words.PLANNER_ANSWER),
    "investigator": (words.INVESTIGATOR, investigator, words.INVESTIGATOR_ANSWER),
}
