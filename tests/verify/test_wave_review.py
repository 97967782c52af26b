"""The wave review on a real NATS server: the verifier daemon runs the ``[review]
command`` (a stand-in) on a merged wave's union diff, attributes each file to the unit whose
merge changed it, and re-opens only the unit a finding points to."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import msgspec
from dulwich.repo import Repo
from slice_helpers import PLANNER, SYSTEM, commit, make_repo, of_type, plan, unit
from verifykit import finished, green_trunk, loop, until

from bus import Bus
from schemas import FindingRaised, FindingResolved
from schemas.merges import TrunkAdvanced
from schemas.slices import PlanSubmission, UnitDispatched
from schemas.verify import SliceShipJudged
from schemas.wave_review import FLOOR_AXES, UnitReReviewed, WaveReviewed
from workers.gates.signing import Signer

REVIEWER_SCRIPT = r"""
import json, sys
answers, log = sys.argv[1], sys.argv[2]
doc = json.load(sys.stdin)
with open(log, "a") as fh:
    fh.write(json.dumps(doc) + "\n")
spec = json.load(open(answers))
print(json.dumps(spec["wave"] if "wave" in doc else spec["rereview"]))
"""

WAVE_VERDICT = {
    "verdict": "reject",
    "findings": [
        {
            "target": {"type": "code", "path": "src/rate.py", "start": 1, "end": 1},
            "severity": "high",
            "message": "the rate is applied twice once the cache is in",
        }
    ],
}
APPROVE = {"verdict": "approve"}


def stand_in(agent_dir: Path) -> tuple[str, Path]:
    folder = agent_dir / "reviewer"
    folder.mkdir()
    folder.chmod(0o777)
    script, data, log = folder / "review.py", folder / "data.json", folder / "calls.jsonl"
    script.write_text(REVIEWER_SCRIPT)
    data.write_text(json.dumps({"wave": WAVE_VERDICT, "rereview": APPROVE}))
    log.touch()
    for path, mode in ((script, 0o644), (data, 0o644), (log, 0o666)):
        path.chmod(mode)
    return f"{sys.executable} {script} {data} {log}", log


async def test_a_wave_review_finding_reopens_exactly_the_unit_it_points_to(
    bus: Bus, project: str, tmp_path: Path, signer: Signer, agent_dir: Path
) -> None:
    """A changes a migration, B the rate module; the wave review sees both in one diff with
    each file attributed to its unit, the migration adds the data axis, and its finding on
    B's file re-opens B alone: B's own diff is reviewed again (approved, the finding is
    resolved), A is never re-reviewed, the wave is not reviewed twice, and the slice closes."""
    command, calls = stand_in(agent_dir)
    path = tmp_path / "repo"
    toml = (
        f'[project]\nid = "{project}"\n\n'
        f'[[check]]\nid = "boot"\ncommand = "{sys.executable} -c \'print(1)\'"\n\n'
        f'[review]\ncommand = "{command}"\nroster = ["r1"]\nwave = true\n\n'
        f'[agents]\nwritable = ["{agent_dir}"]\n'
    )
    make_repo(path, {"loopbus.toml": toml, "src/rate.py": "RATE = 1\n"})
    files = {"A": "migrations/0001_rates.sql", "B": "src/rate.py"}
    texts = {"A": "ALTER TABLE rates ADD cached int;\n", "B": "RATE = 2\n"}
    async with loop(bus, project, path, signer, verify=False, wave_review=True):
        units = [unit(u, files=[f]) for u, f in files.items()]
        await bus.publish(PlanSubmission(project=project, actor=PLANNER, plan=plan("S1", *units)))
        await until(bus, project, lambda e: len(of_type(e, UnitDispatched)) == 2)
        for unit_id, name in files.items():
            previous = _head(path)
            merge = commit(path, {name: texts[unit_id]}, message=f"merge {unit_id}")
            await bus.publish(_advanced(project, unit_id, merge, previous, path))
            if unit_id == "B":
                for event in green_trunk(signer, project, path, merge):
                    await bus.publish(event)
            for event in finished(project, unit_id, merge):
                await bus.publish(event)
        events, _ = await until(bus, project, lambda e: bool(of_type(e, SliceShipJudged)))
    [review] = of_type(events, WaveReviewed)
    assert review.attribution == {"migrations/0001_rates.sql": "A", "src/rate.py": "B"}
    assert review.axes == [*FLOOR_AXES, "data"]
    assert [t.row for t in review.triggers] == ["migration"]
    assert review.reopened == ["B"] and review.verdict == "reject"
    [found] = [f for f in of_type(events, FindingRaised) if f.id in review.findings]
    assert found.unit == "B" and found.owner == "builder:B"
    [again] = of_type(events, UnitReReviewed)
    assert again.unit == "B" and again.verdict == "approve" and again.answers == [found.id]
    assert [r.finding for r in of_type(events, FindingResolved)] == [found.id]
    [judged] = of_type(events, SliceShipJudged)
    assert not any("wave-review" in r for r in judged.reasons), judged.reasons

    wave_doc, unit_doc = [json.loads(line) for line in calls.read_text().splitlines()]
    assert [(h["file"], h["unit"]) for h in wave_doc["wave"]["hunks"]] == [
        ("migrations/0001_rates.sql", "A"),
        ("src/rate.py", "B"),
    ]
    assert "src/rate.py" in unit_doc["diff"] and "migrations/" not in unit_doc["diff"]
    assert unit_doc["rereview"]["wave_findings"] == [WAVE_VERDICT["findings"][0]["message"]]


def _head(path: Path) -> str:
    with Repo(str(path)) as repo:
        return repo.head().decode()


def _advanced(project: str, unit_id: str, merge: str, previous: str, path: Path) -> Any:
    with Repo(str(path)) as repo:
        tree = repo[merge.encode()].tree.decode()  # type: ignore[attr-defined]
    return TrunkAdvanced(
        project=project,
        actor=SYSTEM,
        trunk="main",
        unit=unit_id,
        commit=merge,
        merge=merge,
        tree=tree,
        previous=previous,
        cause=msgspec.json.encode(unit_id).decode(),
    )
