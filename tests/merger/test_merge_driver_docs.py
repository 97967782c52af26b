"""The Python examples in docs/merge-driver.md run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "merge-driver.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.DOTALL)


def test_the_doc_has_python_examples() -> None:
    """The guide keeps at least its two API examples."""
    assert len(BLOCKS) >= 2


@pytest.mark.usefixtures("fresh_registry")
@pytest.mark.parametrize("code", [pytest.param(b, id=f"block-{i}") for i, b in enumerate(BLOCKS)])
def test_python_example_runs(code: str) -> None:
    """Each ```python block executes without error, its asserts included."""
    exec(compile(code, str(DOC), "exec"), {"__name__": "docs_example"})
