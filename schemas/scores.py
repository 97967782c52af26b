"""Scores per axis, and the floor each axis must reach for a slice to ship.

A reviewer or a verifier grades what it saw on a fixed set of axes, 0 to 10. Each axis
has a floor (``[ship] floors`` in ``loopbus.toml`` overrides the defaults below); a slice
ships only when every axis was scored and every score reached its floor. An axis nobody
scored is *not* a met floor: silence is never a pass.

The defaults follow the seeds' evaluator floors: regressions on what already worked are
held to the highest bar, then correctness and keeping to the plan, then the testing
approach.
"""

from typing import Annotated, Literal, get_args

import msgspec

Axis = Literal["correctness", "testing_strategy", "plan_adherence", "regression_surface"]
AXES: tuple[Axis, ...] = get_args(Axis)
"""Every graded axis, in the order reports list them."""

DEFAULT_FLOORS: dict[str, int] = {
    "correctness": 8,
    "testing_strategy": 7,
    "plan_adherence": 8,
    "regression_surface": 9,
}
"""The lowest score each axis may have for a slice to ship (``[ship] floors`` overrides)."""

Grade = Annotated[int, msgspec.Meta(ge=0, le=10)]


class AxisScore(msgspec.Struct, frozen=True, kw_only=True):
    """One axis graded 0 to 10, with the grader's reason in a sentence."""

    axis: Axis
    score: Grade
    why: str = ""


def below_floor(scores: list[AxisScore], floors: dict[str, int], who: str = "scores") -> list[str]:
    """Each floor not met, in words: an axis scored below its floor, or never scored.

    When one axis was scored more than once (two waves, two graders), the lowest counts."""
    lowest: dict[str, int] = {}
    for graded in scores:
        lowest[graded.axis] = min(graded.score, lowest.get(graded.axis, graded.score))
    out: list[str] = []
    for axis in AXES:
        floor = floors.get(axis, DEFAULT_FLOORS[axis])
        if axis not in lowest:
            out.append(f"{who}: {axis} was not scored (floor {floor})")
        elif lowest[axis] < floor:
            out.append(f"{who}: {axis} scored {lowest[axis]}, below its floor {floor}")
    return out
