"""Three outcomes: what is pass, what is fail, and everything that cannot be established
(could not start, timed out, killed, unreadable output) being error; and the executors."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from gate_repos import CALC_DONE, PENDING_ID, PYTEST_CHECK, GitRepo, config, pytest_project
from gatekit import run_commit

from bus import Bus, read
from schemas import FindingRaised, format_target
from schemas.gates import GateSuiteCompleted
from schemas.targets import CheckTarget
from workers.gates.executors import docker_configured, docker_reachable
from workers.gates.runner import GateRunner


def check(check_id: str, command: str, parser: str = "exit-code", extra: str = "") -> str:
    quoted = command.replace("\\", "\\\\").replace('"', '\\"')
    return (
        f'\n[[check]]\nid = "{check_id}"\ncommand = "{quoted}"\nparser = "{parser}"\n'
        f"timeout = 30\n{extra}"
    )


async def _one(
    git: Callable[[str], GitRepo],
    make_runner: Callable[..., GateRunner],
    project: str,
    checks: str,
    fenced: bool = True,
    **files: str,
) -> GateRunner:
    repo = git("repo")
    repo.commit({"loopbus.toml": config(project, checks), **files})
    return make_runner(repo, fenced=fenced)


@pytest.mark.parametrize(
    ("command", "parser", "outcome", "needle"),
    [
        pytest.param("python -c 'pass'", "exit-code", "pass", "exit 0", id="exit-0-is-pass"),
        pytest.param(
            "python -c 'import sys; print(\"boom\"); sys.exit(4)'",
            "exit-code",
            "fail",
            "exited with code 4: boom",
            id="exit-nonzero-is-fail",
        ),
        pytest.param(
            "no-such-program-xyz", "exit-code", "error", "could not start", id="cannot-start"
        ),
        pytest.param(
            "python -c 'import os, signal; os.kill(os.getpid(), signal.SIGKILL)'",
            "exit-code",
            "error",
            "killed by signal 9",
            id="killed-is-error",
        ),
        pytest.param(
            "python -c 'print(\"not json\")'", "ruff", "error", "not JSON", id="unparseable-ruff"
        ),
        pytest.param(
            "ruff check --output-format json --select XYZ999 .",
            "ruff",
            "error",
            "its own error",
            id="ruff-exit-2-is-error",
        ),
        pytest.param(
            "python -c 'print(\"1 passed\")'",
            "pytest",
            "error",
            "no pytest report",
            id="pytest-parser-without-pytest",
        ),
    ],
)
async def test_outcome_of_a_run(
    git: Callable[[str], GitRepo],
    make_runner: Callable[..., GateRunner],
    project: str,
    command: str,
    parser: str,
    outcome: str,
    needle: str,
) -> None:
    """Each ending maps to one outcome; error and fail say why in a finding on the check."""
    runner = await _one(
        git, make_runner, project, check("c", command, parser), **{"a.py": "x = 1\n"}
    )
    run = (await run_commit(runner)).check("c")
    assert run.outcome == outcome
    shown = run.result.error or run.result.summary
    if outcome != "pass":
        assert run.findings and run.findings[0].target == CheckTarget(check="c")
        shown += " | " + run.findings[0].message
    assert needle in shown
    assert (run.result.error != "") == (outcome == "error")


async def test_timeout_is_an_error_and_kills_the_whole_process_group(
    git: Callable[[str], GitRepo],
    make_runner: Callable[..., GateRunner],
    project: str,
    tmp_path: Path,
) -> None:
    """A run past its timeout is killed with everything it started, and reads as error.

    The plain subprocess executor (where no sandbox can be made): its grandchild's pid is
    the host's. The sandboxed run's kill is tests/agents/test_local.py's."""
    pid_file = tmp_path / "grandchild.pid"
    script = (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(120)\n"
    )
    checks = check("slow", "python hang.py").replace("timeout = 30", "timeout = 2")
    runner = await _one(git, make_runner, project, checks, fenced=False, **{"hang.py": script})
    run = (await run_commit(runner)).check("slow")
    assert run.outcome == "error"
    assert "timed out after 2s" in run.result.error
    grandchild = int(pid_file.read_text())
    assert not _alive(grandchild)


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status


