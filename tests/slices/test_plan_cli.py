"""``loopbus plan check|submit`` and the status renderers, run as a user runs them."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from kernelkit import running
from slice_helpers import (
    BUILDER,
    SYSTEM,
    PureDispatcher,
    accepted,
    loopbus_toml,
    make_repo,
    plan,
    transition,
    unit,
)

from bus import Bus, EmbeddedServer, connect, ensure_log, free_port, read
from loopbus.slice_render import render_budgets, render_slices
from projections import budgets
from schemas import project_subjects
from schemas.slices import SliceBudgets, SlicePlanDiscarded
from workers.dispatcher.daemon import Dispatcher
from workers.dispatcher.repo import ProjectRepo

CHAIN_VS_FAN = """
[slice]
id = "S1"
capabilities = ["cli"]

[[unit]]
id = "B"
files = ["src/b.py"]

[[unit]]
id = "A"
files = ["src/a.py"]
""" + "".join(
    f'\n[[unit]]\nid = "{x}"\nfiles = ["src/{x.lower()}.py"]\nblocked_by = ["{b}"]\n'
    for x, b in [("C", "A"), ("D", "C"), ("E", "D"), ("F", "E")] + [(x, "B") for x in "GHIJK"]
)


def loopbus(*args: str, url: str | None = None) -> subprocess.CompletedProcess[str]:
    env = os.environ | ({"LOOPBUS_NATS_URL": url} if url else {})
    return subprocess.run(
        [sys.executable, "-m", "loopbus.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        stdin=subprocess.DEVNULL,
    )


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_check_prints_order_and_waves_as_json(tmp_path: Path) -> None:
    """The chain-versus-fan plan: A is dispatched before B, each wave is one group."""
    done = loopbus("plan", "check", str(write(tmp_path, "plan.toml", CHAIN_VS_FAN)), "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["order"] == ["A", "B", "C", "G", "H", "I", "J", "K", "D", "E", "F"]
    assert doc["waves"] == [["A", "B"], ["C", "G", "H", "I", "J", "K"], ["D"], ["E"], ["F"]]


def test_check_shows_sub_waves_as_their_own_groups(tmp_path: Path) -> None:
    """Units whose owned files overlap come out as separate groups, in dispatch order."""
    text = (
        '[slice]\nid = "S1"\n'
        '[[unit]]\nid = "U1"\nfiles = ["app.py"]\n'
        '[[unit]]\nid = "U2"\nfiles = ["app.py", "cli.py"]\n'
        '[[unit]]\nid = "U3"\nfiles = ["lib/"]\n'
        '[[unit]]\nid = "U4"\nfiles = ["lib/x.py"]\nblocked_by = ["U2"]\n'
    )
    done = loopbus("plan", "check", str(write(tmp_path, "p.toml", text)), "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["waves"] == [["U2", "U3"], ["U1"], ["U4"]]
    assert doc["order"] == ["U2", "U3", "U1", "U4"]
    text_out = loopbus("plan", "check", str(tmp_path / "p.toml"))
    assert "wave 0.0: U2" in text_out.stdout and "wave 0.1: U1" in text_out.stdout


def test_check_counts_agree_with_their_nouns(tmp_path: Path) -> None:
    """One wave is "1 wave", one unit "1 unit" (it printed "3 units in 1 waves")."""
    fan = '[slice]\nid = "S1"\n' + "".join(
        f'[[unit]]\nid = "U{i}"\nfiles = ["m{i}.py"]\n' for i in (1, 2, 3)
    )
    done = loopbus("plan", "check", str(write(tmp_path, "fan.toml", fan)))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("plan S1: 3 units in 1 wave; "), done.stdout
    one = loopbus(
        "plan",
        "check",
        str(write(tmp_path, "one.toml", '[slice]\nid = "S1"\n[[unit]]\nid = "U1"\n')),
    )
    assert one.stdout.startswith("plan S1: 1 unit in 1 wave; "), one.stdout


def test_refused_plan_exits_1_with_one_line_per_problem(tmp_path: Path) -> None:
    """A cycle, an unresolved blocker and a doubly claimed criterion: three lines, exit 1."""
    text = (
        '[slice]\nid = "S1"\n'
        '[[unit]]\nid = "U3"\nblocked_by = ["U5"]\ncriteria = ["t::a"]\n'
        '[[unit]]\nid = "U5"\nblocked_by = ["U3"]\ncriteria = ["t::a"]\n'
        '[[unit]]\nid = "U6"\nblocked_by = ["U9"]\n'
    )
    done = loopbus("plan", "check", str(write(tmp_path, "bad.toml", text)))
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 3, lines
    assert any("U6: blocked_by U9 does not resolve" in line for line in lines)
    assert any("dependency cycle: U3 -> U5 -> U3" in line for line in lines)
    assert any("criterion t::a is claimed by more than one unit: U3, U5" in line for line in lines)
    as_json = loopbus("plan", "check", str(tmp_path / "bad.toml"), "--json")
    assert as_json.returncode == 1 and len(json.loads(as_json.stdout)["problems"]) == 3


@pytest.mark.parametrize(
    ("claims", "code", "says"),
    [
        pytest.param(["t::a", "t::b"], 0, "2 pending criteria", id="all-claimed"),
        pytest.param(["t::a"], 1, "pending criterion t::b is claimed by no unit", id="unclaimed"),
    ],
)
def test_check_against_a_repository(
    tmp_path: Path, claims: list[str], code: int, says: str
) -> None:
    """With --repo every pending criterion of its loopbus.toml must be claimed exactly once."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "loopbus.toml").write_text(loopbus_toml("demo", ["t::a", "t::b"], None))
    quoted = ", ".join(f'"{c}"' for c in claims)
    text = f'[slice]\nid = "S1"\n[[unit]]\nid = "U1"\ncriteria = [{quoted}]\n'
    done = loopbus("plan", "check", str(write(tmp_path, "p.toml", text)), "--repo", str(repo))
    assert done.returncode == code
    assert says in (done.stdout + done.stderr)


