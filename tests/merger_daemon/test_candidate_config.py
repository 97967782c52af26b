"""A merge candidate is judged with the gate configuration of the commit it sits on (trunk,
or the candidate ahead of it), never with its own: a unit may clear its own criteria from
``pending`` and add a check, and any other edit to ``loopbus.toml`` makes the candidate red
with the field named. Real nats-server, real repository, real pytest runs."""

from __future__ import annotations

from merger_scene import Scene, base_files, make_trunk

from schemas import FindingRaised
from schemas.merges import CandidateTested, MergeConflicted, TrunkAdvanced

BROKEN_TOTAL = "def total(items):\n    return 0\n"


def _candidate_runs(events: list[object], unit: str) -> list[CandidateTested]:
    return [
        e
        for e in events
        if isinstance(e, CandidateTested) and e.stage == "candidate" and e.unit == unit
    ]


async def _queue_and_wait_returned(scene: Scene, head: str, **plan: tuple[str, ...]) -> None:
    await scene.ready_unit("U1", head, **plan)
    await scene.approve("U1", head)
    await scene.start()
    await scene.until(lambda: scene.units.units["U1"].by == "returned")


async def _refusal(scene: Scene) -> tuple[CandidateTested, FindingRaised]:
    """U1's one candidate result and the trunk-red finding its author got."""
    events = await scene.events()
    [red] = _candidate_runs(events, "U1")
    [finding] = [e for e in events if isinstance(e, FindingRaised) and e.cls == "trunk-red"]
    assert [e for e in events if isinstance(e, TrunkAdvanced)] == []
    return red, finding


def _config_message(red: CandidateTested) -> str:
    [refusal] = [f for f in red.failing if f.check == "gate-configuration"]
    return refusal.message


async def test_a_candidate_that_sets_its_red_check_to_true_does_not_merge(scene: Scene) -> None:
    """The unit breaks ``total`` and makes the tests check ``true`` with the exit-code
    parser: the candidate still runs trunk's pytest command (the broken test is named) and
    is red for the edit itself, naming the check; trunk does not move."""
    base = make_trunk(scene)
    own = scene.config().replace(
        'command = "python -m pytest -q -p no:cacheprovider tests"\nparser = "pytest"',
        'command = "true"\nparser = "exit-code"',
    )
    assert own != scene.config()
    head = scene.repo.commit(base, {"app.py": BROKEN_TOTAL, "loopbus.toml": own}, "true")
    await _queue_and_wait_returned(scene, head)

    red, finding = await _refusal(scene)
    assert red.outcome == "fail" and red.base == base
    tests = [f.test for f in red.failing]
    assert "tests/test_total.py::test_total" in tests  # trunk's command ran, not 'true'
    assert "check 'tests'" in _config_message(red)
    assert "edited (command, parser)" in _config_message(red)
    assert "gate-configuration" in finding.evidence["failing_tests"]
    assert scene.repo.trunk() == base


LABELLED_APP = "def total(items):\n    return sum(items)\n\n\ndef label():\n    return 'total'\n"
LABEL_TEST = "import app\n\n\ndef test_label():\n    assert app.label() == 'total'\n"
INTEGRATION_CHECK = """
[[check]]
id = "integration"
command = "python -m pytest -q -p no:cacheprovider integration"
parser = "pytest"
timeout = 120
"""


async def test_a_candidate_that_moves_a_check_to_trunk_only_still_runs_it(
    scene: Scene,
) -> None:
    """Trunk runs integration on candidates; the unit breaks what integration checks and
    declares ``[merge] trunk_only = ["integration"]``. Trunk's table decides: integration
    runs on the candidate (and fails), and the edit to [merge] is refused by name."""
    trunk_config = scene.config() + INTEGRATION_CHECK
    files = {
        **base_files(scene),
        "loopbus.toml": trunk_config,
        "app.py": LABELLED_APP,
        "integration/test_label.py": LABEL_TEST,
    }
    base = scene.repo.commit(None, files, "base")
    scene.repo.set_trunk(base)
    own = trunk_config + '\n[merge]\ntrunk_only = ["integration"]\n'
    broken = LABELLED_APP.replace("'total'", "'sum'")
    head = scene.repo.commit(base, {"app.py": broken, "loopbus.toml": own}, "later")
    await _queue_and_wait_returned(scene, head)

    red, _finding = await _refusal(scene)
    assert red.outcome == "fail"
    assert sorted(c.check for c in red.checks) == ["integration", "tests"]
    assert "integration/test_label.py::test_label" in [f.test for f in red.failing]
    assert "merge: [merge] changed" in _config_message(red)
    assert scene.repo.trunk() == base


