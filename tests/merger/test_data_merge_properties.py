"""Whatever two sides do to one JSON or YAML document, a clean merge means the data merge.

The documents are written by `json.dumps` and PyYAML and read back by them, and the data
merge runs on what they read: the merge's own reader (a scanner, the tree-sitter grammar)
never grades itself. A clean result that means anything else — a key picked silently from
one side, an element lost or doubled — fails here.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import yaml
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from workers.entity_merge import merge_file
from workers.entity_merge.toml_merge import merge_value

KEYS = st.sampled_from(["a", "b", "c", "d", "e"])
SCALARS = st.one_of(st.integers(0, 3), st.sampled_from(["x", "y", "z"]), st.booleans())
LEAVES = st.one_of(
    SCALARS, st.lists(st.sampled_from(["p", "q", "r", "s"]), max_size=4, unique=True)
)
DOCS = st.dictionaries(
    KEYS,
    st.one_of(LEAVES, st.dictionaries(KEYS, LEAVES, min_size=1, max_size=3)),
    min_size=1,
    max_size=4,
)


def _edit(data: st.DataObject, doc: dict[str, Any], depth: int = 0) -> dict[str, Any]:
    """`doc` with a few keys changed, deleted or added, and lists grown or shrunk."""
    out = dict(doc)
    for key in list(out):
        action = data.draw(
            st.sampled_from(["keep", "keep", "change", "delete", "descend", "descend"])
        )
        if action == "change":
            out[key] = data.draw(LEAVES)
        elif action == "delete" and len(out) > 1:
            del out[key]
        elif action == "descend" and isinstance(out[key], dict) and depth == 0:
            out[key] = _edit(data, out[key], depth + 1)
        elif action == "descend" and isinstance(out[key], list):
            items = [i for i in out[key] if data.draw(st.booleans()) or len(out[key]) < 2]
            out[key] = items + data.draw(st.lists(st.sampled_from(["t", "u"]), max_size=1))
    if data.draw(st.booleans()):
        out[data.draw(KEYS)] = data.draw(LEAVES)
    return out


def _check(
    data: st.DataObject, path: str, dump: Callable[[Any], str], load: Callable[[str], Any]
) -> None:
    base = data.draw(DOCS)
    ours, theirs = _edit(data, base), _edit(data, base)
    assume(base not in (ours, theirs) and ours != theirs)  # else git needs no driver
    texts = [dump(d) for d in (base, ours, theirs)]
    result = merge_file(*(t.encode() for t in texts), path)
    collisions: list[str] = []
    wanted = merge_value(*(load(t) for t in texts), "", collisions)
    if result.clean:
        assert not collisions, f"clean, but the data collide on {collisions}"
        assert load(result.content.decode()) == wanted


@settings(max_examples=300, deadline=None)
@given(data=st.data(), indent=st.sampled_from([None, 2, 4]))
def test_a_clean_json_merge_means_the_data_merge(data: st.DataObject, indent: int | None) -> None:
    _check(data, "p.json", lambda d: json.dumps(d, indent=indent) + "\n", json.loads)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), flow=st.sampled_from([False, None]))
def test_a_clean_yaml_merge_means_the_data_merge(data: st.DataObject, flow: bool | None) -> None:
    def dump(doc: Any) -> str:
        return str(yaml.safe_dump(doc, sort_keys=False, default_flow_style=flow))

    _check(data, "p.yaml", dump, yaml.safe_load)
