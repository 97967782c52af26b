"""The merger's verdicts come after the gate results they name, on the log itself.

The gate library publishes nothing: the merger's trunk check returns the suite's records
and then its verdict from the shell's effect, and the candidate's records come ahead of its
verdict in the decision's intents; the kernel publishes in order and stops at the first
failure. So a reader following the log never meets a verdict whose results are not there
yet (the gate cache, a projection, an auditor replaying the log would otherwise have to
wait or guess).
"""

from __future__ import annotations

from merger_scene import Scene, make_trunk

from bus import read
from schemas import project_subjects
from schemas.gates import GateResultRecorded, GateSuiteCompleted
from schemas.merges import CandidateTested

BROKEN = """\
from app import total


def test_total_of_nothing():
    assert total([]) == 1
"""


async def test_every_verdict_follows_the_results_and_the_suite_it_names(scene: Scene) -> None:
    """Trunk's first check, U1's green candidate, trunk's check after U1 landed (its
    trunk-only check runs fresh there) and U2's red candidate: each verdict's suite and
    every result it names sit earlier on the log than the verdict."""
    base = make_trunk(scene, trunk_only=True)
    u1 = scene.repo.commit(base, {"helper.py": "def helper():\n    return 1\n"}, "helper")
    u2 = scene.repo.commit(base, {"tests/test_nothing.py": BROKEN}, "a red test")
    for unit, head in (("U1", u1), ("U2", u2)):
        await scene.ready_unit(unit, head)
        await scene.approve(unit, head)
    await scene.start(window=1)
    await scene.until(
        lambda: scene.state_of("U1") == "done" and scene.units.units["U2"].by == "returned"
    )

    where: dict[str, int] = {}
    verdicts: list[tuple[int, CandidateTested]] = []
    async for record in read(scene.bus, subjects=[project_subjects(scene.project)]):
        event = record.event
        if isinstance(event, GateResultRecorded | GateSuiteCompleted):
            where.setdefault(event.id, record.seq)
        elif isinstance(event, CandidateTested):
            verdicts.append((record.seq, event))

    kinds = {(v.stage, v.unit, v.outcome) for _seq, v in verdicts}
    assert {("trunk", None, "pass"), ("candidate", "U1", "pass")} <= kinds, kinds
    assert {("trunk", "U1", "pass"), ("candidate", "U2", "fail")} <= kinds, kinds
    fresh_on_trunk = [
        c for _s, v in verdicts if v.stage == "trunk" for c in v.checks if not c.cached
    ]
    assert fresh_on_trunk, "no trunk check ran fresh: the trunk path was not exercised"
    for seq, verdict in verdicts:
        named = [verdict.suite, *(check.result for check in verdict.checks)]
        assert None not in named and verdict.checks, verdict
        late = [
            (name, where.get(name)) for name in named if name is None or where.get(name, seq) >= seq
        ]
        assert late == [], (
            f"{verdict.stage} verdict at seq {seq} ({verdict.unit}, {verdict.outcome}) names "
            f"results not on the log before it: {late}"
        )
