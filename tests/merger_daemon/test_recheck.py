"""A red trunk whose inputs changed outside the repository: `trunk recheck` and the red
finding resolving when trunk is green again."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from merger_scene import Scene

from schemas import Actor, FindingRaised, FindingResolved, parse_target
from schemas.merges import CandidateTested, TrunkRecheck


def config(project: str, marker: Path) -> str:
    """One check that passes only once ``marker`` exists: an input outside the repository."""
    probe = "import os, sys; sys.exit(0 if os.path.exists(sys.argv[1]) else 1)"
    return (
        f'[project]\nid = "{project}"\n\n[[check]]\nid = "env"\n'
        f"command = 'python -c \"{probe}\" {marker}'\n"
    )


@pytest.fixture
def marker() -> Iterator[Path]:
    """An input outside the repository that a check can see: a file in the interpreter's
    environment, as a package installed there would be (checks run in the agent sandbox,
    which shows the interpreter's environment and not the rest of the host)."""
    path = Path(sys.prefix) / f"loopbus-recheck-{uuid.uuid4().hex}"
    yield path
    path.unlink(missing_ok=True)


async def test_recheck_gates_trunk_again_and_green_resolves_the_red_finding(
    scene: Scene, marker: Path
) -> None:
    """Trunk red for a reason outside git: an operator's recheck runs its checks again past
    the cache, and trunk green again resolves the red-trunk finding."""
    base = scene.repo.commit(None, {"loopbus.toml": config(scene.project, marker)})
    scene.repo.set_trunk(base)
    await scene.start()
    await scene.until(lambda: scene.merges.trunk.red_findings != [])
    [notice] = [
        f for f in await scene.events(FindingRaised) if f.cls == "trunk-red" and f.unit is None
    ]
    marker.write_text("now it is")
    recheck = TrunkRecheck(project=scene.project, actor=Actor(role="operator", principal="olive"))
    await scene.publish(recheck)
    await scene.until(lambda: scene.merges.trunk.red_findings == [])
    tested = [t for t in await scene.events(CandidateTested) if t.cause == recheck.id]
    assert [t.outcome for t in tested] == ["pass"]
    assert not any(c.cached for c in tested[0].checks)
    [resolved] = [r for r in await scene.events(FindingResolved) if r.finding == notice.id]
    assert "green again" in resolved.why


async def test_a_trunk_run_s_gate_findings_resolve_when_their_check_passes_on_trunk(
    scene: Scene, marker: Path
) -> None:
    """The failing check's own finding from the red trunk run (not only the red-trunk
    notice) is resolved once that check passes on trunk; an operator's gate finding about
    a commit that never was trunk is left alone."""
    base = scene.repo.commit(None, {"loopbus.toml": config(scene.project, marker)})
    elsewhere = scene.repo.commit(base, {"notes.txt": "not on trunk"})
    scene.repo.set_trunk(base)
    stray = FindingRaised(
        project=scene.project,
        actor=Actor(role="system", principal="gate-runner"),
        producer="gate_runner",
        target=parse_target(f"record:commit:{elsewhere}"),
        severity="high",
        criterion="env",
        message="check 'env' failed on a commit an operator gated by hand",
        evidence={"commit": elsewhere, "check": "env"},
    )
    await scene.publish(stray)
    await scene.start()
    await scene.until(lambda: scene.merges.gate_findings.red != {})
    [failed] = [
        f
        for f in await scene.events(FindingRaised)
        if f.producer == "gate_runner" and f.evidence.get("commit") == base
    ]
    assert [(f, w.check) for f, w in scene.merges.gate_findings.red.items()] == [(failed.id, "env")]
    marker.write_text("now it is")
    await scene.publish(
        TrunkRecheck(project=scene.project, actor=Actor(role="operator", principal="olive"))
    )
    await scene.until(lambda: scene.merges.gate_findings.red == {})
    resolved = {r.finding: r.why for r in await scene.events(FindingResolved)}
    assert resolved[failed.id] == f"check env passes on trunk {base[:12]}"
    assert stray.id not in resolved
    assert stray.id in scene.merges.gate_findings.waiting
