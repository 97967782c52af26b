"""The event catalogue lists every kind the union can decode."""

from __future__ import annotations

from pathlib import Path

import pytest

from schemas import KINDS

CATALOGUE = Path(__file__).resolve().parents[2] / "docs" / "events.md"


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_is_in_the_catalogue(kind: str) -> None:
    """docs/events.md names every event kind (a kind nobody documented is a kind nobody reads)."""
    assert f"`{kind}`" in CATALOGUE.read_text()
