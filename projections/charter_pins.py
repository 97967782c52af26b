"""A slice's contract against the charter's pinned tests. Pure.

A charter criterion given with its ``source`` pins its test's function before the test
exists. A contract that writes that test with another function would land a test that can
never meet its criterion (the charter daemon compares the function on trunk with the pin),
so the plan is refused before it is proposed and the planner is re-asked with the reason.
"""

from __future__ import annotations

from loopbus.schemas.charter import Charter
from loopbus.schemas.criterion_source import source_digest
from loopbus.schemas.slices import SlicePlan


def contract_pin_problems(plan: SlicePlan, charter: Charter | None) -> list[str]:
    """One line per contract criterion whose function is not the one the charter pins."""
    if charter is None or plan.contract is None:
        return []
    pinned = {c.test: c for c in charter.criteria if c.test and c.source}
    problems: list[str] = []
    for index, criterion in enumerate(plan.contract.criteria):
        wanted = pinned.get(criterion.test)
        if wanted is None:
            continue
        if source_digest(criterion.text, criterion.test) != source_digest(
            wanted.source, wanted.test
        ):
            problems.append(
                f"contract.criteria[{index}] ({criterion.test}): the charter's criterion "
                f"{wanted.id!r} pins this test's function; write it as the charter's source "
                "gives it (brief.charter.criteria), or it can never meet the criterion"
            )
    return problems