def test_json_plan_file_is_read_like_toml(tmp_path: Path) -> None:
    """A *.json plan with the same fields is checked the same way."""
    doc = {
        "slice": {"id": "S1"},
        "unit": [{"id": "A", "files": ["a"]}, {"id": "B", "files": ["b"], "blocked_by": ["A"]}],
    }
    done = loopbus("plan", "check", str(write(tmp_path, "p.json", json.dumps(doc))), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["waves"] == [["A"], ["B"]]


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        pytest.param(["no-such-plan.toml"], 2, "cannot read plan", id="missing-file"),
        pytest.param(["{plan}", "--repo", "{tmp}"], 2, "has no loopbus.toml", id="repo-no-config"),
        pytest.param(
            ["{plan}", "--repo", "{broken}"], 2, "loopbus.toml", id="repo-config-not-toml"
        ),
        pytest.param(
            ["{plan}", "--repo", "{invalid}"], 2, "parser", id="repo-config-invalid-field"
        ),
    ],
)
def test_check_usage_errors_are_one_line(
    tmp_path: Path, args: list[str], code: int, says: str
) -> None:
    """A missing file, or a repository whose loopbus.toml is missing, not TOML or invalid, is
    a usage error: one line, exit 2, no traceback."""
    path = write(tmp_path, "p.toml", CHAIN_VS_FAN)
    broken, invalid = tmp_path / "broken", tmp_path / "invalid"
    for folder in (broken, invalid):
        folder.mkdir()
    (broken / "loopbus.toml").write_text("[project\nid = \n")
    (invalid / "loopbus.toml").write_text(
        '[project]\nid = "demo"\n[[check]]\nid = "tests"\ncommand = "true"\nparser = "nope"\n'
    )
    argv = [a.format(plan=path, tmp=tmp_path, broken=broken, invalid=invalid) for a in args]
    done = loopbus("plan", "check", *argv)
    assert done.returncode == code
    assert says in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr


def test_a_misshapen_plan_also_names_its_cycles_and_unresolved_blockers(tmp_path: Path) -> None:
    """Shape problems do not hide graph problems: a bad field, a cycle and a blocker that
    resolves to no unit are all listed, one line each."""
    text = (
        '[slice]\nid = "S1"\n'
        '[[unit]]\nid = "U3"\ntitle = 3\nblocked_by = ["U5"]\n'
        '[[unit]]\nid = "U5"\nblocked_by = ["U3"]\n'
        '[[unit]]\nid = "U6"\nblocked_by = ["U9"]\n'
    )
    done = loopbus("plan", "check", str(write(tmp_path, "bad.toml", text)))
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 3, lines
    assert any("unit U3: title=3 must be a string" in line for line in lines)
    assert any("dependency cycle: U3 -> U5 -> U3" in line for line in lines)
    assert any("U6: blocked_by U9 does not resolve" in line for line in lines)


