"""A novel decision's autonomy class: loopbus's reading of the options over the builder's
word, and the project's `[build] autonomy`."""

from __future__ import annotations

import pytest

from schemas.builds import DecisionOption, NovelDecision
from workers.agents.config import DEFAULT_AUTONOMY, parse
from workers.builder.autonomy import classify, may_pick_alone
from workers.errors import ConfigError


def choice(question: str, *summaries: str, autonomy: str | None = "safe") -> NovelDecision:
    options = [DecisionOption(id=f"o{i}", summary=text) for i, text in enumerate(summaries)]
    return NovelDecision(
        decision_id="d",
        question=question,
        options=options,
        recommended_default="o0",
        confidence="high",
        autonomy=autonomy,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("question", "summaries"),
    [
        pytest.param("old rows?", ("DELETE FROM orders WHERE year < 2020", "keep"), id="delete"),
        pytest.param("cleanup?", ("purge the archive bucket", "keep it"), id="purge"),
        pytest.param("the legacy table?", ("drop it", "keep it"), id="drop"),
        pytest.param("empty the log table?", ("TRUNCATE audit_log", "no"), id="truncate"),
        pytest.param("new column?", ("run a migration adding it", "a side table"), id="migrate"),
        pytest.param("type change?", ("ALTER TABLE users ...", "a view"), id="alter-table"),
        pytest.param("ship it?", ("deploy to production now", "wait"), id="production"),
        pytest.param("config?", ("point it at the prod database", "staging"), id="prod"),
        pytest.param("history?", ("force-push the branch", "merge"), id="force-push"),
        pytest.param("tmp files?", ("rm -rf build/", "leave them"), id="rm-rf"),
        pytest.param("orders?", ("remove the orders table", "keep"), id="remove-table"),
        pytest.param("fixtures?", ("reset the database first", "reuse it"), id="reset-db"),
        pytest.param("import?", ("overwrite the existing records", "merge"), id="overwrite"),
    ],
)
def test_a_choice_that_destroys_migrates_or_reaches_production_is_irreversible(
    question: str, summaries: tuple[str, ...]
) -> None:
    """Whatever the builder states, loopbus classes these irreversible and says why."""
    classified = classify(choice(question, *summaries, autonomy="safe"))
    assert classified.autonomy == "irreversible" and classified.stated == "safe"
    assert classified.why.startswith("loopbus read: ")


@pytest.mark.parametrize(
    ("question", "summaries", "stated"),
    [
        pytest.param("round totals?", ("two decimals", "as Python prints"), "risky", id="format"),
        pytest.param("cache size?", ("128 entries", "1024 entries"), "safe", id="tuning"),
        pytest.param("an index on email?", ("add it", "not yet"), "decision", id="index"),
        pytest.param("dropdown or list?", ("a dropdown menu", "a list"), "safe", id="dropdown"),
        pytest.param("the old button?", ("remove the button", "hide it"), "safe", id="remove-ui"),
    ],
)
def test_an_ordinary_choice_keeps_the_class_its_builder_stated(
    question: str, summaries: tuple[str, ...], stated: str
) -> None:
    """Nothing destructive in the text: the builder's class stands (word boundaries, so a
    'dropdown' is not a drop)."""
    classified = classify(choice(question, *summaries, autonomy=stated))
    assert (classified.autonomy, classified.why) == (stated, "")


def test_an_unstated_class_is_a_decision_and_confidence_never_lifts_a_class() -> None:
    """No class stated reads as `decision`; high confidence on an irreversible choice still
    may not be picked alone, whatever the project allows."""
    unstated = classify(choice("round?", "cents", "raw", autonomy=None))
    assert (unstated.autonomy, unstated.stated) == ("decision", None)
    assert not may_pick_alone(unstated, "high", DEFAULT_AUTONOMY)
    assert may_pick_alone(unstated, "high", ("safe", "risky", "decision"))
    assert not may_pick_alone(unstated, "low", ("safe", "risky", "decision"))
    drop = classify(choice("table?", "drop it", "keep", autonomy="safe"))
    assert not may_pick_alone(drop, "high", ("safe", "risky", "decision"))


def build_toml(autonomy: str) -> str:
    return f'[project]\nid = "p"\n[build]\ncommand = "b"\nroster = ["b1"]\nautonomy = {autonomy}\n'


def test_the_project_autonomy_defaults_to_safe_and_risky() -> None:
    """Without `[build] autonomy`, long mode may pick safe and risky choices alone."""
    config = parse('[project]\nid = "p"\n[build]\ncommand = "b"\nroster = ["b1"]\n')
    assert config.build.autonomy == ("safe", "risky")
    assert parse(build_toml('["decision", "safe"]')).build.autonomy == ("safe", "decision")


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        pytest.param('["irreversible"]', "always waits for the operator", id="irreversible"),
        pytest.param('["reckless"]', "use classes of: safe, risky, decision", id="unknown"),
        pytest.param('"safe"', "list classes", id="not-a-list"),
    ],
)
def test_a_wrong_autonomy_is_one_line_naming_it(value: str, needle: str) -> None:
    """`irreversible` can never be allowed; a class outside the set or a non-list is refused."""
    with pytest.raises(ConfigError, match=r"build\.autonomy") as caught:
        parse(build_toml(value))
    assert needle in str(caught.value) and "\n" not in str(caught.value)
