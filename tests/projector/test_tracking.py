"""The projector sees every change a fold makes: on generated histories that touch every
projection, the values each flush writes turn what KV held into exactly the view of the
state folded so far (no server: the flush's writes are applied to a dict)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st

from bus import Record
from bus.view_layout import key_of, layout_of, pieces, view_prefix
from bus.views import RECENT_KEY
from projections import FOLDS, Fold, fold_events
from schemas import Event, decode_event, encode_event, subject_of
from workers.projector.core import Projector

from .histories import histories

PROJECT = "p"


def full_view(projector: Projector) -> dict[str, bytes]:
    """Every value of every view the projector holds, cut from its states from scratch."""
    found: dict[str, bytes] = {}
    for view in projector.views.values():
        prefix = view_prefix(view.project, view.fold.name)
        for piece in pieces(view.root, view.state, view.seq, ()):
            body = piece.body
            if not piece.path:  # the summary: its bottom-entry counts are the writer's own
                continue
            found[key_of(prefix, piece.tokens)] = body
    return found


def flush_into(projector: Projector, kv: dict[str, bytes]) -> None:
    _flush, writes = projector.capture()
    for write in writes:
        if write.body is None:
            kv.pop(write.key, None)
        else:
            kv[write.key] = write.body


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_flushed_values_always_equal_the_view_of_the_folded_state(data: st.DataObject) -> None:
    """Flushing at random points (after every event, or after several), the values written
    so far are exactly the view cut from the folded states; and the tracked states equal
    a plain replay's."""
    events: list[Event] = data.draw(histories(PROJECT))
    assert [decode_event(encode_event(e)) for e in events] == events, "storable events only"
    flush_after = data.draw(st.sets(st.integers(0, len(events) - 1)))
    projector = Projector(store=None)  # type: ignore[arg-type]
    kv: dict[str, bytes] = {}
    for seq, event in enumerate(events, start=1):
        projector.apply(Record(seq=seq, subject=subject_of(event), time=None, event=event))
        if seq - 1 in flush_after or seq == len(events):
            flush_into(projector, kv)
            written = {
                k: v for k, v in kv.items() if k.count(".") > 2 and not k.endswith(RECENT_KEY)
            }
            assert written == full_view(projector)
    replayed = fold_events(events)[PROJECT]
    for fold in FOLDS:
        tracked = projector.views[(PROJECT, fold.name)].state
        assert fold.encode(tracked) == fold.encode(replayed[fold.name]), fold.name
        summary = kv[view_prefix(PROJECT, fold.name)]
        expected = next(pieces(layout_of(fold.state_type), replayed[fold.name], len(events)))
        assert summary == expected.body, f"{fold.name} summary (sizes and head)"


@pytest.mark.parametrize("fold", FOLDS, ids=lambda fold: fold.name)
def test_every_projection_is_touched_by_the_generated_histories(fold: Fold[Any]) -> None:
    """The generator reaches every projection (a fold it never changes is not tested).

    `find` searches the generator's own distribution until one history changes the fold,
    with no example database and no shrinking, so the answer does not hang on a lucky
    batch (`.example()` draws from one small cached batch and once missed six folds)."""

    def touches(events: list[Event]) -> bool:
        state = fold_events(events)[PROJECT][fold.name]
        return bool(fold.encode(state) != fold.encode(fold.initial()))

    # As many tries as the property test above draws: a fold its 300 histories would
    # rarely reach is not covered by it (each fold is reached by at least 9% of them).
    quick = settings(database=None, max_examples=300, deadline=None, phases=[Phase.generate])
    assert touches(find(histories(PROJECT), touches, settings=quick))
