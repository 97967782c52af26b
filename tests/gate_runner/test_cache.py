"""The content-addressed cache: (check, tree, config) hits, misses, errors, salt, and the log
as the truth behind the KV index."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import msgspec
from gate_repos import GitRepo, config
from gatekit import run_commit

from bus import Bus, read
from projections import gates as gates_projection
from schemas import decode_event, new_id
from schemas.gates import GateResultRecorded
from workers.gates.cache import GateCache
from workers.gates.runner import GateRunner
from workers.gates.signing import load_or_create


def exit_check(check_id: str, code: int | str = 0, extra: str = "") -> str:
    """A fast check: a Python one-liner exiting with ``code``."""
    return (
        f'\n[[check]]\nid = "{check_id}"\n'
        f"command = \"python -c 'import sys; sys.exit({code})'\"\n"
        f'parser = "exit-code"\ntimeout = 30\n{extra}'
    )


GHOST = '\n[[check]]\nid = "ghost"\ncommand = "no-such-program-xyz --flag"\ntimeout = 30\n'


def project_files(project: str, checks: str, salt: str = "", **files: str) -> dict[str, str]:
    extra = f'salt = "{salt}"' if salt else ""
    return {"loopbus.toml": config(project, checks, extra), "README": "demo\n", **files}


async def test_same_tree_same_config_is_a_hit_without_running(
    git: Callable[[str], GitRepo], make_runner: Callable[..., GateRunner], project: str
) -> None:
    """The second ask for the same tree and config returns the recorded result, runs nothing."""
    repo = git("repo")
    commit = repo.commit(project_files(project, exit_check("ok") + exit_check("bad", 3)))
    runner = make_runner(repo)
    first = await run_commit(runner, commit)
    assert runner.executions == 2
    assert [(c.check, c.outcome, c.cached) for c in first.checks] == [
        ("ok", "pass", False),
        ("bad", "fail", False),
    ]
    second = await run_commit(runner, commit)
    assert runner.executions == 2
    assert [(c.check, c.outcome, c.cached) for c in second.checks] == [
        ("ok", "pass", True),
        ("bad", "fail", True),
    ]
    assert [c.result.id for c in second.checks] == [c.result.id for c in first.checks]
    assert second.check("bad").findings == first.check("bad").findings


async def test_other_commit_with_the_same_tree_is_a_hit(
    git: Callable[[str], GitRepo], make_runner: Callable[..., GateRunner], project: str
) -> None:
    """The key is the tree, not the commit: a different history with equal content hits."""
    repo = git("repo")
    files = project_files(project, exit_check("ok"))
    first = repo.commit(files, message="one")
    other = repo.commit(files, parent=first, message="same tree, new commit")
    assert repo.tree_of(first) == repo.tree_of(other)
    runner = make_runner(repo)
    await run_commit(runner, first)
    hit = await run_commit(runner, other)
    assert hit.check("ok").cached and runner.executions == 1
    assert hit.commit == other


async def test_tree_change_is_a_miss(
    git: Callable[[str], GitRepo], make_runner: Callable[..., GateRunner], project: str
) -> None:
    """Any change to the tree changes the key, so the check runs again."""
    repo = git("repo")
    runner = make_runner(repo)
    await run_commit(runner, repo.commit(project_files(project, exit_check("ok"))))
    changed = await run_commit(runner, repo.change(README="changed\n"))
    assert not changed.check("ok").cached and runner.executions == 2


async def test_config_change_is_a_miss(
    git: Callable[[str], GitRepo], make_runner: Callable[..., GateRunner], project: str
) -> None:
    """Changing the check's configuration (here its timeout) runs it again on the same files."""
    repo = git("repo")
    runner = make_runner(repo)
    await run_commit(runner, repo.commit(project_files(project, exit_check("ok"))))
    toml = repo.files["loopbus.toml"].replace("timeout = 30", "timeout = 31")
    changed = await run_commit(runner, repo.change(loopbus_DOT_toml=toml))
    assert not changed.check("ok").cached and runner.executions == 2


async def test_errors_are_never_cached(
    git: Callable[[str], GitRepo], make_runner: Callable[..., GateRunner], project: str
) -> None:
    """An error establishes nothing: asking again runs the check again."""
    repo = git("repo")
    commit = repo.commit(project_files(project, GHOST))
    runner = make_runner(repo)
    first = await run_commit(runner, commit)
    second = await run_commit(runner, commit)
    assert [first.outcome, second.outcome] == ["error", "error"]
    assert not second.check("ghost").cached and runner.executions == 2
    assert "could not start" in second.check("ghost").result.error


async def test_salt_invalidates_the_whole_project_cache(
    git: Callable[[str], GitRepo], make_runner: Callable[..., GateRunner], project: str
) -> None:
    """A new salt misses every check at once; the same salt then hits again."""
    repo = git("repo")
    runner = make_runner(repo)
    checks = exit_check("a") + exit_check("b")
    await run_commit(runner, repo.commit(project_files(project, checks)))
    salted = await run_commit(runner, repo.commit(project_files(project, checks, salt="v2")))
    assert [c.cached for c in salted.checks] == [False, False]
    again = await run_commit(runner, repo.commit(project_files(project, checks, salt="v2")))
    assert [c.cached for c in again.checks] == [True, True] and runner.executions == 4