async def test_submit_waits_for_the_dispatchers_answer(
    bus: Bus, project: str, nats_url: str, tmp_path: Path
) -> None:
    """``plan submit`` waits for the dispatcher by default: acceptance exits 0, a refusal
    exits 1 with the refusal in one line."""
    good = write(tmp_path, "good.toml", CHAIN_VS_FAN)
    bad = write(
        tmp_path,
        "bad.toml",
        '[slice]\nid = "S2"\n[[unit]]\nid = "X"\nblocked_by = ["Y"]\n[[unit]]\nid = "Y"\n'
        'blocked_by = ["X"]\n',
    )
    repo = tmp_path / "repo"
    make_repo(repo, {"loopbus.toml": loopbus_toml(project, [], None)})
    repos = {project: ProjectRepo(repo)}
    async with running(bus, Dispatcher(bus, projects=[project], repos=repos)):
        ok = await asyncio.to_thread(
            loopbus, "plan", "submit", str(good), "--project", project, "--new", url=nats_url
        )
        refused = await asyncio.to_thread(
            loopbus, "plan", "submit", str(bad), "--project", project, "--wait", "60", url=nats_url
        )
    assert ok.returncode == 0, ok.stderr
    assert "accepted: slice S1" in ok.stdout
    assert refused.returncode == 1, refused.stdout + refused.stderr
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("refused (") and "plan for slice S2" in lines[0]
    assert "dependency cycle: X -> Y -> X" in lines[0]
    before = [r async for r in read(bus, subjects=[project_subjects(project)])]
    again = loopbus("plan", "submit", str(good), "--project", project, url=nats_url)
    assert again.returncode == 2 and "slice 'S1'" in again.stderr, again.stderr
    assert "already has an accepted plan" in again.stderr
    after = [r async for r in read(bus, subjects=[project_subjects(project)])]
    assert len(after) == len(before)  # refused before anything was published
    # A forged discard does not free the slice; the system's does (a re-slice), as the
    # dispatcher judges it, while the old plan's unit ids stay taken.
    forged = SlicePlanDiscarded(project=project, actor=BUILDER, slice="S1", why="mine now")
    await bus.publish(forged)
    still = loopbus("plan", "submit", str(good), "--project", project, url=nats_url)
    assert still.returncode == 2 and "already has an accepted plan" in still.stderr
    await bus.publish(SlicePlanDiscarded(project=project, actor=SYSTEM, slice="S1", why="re-slice"))
    reused = loopbus("plan", "submit", str(good), "--project", project, url=nats_url)
    assert reused.returncode == 2 and "already belongs to slice S1" in reused.stderr
    assert "already has an accepted plan" not in reused.stderr
    fresh = write(tmp_path, "again.toml", '[slice]\nid = "S1"\n[[unit]]\nid = "Z"\n')
    # No dispatcher runs now: --no-wait publishes and exits 0 without an answer.
    replanned = loopbus(
        "plan", "submit", str(fresh), "--project", project, "--no-wait", url=nats_url
    )
    assert replanned.returncode == 0, replanned.stderr
    assert "submitted plan for slice S1" in replanned.stdout
    assert "accepted" not in replanned.stdout + replanned.stderr


def test_submit_with_no_dispatcher_says_so_in_one_line(tmp_path: Path) -> None:
    """With no dispatcher running, ``plan submit`` stops waiting after ``--wait`` and says
    that none runs, how to start one and that the plan is on the log (exit 1)."""
    # A server of its own: no daemon of another test can have left a health beacon on it.
    server = EmbeddedServer(tmp_path / "nats", port=free_port(), auth=None)
    asyncio.run(server.start())
    try:
        asyncio.run(_provision(server.url))
        plan_file = write(tmp_path, "plan.toml", CHAIN_VS_FAN)
        done = loopbus(
            "plan", "submit", str(plan_file), "--project", "lonely", "--new", "--wait", "1",
            url=server.url,
        )  # fmt: skip
    finally:
        server.stop()
    assert done.returncode == 1, done.stdout + done.stderr
    assert "submitted plan for slice S1" in done.stdout
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert "no answer within 1s: no dispatcher is running" in lines[0]
    assert "loopbus up --repo PATH" in lines[0] and "stays on the log (seq 1)" in lines[0]


