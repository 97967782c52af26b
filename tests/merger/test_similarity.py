"""How alike two entity texts are (rename and edit detection in the entity merge)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from workers.entity_merge.matching import similarity

# A small alphabet, so that texts share characters in other orders (where the bound
# and the full score part), with up to three lines (still "short").
_SHORT_TEXT = st.text(alphabet="ab c\t\r", max_size=12).map(str.encode)
_SHORT_LINES = st.lists(_SHORT_TEXT, min_size=1, max_size=3).map(b"\n".join)


@settings(max_examples=500, deadline=None)
@given(old=_SHORT_LINES, new=_SHORT_LINES, at_least=st.sampled_from([0.3, 0.6, 0.9]))
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


def test_characters_alike_in_another_order_get_the_full_score() -> None:
    """The same characters mostly, in another order: the bound (0.75) reaches the
    threshold, so difflib's own score (0.25) is what comes back."""
    assert similarity(b"abcd", b"dcbz", at_least=0.6) == 0.25
