"""Every projection `status` and `replay` print goes through one renderer signature."""

from __future__ import annotations

import pytest

from loopbus.render import RENDERERS, render_state
from projections import FOLDS


@pytest.mark.parametrize("fold", FOLDS, ids=lambda f: f.name)
def test_every_fold_renders_its_initial_state_with_and_without_sizes(fold) -> None:  # type: ignore[no-untyped-def]
    """`status` hands a paged view's totals as ``sizes``: a renderer that does not take them
    crashes the command for that projection (it did, for builds)."""
    state = fold.initial()
    plain = render_state(fold.name, state)
    paged = render_state(fold.name, state, sizes={})
    assert plain and paged and all(isinstance(line, str) for line in plain + paged)


def test_every_renderer_names_a_fold() -> None:
    """A renderer for a projection that no longer exists would never run."""
    assert set(RENDERERS) <= {fold.name for fold in FOLDS}