def test_submit_wait_must_be_positive(tmp_path: Path) -> None:
    """``--wait 0`` is refused in one line pointing at ``--no-wait``; both together are a
    usage error."""
    plan_file = write(tmp_path, "plan.toml", CHAIN_VS_FAN)
    zero = loopbus("plan", "submit", str(plan_file), "--project", "p", "--wait", "0")
    assert zero.returncode == 2 and "--no-wait does not wait" in zero.stderr, zero.stderr
    both = loopbus("plan", "submit", str(plan_file), "--project", "p", "--wait", "5", "--no-wait")
    assert both.returncode == 2 and "not allowed with argument" in both.stderr, both.stderr


async def _provision(url: str) -> None:
    connection = await connect(url, name="tests-provision")
    try:
        await ensure_log(connection.js)
    finally:
        await connection.close()


def test_status_renders_current_wave_waits_and_budgets() -> None:
    """Status shows the current wave, what each unit waits on, and use against budget."""
    d = PureDispatcher("p")
    limits = SliceBudgets(rework_rounds=1, gate_wall_clock_s=30)
    events = accepted("p", plan("S1", unit("A"), unit("B"), unit("C", "A"), budgets=limits))
    d.apply(*events)
    d.step()
    d.apply(transition("p", "A", "failed", by="gave-up"))
    d.step()
    lines = render_slices(d.state)
    assert "  S1: current wave 0" in lines
    assert "    C [wave 1] blocked; waiting on awaiting-dependency A" in lines
    assert "    B [wave 0] dispatched; waiting on its builder to start" in lines
    d.apply(transition("p", "B", "working", by="started"))
    assert "    B [wave 0] working; waiting on its builder" in render_slices(d.state)
    assert "    A [wave 0] failed (gave-up)" in lines
    use = budgets.FOLD.fold(d.log)
    shown = "\n".join(render_budgets(use))
    assert "rework_rounds: 0 / <= 1" in shown and "gate_wall_clock: - / <= 30.0s" in shown


def test_status_of_a_slice_read_in_part_says_so_rather_than_failing() -> None:
    """status reads at most --limit units; a slice with more than that (a 1,000-unit slice
    at the default 100) was a KeyError from the wave judgement. Now the units read are
    shown, and the wave is said to be unknown."""
    d = PureDispatcher("p")
    d.apply(*accepted("p", plan("S1", unit("A"), unit("B"), unit("C", "A"))))
    d.step()
    (view,) = d.state.slices.values()
    del view.units["C"]  # as a page of two units reads it
    lines = render_slices(d.state)
    assert "  S1: current wave not known: 2 of 3 units read (--limit 0)" in lines
    assert "    A [wave 0] dispatched" in lines
    assert not any(line.startswith("    C ") for line in lines)


def test_check_warns_of_a_missing_boot_check_and_refuses_a_bad_agent_table(
    tmp_path: Path,
) -> None:
    """A loopbus.toml with no boot check would fail every slice at its close: plan check
    says so now (a warning, exit 0). A [build] value up would refuse is refused here too,
    in one line naming the field."""
    repo = tmp_path / "repo"
    repo.mkdir()
    config = repo / "loopbus.toml"
    config.write_text(loopbus_toml("demo", ["t::a"], None))
    plan = write(
        tmp_path, "p.toml", '[slice]\nid = "S1"\n[[unit]]\nid = "U1"\ncriteria = ["t::a"]\n'
    )
    done = loopbus("plan", "check", str(plan), "--repo", str(repo))
    assert done.returncode == 0, done.stderr
    assert 'has no [[check]] with id = "boot"' in done.stderr
    config.write_text(loopbus_toml("demo", ["t::a"], "true"))
    booted = loopbus("plan", "check", str(plan), "--repo", str(repo))
    assert booted.returncode == 0 and "boot" not in booted.stderr, booted.stderr
    missing = loopbus_toml("demo", ["t::a"], "true").replace(
        "[project]\n", '[project]\npython = "/nowhere/bin/python"\n'
    )
    assert "/nowhere" in missing
    config.write_text(missing)
    no_python = loopbus("plan", "check", str(plan), "--repo", str(repo))
    assert no_python.returncode == 0, no_python.stderr
    assert "python = '/nowhere/bin/python' is not an interpreter on this" in no_python.stderr
    config.write_text(
        loopbus_toml("demo", ["t::a"], "true")
        + '\n[build]\ncommand = "b"\nroster = ["b1"]\nmode = "fast"\n'
    )
    bad = loopbus("plan", "check", str(plan), "--repo", str(repo))
    assert bad.returncode == 2 and "build.mode" in bad.stderr, bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