MEAN = "tests/test_mean.py::test_mean"
MEAN_TEST = "from app import mean\n\n\ndef test_mean():\n    assert mean([1, 3]) == 2\n"
MEAN_APP = "def total(items):\n    return sum(items)\n\n\ndef mean(xs):\n    return 0\n"
SMOKE_CHECK = """
[[check]]
id = "smoke"
command = "python -c 'import app'"
parser = "exit-code"
"""


async def test_clearing_its_own_criterion_and_adding_a_check_merges(scene: Scene) -> None:
    """The unit implements its pending criterion, clears its marker and adds a check: the
    allowed edits. The candidate runs the new check, is green, and lands with the file."""
    marker = f'parser = "pytest"\npending = ["{MEAN}"]'
    pending = scene.config().replace('parser = "pytest"', marker)
    assert pending != scene.config()
    files = {
        **base_files(scene),
        "loopbus.toml": pending,
        "app.py": MEAN_APP,
        "tests/test_mean.py": MEAN_TEST,
    }
    base = scene.repo.commit(None, files, "base")
    scene.repo.set_trunk(base)
    done = MEAN_APP.replace("return 0", "return sum(xs) / len(xs)")
    cleared = scene.config() + SMOKE_CHECK
    head = scene.repo.commit(base, {"app.py": done, "loopbus.toml": cleared}, "mean")
    await scene.ready_unit("U1", head, criteria=(MEAN,))
    await scene.approve("U1", head)
    await scene.start()
    await scene.until(lambda: scene.state_of("U1") == "done")

    [green] = _candidate_runs(await scene.events(), "U1")
    assert green.outcome == "pass" and green.failing == []
    assert sorted(c.check for c in green.checks) == ["smoke", "tests"]
    assert scene.repo.files(scene.repo.trunk())["loopbus.toml"] == cleared


PEAK = "tests/test_peak.py::test_peak"
PEAK_TEST = "from app import peak\n\n\ndef test_peak():\n    assert peak([1, 3]) == 3\n"
BOTH_APP = MEAN_APP + "\n\ndef peak(xs):\n    return 0\n"


async def test_two_units_clearing_their_own_entries_of_one_pending_line_both_merge(
    scene: Scene,
) -> None:
    """``pending = [MEAN, PEAK]`` on one line; one unit clears MEAN, the other PEAK (each
    implementing its function): the second candidate merges the list by element, nothing
    conflicts, both units are done and trunk's list is empty."""
    one_line = f'parser = "pytest"\npending = ["{MEAN}", "{PEAK}"]'
    config = scene.config().replace('parser = "pytest"', one_line)
    files = {
        **base_files(scene),
        "loopbus.toml": config,
        "app.py": BOTH_APP,
        "tests/test_mean.py": MEAN_TEST,
        "tests/test_peak.py": PEAK_TEST,
    }
    base = scene.repo.commit(None, files, "base")
    scene.repo.set_trunk(base)
    mean = BOTH_APP.replace("def mean(xs):\n    return 0", "def mean(xs):\n    return sum(xs) / 2")
    peak = BOTH_APP.replace("def peak(xs):\n    return 0", "def peak(xs):\n    return max(xs)")
    heads = {
        "U1": scene.repo.commit(
            base, {"app.py": mean, "loopbus.toml": config.replace(f'"{MEAN}", ', "")}, "mean"
        ),
        "U2": scene.repo.commit(
            base, {"app.py": peak, "loopbus.toml": config.replace(f', "{PEAK}"', "")}, "peak"
        ),
    }
    for (unit, head), criterion in zip(heads.items(), (MEAN, PEAK), strict=True):
        await scene.ready_unit(unit, head, criteria=(criterion,))
        await scene.approve(unit, head)
    await scene.start()
    await scene.until(lambda: scene.state_of("U1") == "done" and scene.state_of("U2") == "done")

    assert await scene.events(MergeConflicted) == []
    merged = scene.repo.files(scene.repo.trunk())
    assert "pending = []" in merged["loopbus.toml"]
    assert "return sum(xs) / 2" in merged["app.py"] and "return max(xs)" in merged["app.py"]