async def test_environment_is_scrubbed(
    git: Callable[[str], GitRepo],
    make_runner: Callable[..., GateRunner],
    project: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A check sees no variable of the runner's own (tokens, loopbus settings), only its env."""
    monkeypatch.setenv("NATS_TOKEN", "secret")
    monkeypatch.setenv("LOOPBUS_NATS_URL", "nats://secret:4222")
    probe = (
        "import os, sys\n"
        "leaked = [k for k in ('NATS_TOKEN', 'LOOPBUS_NATS_URL') if k in os.environ]\n"
        "assert not leaked, leaked\n"
        "assert os.environ['GREETING'] == 'hi'\n"
        "assert os.environ['HOME'] != os.path.expanduser('~root')\n"
    )
    checks = check("env", "python probe.py", extra='env = { GREETING = "hi" }\n')
    runner = await _one(git, make_runner, project, checks, **{"probe.py": probe})
    run = (await run_commit(runner)).check("env")
    assert run.outcome == "pass", run.findings


async def test_runs_never_see_a_sibling_checkout(
    git: Callable[[str], GitRepo],
    make_runner: Callable[..., GateRunner],
    project: str,
    tmp_path: Path,
) -> None:
    """Two commits gated at once each run in a private checkout, removed afterwards."""
    repo = git("repo")
    probe = (
        "import os, sys\n"
        "mine, theirs = sys.argv[1], sys.argv[2]\n"
        "assert os.path.exists(mine) and not os.path.exists(theirs)\n"
        "for root, dirs, files in os.walk(os.path.dirname(os.getcwd())):\n"
        "    assert theirs not in files, root\n"
        f"open(os.path.join({str(tmp_path)!r}, mine + '.cwd'), 'w').write(os.getcwd())\n"
    )
    toml = config(project, check("iso", "python probe.py {mine} {theirs}"))
    a = repo.commit(
        {"loopbus.toml": toml.format(mine="a.txt", theirs="b.txt"), "probe.py": probe, "a.txt": "a"}
    )
    b = repo.commit(
        {"loopbus.toml": toml.format(mine="b.txt", theirs="a.txt"), "probe.py": probe, "b.txt": "b"}
    )
    # The plain executor (no sandbox here): the sandboxed run, which sees no other folder
    # of the host at all, is tests/gate_runner/test_fenced.py's.
    runner = make_runner(repo, fenced=False)
    suites = await asyncio.gather(run_commit(runner, a), run_commit(runner, b))
    assert [s.outcome for s in suites] == ["pass", "pass"], [s.checks[0].findings for s in suites]
    cwds = {(tmp_path / f"{n}.cwd").read_text() for n in ("a.txt", "b.txt")}
    assert len(cwds) == 2
    for cwd in cwds:
        assert not os.path.exists(cwd)
        assert not cwd.startswith(str(repo.path))


async def test_cost_and_duration_are_recorded(
    git: Callable[[str], GitRepo], make_runner: Callable[..., GateRunner], project: str
) -> None:
    """A subprocess run records wall-clock duration and the CPU time of its process tree."""
    burn = "python -c 'sum(i * i for i in range(3_000_000))'"
    runner = await _one(git, make_runner, project, check("burn", burn))
    result = (await run_commit(runner)).check("burn").result
    assert result.duration_s > 0 and result.executor == "subprocess"
    assert result.cost is not None and result.cost.cpu_s is not None and result.cost.cpu_s > 0
    assert result.cost.max_rss_kb is not None and result.cost.max_rss_kb > 0


async def test_image_without_a_docker_engine_is_an_error(
    git: Callable[[str], GitRepo], make_runner: Callable[..., GateRunner], project: str
) -> None:
    """A check naming an image never silently runs on the host: no engine means error."""
    if docker_configured() is not None:
        pytest.skip(f"a Docker engine is configured here ({docker_configured()})")
    checks = check("boxed", "python -c 'pass'", extra='image = "python:3.12-slim"\n')
    runner = await _one(git, make_runner, project, checks)
    run = (await run_commit(runner)).check("boxed")
    assert run.outcome == "error"
    assert "python:3.12-slim" in run.result.error and "no Docker engine" in run.result.error
    assert runner.executions == 0


async def test_container_executor_runs_a_check_in_its_image(
    git: Callable[[str], GitRepo], make_runner: Callable[..., GateRunner], project: str
) -> None:
    """With a reachable engine, a check naming an image runs in it with the checkout at /work."""
    unreachable = await docker_reachable()
    if unreachable is not None:
        print(f"\nSKIP container executor: {unreachable}")
        pytest.skip(unreachable)
    image = await _local_python_image()
    if image is None:
        # An engine with no registry to pull from and no Python image of its own: the
        # executor cannot be shown running anything here (say so; do not pass).
        print("\nSKIP container executor: the engine holds no python:* image to run")
        pytest.skip("the Docker engine holds no python:* image and none can be assumed pullable")
    probe = "import os\nassert os.getcwd() == '/work' and os.path.exists('marker')\n"
    checks = check("boxed", "python3 probe.py", extra=f'image = "{image}"\n')
    runner = await _one(git, make_runner, project, checks, **{"probe.py": probe, "marker": "x"})
    run = (await run_commit(runner)).check("boxed")
    assert run.outcome == "pass" and run.result.executor == "container"


async def _local_python_image() -> str | None:
    """A ``python:*`` image the engine already holds (official or built locally, as
    deploy/compose-check does when no registry is reachable), or ``None``."""
    import aiodocker

    async with aiodocker.Docker() as docker:
        for image in await docker.images.list():
            for tag in image.get("RepoTags") or []:
                if tag.startswith("python:"):
                    return str(tag)
    return None


GOOD = 'parser = "exit-code"'


@pytest.mark.parametrize(
    ("parser_line", "commit", "needle", "target"),
    [
        pytest.param(GOOD, "f" * 40, "names no commit", "record:commit:unknown", id="no-commit"),
        pytest.param(None, None, "has no loopbus.toml", "record:commit:", id="no-config"),
        pytest.param(
            'parser = "pytst"', None, "check[0].parser = 'pytst'", "code:loopbus.toml:", id="bad"
        ),
    ],
)
async def test_a_suite_that_cannot_run_is_an_error_on_the_log(
    bus: Bus,
    git: Callable[[str], GitRepo],
    make_runner: Callable[..., GateRunner],
    project: str,
    parser_line: str | None,
    commit: str | None,
    needle: str,
    target: str,
) -> None:
    """For a runner serving a project, a missing commit or config is a recorded error suite
    with a finding saying why, never silence."""
    repo = git("repo")
    files = {"README": "x\n"}
    if parser_line is not None:  # None: the commit carries no loopbus.toml at all
        checks = check("c", "python -c 'pass'").replace(GOOD, parser_line)
        files["loopbus.toml"] = config(project, checks)
    repo.commit(files)
    suite = await run_commit(make_runner(repo, project=project), commit)
    assert suite.outcome == "error" and needle in suite.error
    assert suite.suite is not None and suite.suite.error == suite.error
    events = [r.event async for r in read(bus, subjects=[f"loop.{project}.>"])]
    findings = [e for e in events if isinstance(e, FindingRaised)]
    assert len(findings) == 1 and needle in findings[0].message
    assert format_target(findings[0].target).startswith(target)
    assert any(isinstance(e, GateSuiteCompleted) and e.outcome == "error" for e in events)


SKIP_MARKED = "import pytest\n\n\n@pytest.mark.skip(reason='later')\ndef test_{name}():\n    pass\n"


@pytest.mark.parametrize(
    ("command", "pending", "files", "outcome", "needle"),
    [
        pytest.param(
            "python -m pytest -q --co",
            (),
            {},
            "error",
            "none of the 2 collected tests ran: nothing was run",
            id="collect-only-is-error",
        ),
        # -p no:randomly: the check runs this interpreter's pytest, and a developer's
        # pytest-randomly would reorder the project's tests so the failing one is not first.
        pytest.param(
            "python -m pytest -q -x -p no:randomly",
            (),
            {"tests/test_aaa.py": "def test_first():\n    assert False\n"},
            "error",
            "2 of the 3 collected tests did not run: nothing was run",
            id="tests-left-unrun-by-x-is-error",
        ),
        pytest.param(
            "python -m pytest -q",
            (),
            {
                "tests/test_calc.py": SKIP_MARKED.format(name="empty"),
                "tests/test_criteria.py": SKIP_MARKED.format(name="total_is_sum"),
            },
            "error",
            "every test was skipped: nothing was established",
            id="all-skipped-is-error",
        ),
        pytest.param(
            "python -m pytest -q",
            (PENDING_ID,),
            {"tests/test_calc.py": SKIP_MARKED.format(name="empty")},
            "error",
            "every test was skipped: nothing was established",
            id="only-pending-ran-is-error",
        ),
        pytest.param(
            "python -m pytest -q",
            (),
            {"calc.py": CALC_DONE, "tests/test_calc.py": SKIP_MARKED.format(name="empty")},
            "pass",
            "1 passed, 1 skipped",
            id="a-genuine-skip-beside-a-pass-is-a-skip",
        ),
    ],
)
async def test_a_pytest_run_that_ran_nothing_is_an_error(
    git: Callable[[str], GitRepo],
    make_runner: Callable[..., GateRunner],
    project: str,
    command: str,
    pending: tuple[str, ...],
    files: dict[str, str],
    outcome: str,
    needle: str,
) -> None:
    """Collected tests that never ran, or a run whose every ordinary test was skipped, is an
    error with a finding on the check; a genuine skip beside a real pass stays a skip."""
    listed = ", ".join(f'"{p}"' for p in pending)
    checks = PYTEST_CHECK.format(pending=listed).replace("python -m pytest -q", command)
    repo = git("repo")
    repo.commit(
        {**pytest_project(project, pending, **files), "loopbus.toml": config(project, checks)}
    )
    run = (await run_commit(make_runner(repo), checks=["tests"])).check("tests")
    assert run.outcome == outcome, run.result.summary + " | " + run.result.error
    if outcome == "pass":
        assert needle == run.result.summary and run.findings == []
        return
    assert needle in run.result.error
    (finding,) = [f for f in run.findings if needle in f.message]
    assert finding.target == CheckTarget(check="tests") and finding.severity == "high"
