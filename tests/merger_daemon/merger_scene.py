"""A merger under test: a real repository (dulwich), the real bus, the real gate runner.

Builders and reviewers are stood in by the test publishing what they would: a unit's plan,
its builder's commit report and the system's transitions up to "ready", then an approval.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dulwich.objects import Blob, Commit, Tree
from dulwich.repo import Repo

from bus import Bus, read
from projections.merges import MergesState
from projections.units import UnitsState
from schemas import Actor, Event, UnitPlanned, UnitTransitioned, project_subjects
from schemas.ids import new_id
from schemas.merges import ApproveReport
from schemas.reports import CommitReport, StartedReport
from workers.gates.runner import GateRunner
from workers.gates.signing import load_or_create
from workers.kernel import Kernel
from workers.merger.daemon import Merger
from workers.merger.gates import RunnerTrunkGates

SYSTEM = Actor(role="system", principal="tests")
AUTHOR = b"Builder <builder@example.com>"
WAIT_S = 90.0

CONFIG = """\
[project]
id = "{project}"

[[check]]
id = "tests"
command = "python -m pytest -q -p no:cacheprovider tests"
parser = "pytest"
timeout = 120
{extra}"""

INTEGRATION = """
[[check]]
id = "integration"
command = "python -m pytest -q -p no:cacheprovider integration"
parser = "pytest"
timeout = 120

[merge]
trunk_only = ["integration"]
"""


class GitRepo:
    """A bare repository whose commits are written straight into the object store."""

    def __init__(self, path: Path):
        path.mkdir(parents=True)
        self.path = path
        Repo.init_bare(str(path)).close()
        self._clock = 1_700_000_000

    def commit(self, parent: str | None, changes: dict[str, str | None], message: str = "c") -> str:
        """A commit of ``parent``'s files with ``changes`` applied (``None`` deletes)."""
        files = self.files(parent) if parent else {}
        for name, content in changes.items():
            if content is None:
                files.pop(name, None)
            else:
                files[name] = content
        with Repo(str(self.path)) as repo:
            tree = _write_tree(repo, {k: v.encode() for k, v in files.items()})
            commit = Commit()
            commit.tree = tree
            commit.parents = [parent.encode()] if parent else []
            commit.author = commit.committer = AUTHOR
            self._clock += 1
            commit.author_time = commit.commit_time = self._clock
            commit.author_timezone = commit.commit_timezone = 0
            commit.message = message.encode()
            repo.object_store.add_object(commit)
            return commit.id.decode()

    def files(self, sha: str) -> dict[str, str]:
        with Repo(str(self.path)) as repo:
            commit = repo.object_store[sha.encode()]
            assert isinstance(commit, Commit)
            out: dict[str, str] = {}
            for entry in repo.object_store.iter_tree_contents(commit.tree):
                blob = repo.object_store[entry.sha]
                assert isinstance(blob, Blob)
                out[entry.path.decode()] = blob.data.decode()
            return out

    def parents(self, sha: str) -> list[str]:
        with Repo(str(self.path)) as repo:
            commit = repo.object_store[sha.encode()]
            assert isinstance(commit, Commit)
            return [p.decode() for p in commit.parents]

    def tree(self, sha: str) -> str:
        with Repo(str(self.path)) as repo:
            commit = repo.object_store[sha.encode()]
            assert isinstance(commit, Commit)
            return commit.tree.decode()

    def set_trunk(self, sha: str) -> None:
        with Repo(str(self.path)) as repo:
            repo.refs[b"refs/heads/main"] = sha.encode()

    def trunk(self) -> str:
        with Repo(str(self.path)) as repo:
            return repo.refs[b"refs/heads/main"].decode()


def _write_tree(repo: Repo, files: dict[str, bytes]) -> bytes:
    folders: dict[str, dict[str, bytes]] = {}
    tree = Tree()
    for name, data in sorted(files.items()):
        top, sep, rest = name.partition("/")
        if sep:
            folders.setdefault(top, {})[rest] = data
            continue
        blob = Blob.from_string(data)
        repo.object_store.add_object(blob)
        tree.add(name.encode(), 0o100644, blob.id)
    for folder, content in folders.items():
        tree.add(folder.encode(), 0o040000, _write_tree(repo, content))
    repo.object_store.add_object(tree)
    return tree.id


