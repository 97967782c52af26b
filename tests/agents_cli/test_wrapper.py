"""``loopbus agent CLI --role ROLE`` against stand-in CLIs that speak each CLI's documented
output format: the envelope it prints, the usage it carries, the prompt the CLI was given,
and one line on stderr with a non-zero exit for each way a run can fail."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from briefs import DOCUMENTS, ENVELOPES
from standins import Standins, fenced, loopbus_agent, path_with

from schemas.builds import BuildEnvelope
from schemas.reviews import InvestigationReport, VerdictDocument

USAGE = {"in": 1200, "out": 345}


def run(standins: Standins, cli: str, role: str, tmp_path: Path, *extra: str, **step: Any) -> Any:
    standins.plan([step])
    return loopbus_agent(
        cli, role, DOCUMENTS[role], path=path_with(standins.dir), cwd=tmp_path, extra=extra
    )


def printed(result: Any) -> dict[str, Any]:
    assert result.returncode == 0, result.stderr
    [line] = result.stdout.splitlines()
    document: dict[str, Any] = json.loads(line)
    return document


@pytest.mark.parametrize(
    ("cli", "extra"),
    [
        pytest.param("claude", (), id="claude-json"),
        pytest.param("claude", ("--output-format", "stream-json"), id="claude-stream-json"),
        pytest.param("codex", (), id="codex-exec-json"),
        pytest.param("gemini", (), id="gemini-json"),
        pytest.param("opencode", (), id="opencode-run-json"),
    ],
)
def test_a_builder_envelope_in_a_fence_is_printed_with_the_cli_usage(
    standins: Standins, tmp_path: Path, cli: str, extra: tuple[str, ...]
) -> None:
    """The envelope in the final message's ```json fence is printed as the builder daemon
    decodes it, with the tokens the CLI counted (not the model's guess) in ``tokens``; tool
    events and earlier messages holding JSON are not taken for it."""
    envelope = {**ENVELOPES["builder"], "tokens": 7}
    result = run(standins, cli, "builder", tmp_path, *extra, message=fenced(envelope), usage=USAGE)
    document = printed(result)
    assert document["status"] == "completed" and document["summary"] == "mean"
    assert document["tokens"] == USAGE["in"] + USAGE["out"]
    # the printed line is the daemon's type, re-encoded: every field, defaults included
    assert set(document) == set(BuildEnvelope.__struct_fields__)
    [call] = standins.calls()
    assert call["cli"] == cli and Path(call["cwd"]) == tmp_path
    assert all(word in call["argv"] for word in extra)


@pytest.mark.parametrize(
    ("cli", "role"),
    [
        pytest.param("claude", "reviewer", id="claude-reviewer"),
        pytest.param("codex", "planner", id="codex-planner"),
        pytest.param("gemini", "investigator", id="gemini-investigator"),
        pytest.param("claude", "planner", id="claude-planner"),
        pytest.param("opencode", "reviewer", id="opencode-reviewer"),
    ],
)
def test_each_role_gets_its_own_envelope_from_a_bare_object(
    standins: Standins, tmp_path: Path, cli: str, role: str
) -> None:
    """A bare JSON object after some prose is the envelope too; each role's is printed as
    its daemon's type, which carries no usage field outside the builder's."""
    message = f"Here is my answer.\n{json.dumps(ENVELOPES[role])}\n"
    document = printed(run(standins, cli, role, tmp_path, message=message, usage=USAGE))
    for key, value in ENVELOPES[role].items():
        assert document[key] == value
    assert "tokens" not in document


def test_the_builder_prompt_carries_the_unit_and_what_to_print(
    standins: Standins, tmp_path: Path
) -> None:
    """The builder's prompt names the unit, its owned files, its criteria with their text,
    the findings, the conflict regions, the decisions in force and the envelope to print;
    the CLI runs in the working directory with its build (edit) mode."""
    printed(run(standins, "claude", "builder", tmp_path, message=fenced(ENVELOPES["builder"])))
    [call] = standins.calls()
    prompt = call["prompt"]
    for fact in (
        "stats of slice S1",
        "- calc/stats.py",
        "tests/test_stats.py::test_mean",
        "def test_mean():",
        "collides with trunk",
        '"reason": "both-modified"',
        '"chosen": "cents"',
        "remove every marker",
        '"status": "completed"',
        "novel_decisions",
        "```json",
    ):
        assert fact in prompt, fact
    assert "bypassPermissions" in call["argv"] and "-p" in call["argv"]


def test_the_reviewer_prompt_carries_the_diff_and_the_verdict_format(
    standins: Standins, tmp_path: Path
) -> None:
    """The reviewer's prompt holds the diff, the criteria, the gate results and the verdict
    format; the CLI is started read-only."""
    printed(run(standins, "codex", "reviewer", tmp_path, message=fenced(ENVELOPES["reviewer"])))
    [call] = standins.calls()
    assert "+    return sum(xs)" in call["prompt"]
    assert "tests/test_criteria.py::test_total" in call["prompt"]
    assert '"verdict": "approve" or "reject"' in call["prompt"]
    assert call["argv"][:2] == ["exec", "--json"] and "read-only" in call["argv"]
    assert call["argv"][-1] == "-"


def test_the_planner_prompt_carries_the_charter_refusals_and_plan_schema(
    standins: Standins, tmp_path: Path
) -> None:
    """The planner's prompt holds the slice id to plan, the charter, the reconnaissance, the
    closed slices, the reasons earlier tries were refused and the plan envelope's shape."""
    printed(run(standins, "gemini", "planner", tmp_path, message=fenced(ENVELOPES["planner"])))
    [call] = standins.calls()
    for fact in (
        "with id S2",
        "a calculator",
        "tests live in tests/",
        '"ops"',
        "unit U1: id already used",
        '{"plan": {"slice"',
    ):
        assert fact in call["prompt"], fact


def test_the_investigator_runs_in_the_copy_loopbus_repo_names(
    standins: Standins, tmp_path: Path
) -> None:
    """An investigator's CLI runs in the read-only copy of trunk ``LOOPBUS_REPO`` names,
    not in its empty worktree, and is told the trigger and the failures."""
    copy = tmp_path / "copy"
    copy.mkdir()
    standins.plan([{"message": fenced(ENVELOPES["investigator"])}])
    result = loopbus_agent(
        "claude",
        "investigator",
        DOCUMENTS["investigator"],
        path=path_with(standins.dir),
        cwd=tmp_path,
        env={"LOOPBUS_REPO": str(copy)},
    )
    document = printed(result)
    assert InvestigationReport(**document).summary.startswith("the fixture")
    [call] = standins.calls()
    assert Path(call["cwd"]) == copy and "unit-failed:stats" in call["prompt"]


# -- failures: one line on stderr, a non-zero exit ----------------------------------------


def one_line_failure(result: Any) -> str:
    assert result.returncode != 0
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    line: str = lines[0]
    return line


@pytest.mark.parametrize("cli", ["claude", "codex", "gemini", "opencode"])
def test_a_cli_missing_from_path_says_how_to_install_it(tmp_path: Path, cli: str) -> None:
    """With no such program on PATH the wrapper says so and how to install it."""
    result = loopbus_agent(cli, "builder", DOCUMENTS["builder"], path=path_with(None), cwd=tmp_path)
    line = one_line_failure(result)
    assert result.returncode == 1
    assert f"`{cli}` is not on PATH" in line and "npm install -g" in line


def test_a_cli_exiting_non_zero_is_a_failure_naming_the_code(
    standins: Standins, tmp_path: Path
) -> None:
    """A CLI that exits non-zero fails the run whatever it printed, with its last stderr line."""
    result = run(
        standins, "gemini", "builder", tmp_path, exit=53, stderr="starting\nturn limit exceeded\n"
    )
    line = one_line_failure(result)
    assert "gemini exited with code 53: turn limit exceeded" in line


def test_a_final_message_without_json_is_a_failure(standins: Standins, tmp_path: Path) -> None:
    """A final message holding no JSON object gives no envelope."""
    result = run(standins, "codex", "reviewer", tmp_path, message="Looks fine to me.")
    line = one_line_failure(result)
    assert "holds no JSON object, so no reviewer envelope" in line and "Looks fine" in line


def test_output_not_in_the_cli_format_is_a_failure(standins: Standins, tmp_path: Path) -> None:
    """Output that is not the CLI's documented format (plain text here) is named so."""
    result = run(standins, "claude", "builder", tmp_path, raw="I did it!\n")
    line = one_line_failure(result)
    assert "printed no result object" in line and "docs.claude.com" in line


def test_a_claude_error_result_is_a_failure(standins: Standins, tmp_path: Path) -> None:
    """A result Claude Code marks as an error is not an answer, even with exit code 0."""
    error = {"type": "result", "subtype": "error_max_turns", "is_error": True, "result": ""}
    result = run(standins, "claude", "builder", tmp_path, raw=json.dumps(error))
    assert "reported an error (error_max_turns)" in one_line_failure(result)


@pytest.mark.parametrize(
    ("role", "envelope", "field"),
    [
        pytest.param("builder", {"status": "done"}, "$.status", id="builder-status"),
        pytest.param("reviewer", {"verdict": "approve", "score": 3}, "score", id="reviewer-key"),
        pytest.param("planner", {"summary": "no plan"}, "plan", id="planner-plan"),
        pytest.param("investigator", {"severity": "high"}, "summary", id="investigator"),
    ],
)
def test_an_envelope_the_role_type_refuses_is_a_failure_naming_the_field(
    standins: Standins, tmp_path: Path, role: str, envelope: dict[str, Any], field: str
) -> None:
    """An envelope that does not validate against the role's daemon type names the field."""
    result = run(standins, "claude", role, tmp_path, message=fenced(envelope))
    line = one_line_failure(result)
    assert f"its {role} envelope does not validate" in line and field in line


def test_stdin_that_is_not_json_is_a_usage_error(standins: Standins, tmp_path: Path) -> None:
    """A document that is not JSON is refused before any CLI runs (exit 2)."""
    result = loopbus_agent(
        "claude", "builder", "not json", path=path_with(standins.dir), cwd=tmp_path
    )
    assert "stdin is not JSON" in one_line_failure(result) and result.returncode == 2
    assert standins.calls() == []


def test_types_used_are_the_daemons() -> None:
    """Each role's envelope is validated with its daemon's own Struct (the planner's, where
    the planner daemon's schemas are installed; the same shape otherwise)."""
    import importlib.util

    from loopbus.agents_cli.roles import PlannerAnswer, envelope_type

    assert envelope_type("builder") is BuildEnvelope
    assert envelope_type("reviewer") is VerdictDocument
    assert envelope_type("investigator") is InvestigationReport
    if importlib.util.find_spec("schemas.planning") is None:
        assert envelope_type("planner") is PlannerAnswer
    else:
        assert envelope_type("planner").__name__ == "PlannerEnvelope"
