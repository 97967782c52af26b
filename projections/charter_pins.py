"""A slice's contract against the charter's pinned test files. Pure.

A charter criterion given with its ``source`` pins its test's whole file before the file
exists. A contract that would write that file otherwise lands a test that can never meet
its criterion (the charter daemon compares trunk's file with the pin), so the plan is
refused before it is proposed and the planner is re-asked with the reason. The file is
composed the way the merger's contract commit composes it: each criterion's text after
the one before (``workers/gates/contract.py``).
"""

from schemas.charter import Charter
from schemas.criterion_source import module_digest, source_digest
from schemas.slices import SlicePlan


def contract_pin_problems(plan: SlicePlan, charter: Charter | None) -> list[str]:
    """One line per charter-pinned test file the contract would write otherwise."""
    if charter is None or plan.contract is None:
        return []
    written: dict[str, str] = {}
    first: dict[str, int] = {}
    for index, new in enumerate(plan.contract.criteria):
        path = new.test.split("::", 1)[0]
        body = new.text.strip("\n") + "\n"
        written[path] = written[path].rstrip("\n") + "\n\n\n" + body if path in written else body
        first.setdefault(path, index)
    problems: list[str] = []
    for criterion in charter.criteria:
        path = criterion.test.split("::", 1)[0] if criterion.test else ""
        source = charter.source_of(criterion.test) if criterion.test else ""
        if not source or path not in written:
            continue
        if module_digest(written.pop(path)) != source_digest(source, criterion.test):
            problems.append(
                f"contract.criteria[{first[path]}] ({path}): the charter's criterion "
                f"{criterion.id!r} pins this whole file; write it as the charter's source "
                "gives it (brief.charter.criteria), or its criteria can never be met"
            )
    return problems
