"""The entity merge on every scenario kind, in every supported language."""

from __future__ import annotations

import pytest
from entity_merge_cases import LANGS, Scenario, scenarios

from workers.entity_merge import MergeResult, language_for_path, merge_file


def _cases(*kinds: str) -> list[object]:
    return [pytest.param(s, id=s.id) for lang in LANGS for s in scenarios(lang) if s.kind in kinds]


def _merge(s: Scenario) -> MergeResult:
    return merge_file(s.base, s.ours, s.theirs, s.lang.path)


def _parses(s: Scenario, content: bytes) -> bool:
    spec = language_for_path(s.lang.path)
    assert spec is not None
    return spec.parses(content)


@pytest.mark.parametrize("s", _cases("add-at-end"))
def test_two_additions_at_the_end_of_a_file_are_both_kept(s: Scenario) -> None:
    """Two sides appending different functions keep both, ours first, and the file parses."""
    result = _merge(s)
    assert result.clean, result.conflicts
    assert result.strategy == "entity"
    assert result.content == s.expected
    assert _parses(s, result.content)


@pytest.mark.parametrize("s", _cases("add-at-same-anchor", "add-at-start"))
def test_additions_at_the_same_anchor_are_both_kept_in_a_stable_order(s: Scenario) -> None:
    """Two functions inserted after the same neighbour both land there: ours, then theirs."""
    result = _merge(s)
    assert result.clean, result.conflicts
    assert result.content == s.expected


@pytest.mark.parametrize("s", _cases("modify-a-and-b"))
def test_one_side_modifying_a_and_the_other_b_keeps_both_changes(s: Scenario) -> None:
    """Edits to two different functions are both taken."""
    result = _merge(s)
    assert result.clean, result.conflicts
    assert result.content == s.expected


@pytest.mark.parametrize("s", _cases("modify-a-different-lines"))
def test_both_modifying_a_on_different_lines_merges_inside_a(s: Scenario) -> None:
    """Both sides editing different lines of one function merge cleanly inside it."""
    result = _merge(s)
    assert result.clean, result.conflicts
    assert result.strategy == "entity"
    assert result.content == s.expected


@pytest.mark.parametrize("s", _cases("modify-a-same-line"))
def test_both_modifying_the_same_line_of_a_is_a_conflict_naming_a(s: Scenario) -> None:
    """Both sides changing one line of a function conflict, with markers naming it."""
    result = _merge(s)
    assert not result.clean
    [conflict] = result.conflicts
    assert conflict.label == s.conflict_entity
    assert conflict.reason == "both-modified"
    assert f"<<<<<<< ours ({s.conflict_entity})".encode() in result.content
    assert f">>>>>>> theirs ({s.conflict_entity})".encode() in result.content
    # The hunk is the one disputed line, not the whole function.
    [hunk] = conflict.hunks
    assert hunk.ours.count("\n") == 1 and hunk.theirs.count("\n") == 1


@pytest.mark.parametrize("s", _cases("modify-delete"))
def test_modify_delete_is_a_conflict_naming_the_entity(s: Scenario) -> None:
    """Ours changing a function theirs deleted is a conflict that keeps ours' version."""
    result = _merge(s)
    assert not result.clean
    [conflict] = result.conflicts
    assert (conflict.label, conflict.reason) == (s.conflict_entity, "modify-delete")
    assert conflict.hunks[0].theirs == ""
    assert f">>>>>>> theirs ({s.conflict_entity}, deleted)".encode() in result.content


@pytest.mark.parametrize("s", _cases("add-add-same-name"))
def test_both_adding_the_same_name_differently_is_a_conflict(s: Scenario) -> None:
    """Two different functions added under one name collide."""
    result = _merge(s)
    assert [(c.label, c.reason) for c in result.conflicts] == [(s.conflict_entity, "both-added")]


@pytest.mark.parametrize("s", _cases("does-not-parse"))
def test_a_file_that_does_not_parse_falls_back_to_a_line_merge(s: Scenario) -> None:
    """A syntax error in the base sends the file to the plain line merge, which still merges."""
    result = _merge(s)
    assert result.strategy == "line"
    assert result.note == f"base does not parse as {s.lang.name}"
    assert result.clean
    assert result.content == s.expected


@pytest.mark.parametrize("s", _cases("class-members-added", "imports-added"))
def test_nested_additions_inside_one_container_are_both_kept(s: Scenario) -> None:
    """Members added to one class/struct, or imports to one list, by both sides are unioned."""
    result = _merge(s)
    assert result.clean, result.conflicts
    assert result.content == s.expected
    assert _parses(s, result.content)


@pytest.mark.parametrize("s", _cases("signature-edit-and-add-above-it"))
def test_an_edit_next_to_an_addition_is_not_a_conflict(s: Scenario) -> None:
    """A signature edit right below the other side's new function merges cleanly."""
    result = _merge(s)
    assert result.clean, result.conflicts
    assert result.content == s.expected


@pytest.mark.parametrize("s", _cases("delete-and-add-next-to-it"))
def test_a_deletion_next_to_an_addition_is_not_a_conflict(s: Scenario) -> None:
    """A function deleted by one side and a new one added right after it by the other: both."""
    result = _merge(s)
    assert result.clean, result.conflicts
    assert result.content == s.expected


@pytest.mark.parametrize("s", _cases("rename-and-edit-body"))
def test_a_rename_on_one_side_takes_the_body_edit_of_the_other(s: Scenario) -> None:
    """A function renamed by ours and edited by theirs is one function, renamed and edited."""
    result = _merge(s)
    assert result.clean, result.conflicts
    assert result.content == s.expected


@pytest.mark.parametrize("s", _cases("both-rename-differently"))
def test_two_different_renames_of_one_function_conflict(s: Scenario) -> None:
    """Two renames of one function collide under its base name instead of both surviving."""
    result = _merge(s)
    assert [(c.label, c.reason) for c in result.conflicts] == [(s.conflict_entity, "both-modified")]


def test_every_scenario_kind_covers_every_language() -> None:
    """Each language gets the same scenario kinds, so no language is tested less."""
    kinds = {lang.name: [s.kind for s in scenarios(lang)] for lang in LANGS}
    assert len({tuple(k) for k in kinds.values()}) == 1
    assert set(kinds) == {"python", "javascript", "typescript", "go", "rust"}