class Scene:
    """One project: its repository, the merger daemon running on it, and helpers."""

    def __init__(self, bus: Bus, project: str, tmp: Path):
        self.bus = bus
        self.project = project
        self.tmp = tmp
        self.repo = GitRepo(tmp / "repo")
        self.daemon: Merger | None = None
        self.kernel: Kernel | None = None
        self.task: asyncio.Task[None] | None = None

    def config(self, *, trunk_only: bool = False) -> str:
        return CONFIG.format(project=self.project, extra=INTEGRATION if trunk_only else "")

    async def start(self, window: int = 3, daemon: type[Merger] = Merger) -> Merger:
        """Run a merger on the kernel (``daemon``: the class, so a test can inject a crash)
        on the repo, and wait until it has folded the log."""
        signer = load_or_create(self.tmp / "data", "merger")
        runner = GateRunner(self.bus, self.repo.path, signer, project=self.project)
        self.daemon = daemon(
            self.repo.path,
            project=self.project,
            gates=RunnerTrunkGates(runner),
            window=window,
            poll_s=0.5,
        )
        self.kernel = Kernel(self.bus, self.daemon)
        self.task = asyncio.create_task(self.kernel.run())
        await asyncio.wait_for(self.kernel.reached_end.wait(), 30)
        return self.daemon

    async def stop(self) -> None:
        """Stop the merger as a kill would: wherever it is, nothing more is done."""
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.task
            self.task = None

    async def publish(self, event: Event) -> None:
        await self.bus.publish(event)

    async def ready_unit(
        self,
        unit: str,
        head: str,
        *,
        author: str | None = None,
        slice: str = "S1",
        criteria: tuple[str, ...] = (),
    ) -> None:
        """Plan ``unit`` (with ``criteria``), have its builder start it and submit ``head``,
        and make it ready."""
        builder = Actor(role="builder", principal=author or f"builder-{unit}")
        planned = UnitPlanned(
            project=self.project, actor=SYSTEM, unit=unit, slice=slice, criteria=list(criteria)
        )
        await self.publish(planned)
        started = StartedReport(project=self.project, actor=builder, unit=unit)
        await self.publish(started)
        await self.publish(self._moved(unit, None, "started", started.id))
        await self.submit(unit, head, author=builder.principal)

    async def submit(self, unit: str, head: str, *, author: str | None = None) -> None:
        """The builder submits ``head`` and its gates pass: the unit is ready with it."""
        builder = Actor(role="builder", principal=author or f"builder-{unit}")
        report = CommitReport(project=self.project, actor=builder, unit=unit, sha=head)
        await self.publish(report)
        await self.publish(self._moved(unit, "working", "commit", report.id, commit=head))
        await self.publish(self._moved(unit, "working", "gates", new_id(), commit=head, ready=True))

    def _moved(
        self,
        unit: str,
        prior: Any,
        by: Any,
        cause: str,
        *,
        commit: str | None = None,
        ready: bool = False,
    ) -> UnitTransitioned:
        return UnitTransitioned(
            project=self.project,
            actor=SYSTEM,
            unit=unit,
            state="working",
            prior=prior,
            by=by,
            cause=cause,
            commit=commit,
            ready=ready,
        )

    async def approve(
        self, unit: str, head: str, *, principal: str = "operator-1", role: Any = "operator"
    ) -> ApproveReport:
        report = ApproveReport(
            project=self.project, actor=Actor(role=role, principal=principal), unit=unit, head=head
        )
        await self.publish(report)
        return report

    @property
    def merges(self) -> MergesState:
        assert self.kernel is not None
        state: MergesState = self.kernel.project_states(self.project)["merges"]
        return state

    @property
    def units(self) -> UnitsState:
        assert self.kernel is not None
        state: UnitsState = self.kernel.project_states(self.project)["units"]
        return state

    async def until(self, predicate: Callable[[], bool], timeout: float = WAIT_S) -> None:
        """Wait until ``predicate()`` holds on the daemon's fold (bounded)."""
        assert self.kernel is not None
        try:
            await self.kernel.until(predicate, timeout)
        except TimeoutError:
            raise AssertionError(f"timed out after {timeout}s waiting for the merger") from None

    def state_of(self, unit: str) -> str | None:
        view = self.units.units.get(unit)
        return view.state if view is not None else None

    async def events(self, kind: type | None = None) -> list[Any]:
        found: list[Any] = []
        async for record in read(self.bus, subjects=[project_subjects(self.project)]):
            if record.event is not None and (kind is None or isinstance(record.event, kind)):
                found.append(record.event)
        return found


APP = """\
def total(items):
    return sum(items)
"""

TEST_TOTAL = """\
from app import total


def test_total():
    assert total([1, 2]) == 3
"""


def base_files(scene: Scene, *, trunk_only: bool = False) -> dict[str, str | None]:
    """A tiny project: ``app.total``, its test, and the gate configuration."""
    files: dict[str, str | None] = {
        "loopbus.toml": scene.config(trunk_only=trunk_only),
        "app.py": APP,
        "tests/test_total.py": TEST_TOTAL,
    }
    if trunk_only:
        files["integration/test_flow.py"] = INTEGRATION_TEST
    return files


INTEGRATION_TEST = """\
import app


def test_flow():
    assert app.total([1, 2]) == 3
"""


def make_trunk(scene: Scene, *, trunk_only: bool = False) -> str:
    """Commit the base project and point trunk at it."""
    sha = scene.repo.commit(None, base_files(scene, trunk_only=trunk_only), "base")
    scene.repo.set_trunk(sha)
    return sha


RATED_APP = """\
RATE = 1


def total(items):
    return sum(items) * RATE
"""

FLOW_WITH_EXTENSIONS = """\
import glob
import importlib

import app


def test_flow():
    for path in sorted(glob.glob("ext_*.py")):
        importlib.import_module(path[:-3])
    assert app.total([1, 2]) == 3
"""

CENTS_EXTENSION = "import app\n\napp.RATE = 100\n"
CENTS_TEST = (
    "from pathlib import Path\n\n\n"
    "def test_sets_the_rate():\n    assert 'RATE = 100' in Path('ext_cents.py').read_text()\n"
)


def make_collision(scene: Scene) -> tuple[str, str, str]:
    """U0 makes ``total`` read ``app.RATE``; U1 adds an extension setting it. Each is green
    on its own, but on trunk together the trunk-only integration test fails.
    Returns (trunk, U0's head, U1's head)."""
    base = make_trunk(scene, trunk_only=True)
    base = scene.repo.commit(base, {"integration/test_flow.py": FLOW_WITH_EXTENSIONS}, "flow")
    scene.repo.set_trunk(base)
    u0 = scene.repo.commit(base, {"app.py": RATED_APP}, "rate")
    u1 = scene.repo.commit(
        base, {"ext_cents.py": CENTS_EXTENSION, "tests/test_cents.py": CENTS_TEST}, "cents"
    )
    return base, u0, u1