async def test_a_check_reading_some_files_ignores_changes_elsewhere(
    git: Callable[[str], GitRepo], make_runner: Callable[..., GateRunner], project: str
) -> None:
    """With ``reads`` the key covers only those files: other changes hit, theirs miss."""
    repo = git("repo")
    runner = make_runner(repo)
    checks = exit_check("src-only", 0, 'reads = ["src/"]\n')
    await run_commit(runner, repo.commit(project_files(project, checks, **{"src/a.py": "x = 1\n"})))
    elsewhere = await run_commit(runner, repo.change(README="other\n"))
    assert elsewhere.check("src-only").cached
    inside = await run_commit(runner, repo.change(src__a_DOT_py="x = 2\n"))
    assert not inside.check("src-only").cached
    assert inside.check("src-only").result.inputs.startswith("reads:")


async def test_concurrent_asks_for_one_key_run_once(
    git: Callable[[str], GitRepo], make_runner: Callable[..., GateRunner], project: str
) -> None:
    """N asks in flight at once for the same tree share a single run."""
    repo = git("repo")
    files = project_files(project, exit_check("ok"))
    commits = [repo.commit(files, message=f"unit {n}") for n in range(4)]
    runner = make_runner(repo)
    suites = await asyncio.gather(*(run_commit(runner, c) for c in commits))
    assert runner.executions == 1
    assert len({s.check("ok").result.id for s in suites}) == 1
    assert sum(not s.check("ok").cached for s in suites) == 1


async def test_cache_is_shared_between_runners_on_one_bus(
    bus: Bus,
    git: Callable[[str], GitRepo],
    make_runner: Callable[..., GateRunner],
    project: str,
    tmp_path: Path,
) -> None:
    """A result recorded by one runner (another key, another process) is a hit for the next."""
    repo = git("repo")
    commit = repo.commit(project_files(project, exit_check("ok")))
    await run_commit(make_runner(repo), commit)
    other = GateRunner(bus, repo.path, load_or_create(tmp_path / "other-data", "other"))
    hit = await run_commit(other, commit)
    assert hit.check("ok").cached and other.executions == 0


async def test_index_answers_what_a_fold_of_the_log_answers(
    bus: Bus,
    git: Callable[[str], GitRepo],
    make_runner: Callable[..., GateRunner],
    project: str,
) -> None:
    """Rebuilt from the log, the gates projection and the KV index agree key for key, and a
    result whose publisher never indexed it is still found."""
    repo = git("repo")
    runner = make_runner(repo)
    checks = exit_check("a") + exit_check("b", 1) + GHOST.replace('"ghost"', '"c"')
    await run_commit(runner, repo.commit(project_files(project, checks)))
    await run_commit(runner, repo.change(README="two\n"))
    # A result published without indexing, as if its runner died right after publishing:
    cache = await runner.cache(project)
    orphan_source = (await run_commit(runner, repo.change(README="three\n"))).check("a").result
    orphan = runner.signer.sign(
        msgspec.structs.replace(orphan_source, id=new_id(), tree="f" * 40, inputs="f" * 40)
    )
    await bus.publish_atomic([orphan])

    state = gates_projection.initial()
    async for record in read(bus, subjects=[f"loop.{project}.>"]):
        assert record.event is not None
        gates_projection.apply(state, record.event)
    fresh = await GateCache(bus, project).open()
    assert orphan.cache_key in state.cache
    for key, entry in state.cache.items():
        hit = await fresh.lookup(key)
        assert hit is not None and hit.result.id == entry.result, key
    assert state.errors == 3  # the three runs of check "c" (cannot start): never cached
    for key in await _result_keys(bus, project, "c"):
        assert await fresh.lookup(key) is None and key not in state.cache
    assert cache.state.keys  # the runner's key was registered before its results


async def _result_keys(bus: Bus, project: str, check: str) -> list[str]:
    keys = []
    async for record in read(bus, subjects=[f"loop.{project}.gate.{check}"]):
        assert isinstance(record.event, GateResultRecorded)
        keys.append(record.event.cache_key)
    return keys


async def test_stored_findings_come_back_with_a_hit(
    bus: Bus, git: Callable[[str], GitRepo], make_runner: Callable[..., GateRunner], project: str
) -> None:
    """A cached fail carries its findings, read back from the log in order."""
    repo = git("repo")
    checks = (
        '\n[[check]]\nid = "lint"\ncommand = "ruff check --output-format json ."\n'
        'parser = "ruff"\ntimeout = 60\n'
    )
    commit = repo.commit(project_files(project, checks, **{"a.py": "import os\nimport sys\n"}))
    runner = make_runner(repo)
    ran = (await run_commit(runner, commit)).check("lint")
    hit = (await run_commit(runner, commit)).check("lint")
    assert hit.cached and len(hit.findings) == 2
    assert [f.id for f in hit.findings] == [f.id for f in ran.findings] == hit.result.findings
    _subject, data = await bus.get(hit.seq or 0)
    assert decode_event(data) == hit.result
