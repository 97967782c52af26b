"""The view layout reads each field's kind itself; msgspec.inspect is the reference.

`bus.view_layout` classifies field types one level deep instead of asking
`msgspec.inspect.type_info` for the whole type graph (a start-up cost of every command
that reads views). A layout that differed from the one derived through msgspec's own
description would cut a state at other places than before: a reader and a writer of
different versions would disagree on keys. These tests derive the layout the old way
and require the same tree, for every fold's state and for the type forms the shortcut
has to see through.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, NewType

import msgspec
import msgspec.inspect as mi
import pytest

from bus.view_layout import Coll, Node, layout_of
from projections import FOLDS


def _reference_node(info: mi.StructType, top: bool) -> Node:
    node = Node(cls=info.cls, inline={})
    for f in info.fields:
        node.names[f.name] = f.encode_name
        kind = f.type
        if isinstance(kind, mi.DictType) and (
            top or isinstance(kind.value_type, mi.StructType | mi.DictType)
        ):
            node.colls[f.name] = _reference_coll(kind)
        elif isinstance(kind, mi.ListType) and top:
            node.lists.add(f.name)
        elif isinstance(kind, mi.StructType) and top and _cut(_reference_node(kind, True)):
            node.subs[f.name] = _reference_node(kind, True)
        else:
            node.inline[f.name] = f.encode_name
    return node


def _reference_coll(info: mi.DictType) -> Coll:
    value = info.value_type
    if isinstance(value, mi.DictType):
        return Coll(entry=_reference_coll(value))
    if isinstance(value, mi.StructType):
        node = _reference_node(value, False)
        return Coll(entry=node if _cut(node) else None)
    return Coll(entry=None)


def _cut(node: Node) -> bool:
    return bool(node.colls or node.lists or node.subs)


def reference_layout(state_type: type) -> Node:
    info = mi.type_info(state_type)
    assert isinstance(info, mi.StructType)
    return _reference_node(info, True)


def shape(layout: Node | Coll | None) -> Any:
    """A layout as plain data, to compare two trees."""
    if layout is None:
        return None
    if isinstance(layout, Coll):
        return ("coll", shape(layout.entry))
    return (
        "node",
        layout.cls,
        dict(layout.inline),
        dict(layout.names),
        sorted(layout.lists),
        {name: shape(coll) for name, coll in layout.colls.items()},
        {name: shape(sub) for name, sub in layout.subs.items()},
    )


@pytest.mark.parametrize("fold", FOLDS, ids=lambda fold: fold.name)
def test_every_fold_is_cut_as_msgspec_describes_its_state(fold: Any) -> None:
    """The shallow classifier and msgspec.inspect give each fold the same layout."""
    assert shape(layout_of(fold.state_type)) == shape(reference_layout(fold.state_type))


UnitId = NewType("UnitId", str)


class Item(msgspec.Struct):
    name: str
    tags: dict[str, int] = {}


class Leaf(msgspec.Struct):
    size: int = 0


class Inner(msgspec.Struct):
    items: dict[str, Item] = {}
    count: int = 0


class Odd(msgspec.Struct, rename="camel"):
    by_unit: Annotated[dict[UnitId, Item], msgspec.Meta(min_length=0)] = {}
    described: Annotated[dict[str, Item], msgspec.Meta(description="kept whole")] = {}
    read_only: Mapping[str, Leaf] = {}
    nested: dict[str, dict[str, Item]] = {}
    seq: Sequence[int] = ()
    maybe: dict[str, Item] | None = None
    inner: Inner = msgspec.field(default_factory=Inner)
    flat: Leaf = msgspec.field(default_factory=Leaf)
    plain: dict[str, int] = {}
    items: list[Item] = []
    alias: UnitId = UnitId("u")


def test_the_type_forms_a_state_may_use_are_cut_alike() -> None:
    """Each type form a fold state uses today is classified as msgspec.inspect does."""
    # Annotated (with a constraint, and with a description), NewType, Mapping,
    # Sequence, an optional dict (kept whole), a Struct field with and without
    # collections, a renamed field: each as msgspec sees it.
    got = layout_of(Odd)
    assert shape(got) == shape(reference_layout(Odd))
    # And the cuts themselves, so that the comparison above cannot pass on two empty
    # trees: the optional dict stays in the head, the Struct with collections is cut.
    assert set(got.colls) == {"by_unit", "read_only", "nested", "plain"}
    assert got.lists == {"seq", "items"}
    assert set(got.subs) == {"inner"}
    assert {"maybe", "flat", "alias", "described"} <= set(got.inline)
    assert got.names["by_unit"] == "byUnit"
