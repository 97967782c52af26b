"""How alike two entity texts are (rename and edit detection in the entity merge)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from workers.entity_merge.matching import similarity

_SHORT_TEXT = st.binary(max_size=30).map(lambda data: data.replace(b"\n", b" "))


@settings(max_examples=500, deadline=None)
@given(old=_SHORT_TEXT, new=_SHORT_TEXT, at_least=st.sampled_from([0.3, 0.6, 0.9]))
def test_a_threshold_only_cuts_short_what_could_not_reach_it(
    old: bytes, new: bytes, at_least: float
) -> None:
    """With `at_least`, a score reaches the threshold exactly when the full score
    does, and a score that reaches it is the full score."""
    full = similarity(old, new)
    bounded = similarity(old, new, at_least=at_least)
    assert (bounded >= at_least) == (full >= at_least)
    if full >= at_least:
        assert bounded == full


def test_a_rename_of_a_short_entity_still_scores_by_characters() -> None:
    """One line renamed scores as difflib does; an unrelated one falls short."""
    renamed = similarity(b"type IToastDemo = Props;\n", b"type ToastDemo = Props;\n", at_least=0.6)
    assert renamed > 0.9
    assert similarity(b"import a from 'x';\n", b"const zz = 42;\n", at_least=0.6) < 0.6
