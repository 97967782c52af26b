"""The documents each role's daemon writes on the agent's stdin, as the docs show them."""

from __future__ import annotations

from typing import Any

BUILDER_BRIEF: dict[str, Any] = {
    "schema": "loopbus.brief.v1",
    "project": "calc",
    "slice": "S1",
    "unit": "stats",
    "title": "the mean of a list",
    "files": ["calc/stats.py"],
    "criteria": [
        {"test": "tests/test_stats.py::test_mean", "text": "def test_mean():\n    assert 1\n"}
    ],
    "design_ref": None,
    "design": "",
    "base": "e92ce644b8405c337701e4bc76333dd8cc9f8be5",
    "round": 2,
    "findings": [
        {
            "id": "01M8W3ZK9Q4V7E2T6R1B5N8C3D",
            "target": "code:calc/stats.py:5-5",
            "severity": "high",
            "criterion": "merge-clean",
            "message": "stats collides with trunk in calc/stats.py: function mean",
        }
    ],
    "rung": 1,
    "tactic": "repair: fix the reported findings where they are",
    "decisions": [
        {
            "decision_id": "rounding",
            "question": "round to cents?",
            "chosen": "cents",
            "by": "operator:alice",
        }
    ],
    "superseded": [],
    "problem": "",
    "conflict": {
        "trunk": "9078d3e6b5d865848117831eada927938412aceb",
        "merge_base": "4a8f2aec21b6c3ec7c0f93d4e6df0ca8603b8a17",
        "finding": "01M8W3ZK9Q4V7E2T6R1B5N8C3D",
        "files": [
            {
                "path": "calc/stats.py",
                "regions": [
                    {
                        "kind": "function",
                        "name": "mean",
                        "reason": "both-modified",
                        "base": "    return 0.0\n",
                        "unit": "    return sum(xs) / len(xs)\n",
                        "trunk": "    if not xs:\n        return 0.0\n",
                    }
                ],
            }
        ],
    },
}

REVIEW_REQUEST: dict[str, Any] = {
    "diff": "diff --git a/src/app.py b/src/app.py\n--- a/src/app.py\n+++ b/src/app.py\n"
    "@@ -1,2 +1,2 @@\n def total(xs):\n-    return 0\n+    return sum(xs)\n",
    "gate_results": [
        {
            "check": "tests",
            "outcome": "pass",
            "cached": True,
            "duration_s": 1.8,
            "summary": "12 passed",
            "findings": 0,
        }
    ],
    "criteria": ["tests/test_criteria.py::test_total"],
    "decisions": [],
}

PLANNER_BRIEF: dict[str, Any] = {
    "project": "calc",
    "kind": "build",
    "slice": "S2",
    "attempt": 2,
    "charter": {
        "id": "C1",
        "title": "a calculator",
        "objectives": [{"id": "O1", "text": "people can add numbers"}],
    },
    "recon": [{"id": "F1", "text": "tests live in tests/", "paths": ["tests"]}],
    "tree": [{"path": "calc/__init__.py", "size": 10}],
    "tree_more": 0,
    "closed": [{"slice": "S1", "boot": "pass", "done": ["ops"]}],
    "findings": [],
    "refusals": [["unit U1: id already used"]],
    "decisions": [],
    "used_units": ["U1", "ops"],
}

INVESTIGATION: dict[str, Any] = {
    "trigger": "unit-failed:stats",
    "kind": "unit-failed",
    "unit": "stats",
    "failures": [{"event": "01M8W3ZK9Q4V7E2T6R1B5N8C3D", "what": "gate tests red"}],
}

ENVELOPES: dict[str, dict[str, Any]] = {
    "builder": {"schema": "loopbus.envelope.v2", "status": "completed", "summary": "mean"},
    "reviewer": {"verdict": "approve", "summary": "reads right", "findings": []},
    "planner": {
        "plan": {
            "slice": {"id": "S2"},
            "unit": [
                {
                    "id": "U2",
                    "title": "mean",
                    "files": ["calc/stats.py"],
                    "criteria": ["tests/test_stats.py::test_mean"],
                }
            ],
        },
        "summary": "the mean next",
    },
    "investigator": {"summary": "the fixture never creates the table", "severity": "high"},
}

DOCUMENTS: dict[str, dict[str, Any]] = {
    "builder": BUILDER_BRIEF,
    "reviewer": REVIEW_REQUEST,
    "planner": PLANNER_BRIEF,
    "investigator": INVESTIGATION,
}
