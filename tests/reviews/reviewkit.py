"""Helpers for the review tests: real dulwich repositories, ready units on the log, scripted
reviewer and investigator commands, and bounded waits on the log (the daemons run
in-process with ``kernelkit.running``, re-exported here)."""

from __future__ import annotations

import base64
import json
import shlex
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from dulwich.objects import Blob, Commit, Tree
from dulwich.repo import Repo
from kernelkit import running
from logkit import log_events, of, wait_log  # noqa: F401 - re-exported for the tests

from bus import Bus
from projections.transitions import Violation, audit
from schemas import Actor, Event, UnitPlanned, UnitTransitioned
from schemas.gates import (
    GateResultRecorded,
    GateRunnerKeyRegistered,
    GateSuiteCompleted,
    SuiteEntry,
    canonical_bytes,
)
from schemas.reports import StartedReport
from workers.agents.config import RepoConfig, parse

SYSTEM = Actor(role="system", principal="test-system")
ALICE = "alice <alice@example.com>"
CRITERION = "tests/test_criteria.py::test_total"

__all__ = ["running"]  # the kernel test helper, for the tests that import it from here


class GitRepo:
    """A real repository built with dulwich objects: each commit is a full file map."""

    def __init__(self, path: Path):
        self.path = path
        self.repo = Repo.init(str(path), mkdir=True)
        self.files: dict[str, dict[str, bytes]] = {}

    def commit(
        self,
        changes: Mapping[str, str | None],
        *,
        parent: str | None = None,
        author: str = ALICE,
        committer: str | None = None,
        ref: str | None = None,
        message: str = "change",
    ) -> str:
        """A commit whose tree is ``parent``'s with ``changes`` applied (``None`` deletes)."""
        files = dict(self.files.get(parent, {})) if parent else {}
        for name, text in changes.items():
            if text is None:
                files.pop(name, None)
            else:
                files[name] = text.encode()
        store = self.repo.object_store
        tree_id = self._tree(files)
        commit = Commit()
        commit.tree = tree_id
        commit.parents = [parent.encode()] if parent else []
        commit.author = author.encode()
        commit.committer = (committer or author).encode()
        commit.commit_time = commit.author_time = 1_700_000_000 + len(self.files)
        commit.commit_timezone = commit.author_timezone = 0
        commit.message = message.encode()
        store.add_object(commit)
        sha = commit.id.decode()
        self.files[sha] = files
        if ref is not None:
            self.repo.refs[ref.encode()] = commit.id
        return sha

    def _tree(self, files: dict[str, bytes]) -> bytes:
        store = self.repo.object_store
        nested: dict[str, Any] = {}
        for name, data in files.items():
            node = nested
            parts = name.split("/")
            for part in parts[:-1]:
                node = node.setdefault(part, {})
            node[parts[-1]] = data

        def build(node: dict[str, Any]) -> bytes:
            tree = Tree()
            for name, value in node.items():
                if isinstance(value, dict):
                    tree.add(name.encode(), 0o040000, build(value))
                else:
                    blob = Blob.from_string(value)
                    store.add_object(blob)
                    tree.add(name.encode(), 0o100644, blob.id)
            store.add_object(tree)
            return tree.id

        return build(nested)


def loopbus_toml(project: str, review: Mapping[str, Any] | None = None, **extra: Any) -> str:
    """A ``loopbus.toml`` with one check (pending on the criterion) and a [review] table."""
    lines = [
        "[project]",
        f'id = "{project}"',
        "",
        "[[check]]",
        'id = "tests"',
        'command = "python -m pytest -q"',
        'parser = "pytest"',
        f'pending = ["{CRITERION}"]',
    ]
    tables = {"review": review, **extra}
    if "agents" not in tables:
        tables["agents"] = sandbox_for(*(t.get("command") for t in tables.values() if t))
    for table, values in tables.items():
        if values is None:
            continue
        lines += ["", f"[{table}]"]
        for key, value in values.items():
            lines.append(f"{key} = {json.dumps(value)}")
    return "\n".join(lines) + "\n"


def sandbox_for(*commands: str | None) -> dict[str, Any] | None:
    """``[agents]`` for scripted agents: they run sandboxed like any agent, and write what
    they saw (and their fifos) in the agents folder, which the sandbox must then show them
    (the script's folder's parent: :func:`agent_dir`)."""
    folders = sorted(
        {
            str(Path(words[1]).parent.parent)
            for command in commands
            if command and len(words := shlex.split(command)) > 1 and words[1].startswith("/")
        }
    )
    return {"writable": folders} if folders else None


BASE_FILES = {
    "src/app.py": "def total(xs):\n    return 0\n\n\ndef other():\n    return 1\n",
    "tests/test_criteria.py": "from src.app import total\n\n\ndef test_total():\n"
    "    assert total([1, 2]) == 3\n",
}


def setup_repo(tmp_path: Path, project: str, review: Mapping[str, Any], **extra: Any) -> GitRepo:
    """A repository whose trunk (main) holds the base files and the loopbus.toml."""
    repo = GitRepo(tmp_path / "repo")
    files: dict[str, str | None] = dict(BASE_FILES)
    files["loopbus.toml"] = loopbus_toml(project, review, **extra)
    base = repo.commit(files, ref="refs/heads/main", message="skeleton")
    (repo.path / "loopbus.toml").write_text(files["loopbus.toml"] or "")
    repo.base = base  # type: ignore[attr-defined]
    return repo


def config_of(repo: GitRepo) -> dict[str, RepoConfig]:
    text = (repo.path / "loopbus.toml").read_text()
    config = parse(text, repo=str(repo.path))
    return {config.project: config}


# -- scripted agents ---------------------------------------------------------------------

REVIEWER_SCRIPT = r"""
import json, os, sys, time, pathlib
plan_path, log_path = sys.argv[1], sys.argv[2]
reviewer = sys.argv[3] if len(sys.argv) > 3 else ""
raw = sys.stdin.read()
doc = json.loads(raw)
log = pathlib.Path(log_path)
calls = log.read_text().splitlines() if log.exists() else []
try:
    with open("probe.txt", "w") as fh:
        fh.write("x")
    writable = True
except OSError:
    writable = False
try:
    with open("src/app.py", "a") as fh:
        fh.write("# edited")
    edits = True
except OSError:
    edits = False
entry = {
    "keys": sorted(doc), "reviewer": reviewer, "writable": writable, "edits": edits,
    "criteria": doc.get("criteria"), "gate_results": doc.get("gate_results"),
    "diff": doc.get("diff"), "env_reviewer": os.environ.get("LOOPBUS_REVIEWER"),
    "files": sorted(str(p) for p in pathlib.Path(".").rglob("*") if p.is_file()),
    "doc": doc, "env_trigger": os.environ.get("LOOPBUS_TRIGGER"),
}
with log.open("a") as fh:
    fh.write(json.dumps(entry) + "\n")
plan = json.loads(pathlib.Path(plan_path).read_text())
step = plan[min(len(calls), len(plan) - 1)]
if step.get("fifo"):
    with open(step["fifo"], "w") as fh:
        fh.write("started\n")
        fh.flush()
        time.sleep(3600)
if step.get("hang"):
    time.sleep(3600)
if step.get("spin"):  # past [agents] cpu_time: the sandbox kills it and says so
    while True:
        pass
sys.stderr.write(step.get("stderr", ""))
out = step.get("stdout", "")
sys.stdout.write(out if isinstance(out, str) else json.dumps(out))
sys.exit(step.get("exit", 0))
"""


class Scripted:
    """A scripted agent: each call answers with the next step of ``plan`` (the last repeats)
    and appends what it saw to ``calls``."""

    def __init__(self, agent_dir: Path, name: str = "reviewer"):
        self.dir = agent_dir / name
        self.dir.mkdir()
        self.dir.chmod(0o777)  # the agent may run as an unprivileged user and logs here
        self.script = self.dir / "agent.py"
        self.script.write_text(REVIEWER_SCRIPT)
        self.script.chmod(0o644)
        self.plan_path = self.dir / "plan.json"
        self.log_path = self.dir / "calls.jsonl"
        self.log_path.touch()
        self.log_path.chmod(0o666)  # each run has a uid of its own, and each appends
        self.plan([{"stdout": {"verdict": "approve", "findings": []}}])

    def plan(self, steps: list[dict[str, Any]]) -> None:
        self.plan_path.write_text(json.dumps(steps))
        self.plan_path.chmod(0o644)

    @property
    def command(self) -> str:
        return f"{sys.executable} {self.script} {self.plan_path} {self.log_path} {{reviewer}}"

    def calls(self) -> list[dict[str, Any]]:
        if not self.log_path.exists():
            return []
        return [json.loads(line) for line in self.log_path.read_text().splitlines()]


def verdict(decision: str, *findings: dict[str, Any]) -> dict[str, Any]:
    return {"stdout": {"verdict": decision, "findings": list(findings)}}


def code_finding(
    path: str, start: int, end: int | None = None, severity: str = "high", criterion: str = "C1"
) -> dict[str, Any]:
    return {
        "target": {"type": "code", "path": path, "start": start, "end": end or start},
        "severity": severity,
        "criterion": criterion,
        "message": f"problem at {path}:{start}",
    }


# -- the log -----------------------------------------------------------------------------


async def ready(
    bus: Bus,
    project: str,
    unit: str,
    head: str,
    *,
    criteria: tuple[str, ...] = (CRITERION,),
    builder: str = "alice",
    first: bool = True,
    gates: bool = True,
) -> None:
    """Make ``unit`` ready at ``head``: planned and started the first time, then gates
    (``gates=False``: only planned and started)."""
    if first:
        await bus.publish(
            UnitPlanned(
                project=project, actor=SYSTEM, unit=unit, slice="S1", criteria=list(criteria)
            )
        )
        await bus.publish(
            StartedReport(
                project=project, actor=Actor(role="builder", principal=builder), unit=unit
            )
        )
        await bus.publish(
            UnitTransitioned(
                project=project, actor=SYSTEM, unit=unit, state="working", by="started"
            )
        )
    if not gates:
        return
    await bus.publish(
        UnitTransitioned(
            project=project,
            actor=SYSTEM,
            unit=unit,
            state="working",
            prior="working",
            ready=True,
            by="gates",
            commit=head,
        )
    )


def daemon_violations(events: list[Event]) -> list[Violation]:
    """What the transition table's audit finds wrong with the transitions a daemon (not
    this test, which stands in for the units daemon as ``SYSTEM``) published."""
    ours = {e.id for e in events if isinstance(e, UnitTransitioned) and e.actor != SYSTEM}
    return [v for v in audit(events) if v.event in ours]


def count(kind: type[Any], n: int = 1, **fields: Any) -> Callable[[list[Event]], bool]:
    return lambda events: len(of(kind, events, **fields)) >= n


# -- signed gate results -------------------------------------------------------------------


class GateSigner:
    """A registered gate-runner key, so test gate results verify like real ones."""

    def __init__(self, runner: str = "test-runner"):
        self.runner = runner
        self.key = Ed25519PrivateKey.generate()

    async def register(self, bus: Bus, project: str) -> None:
        raw = self.key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        await bus.publish(
            GateRunnerKeyRegistered(
                project=project,
                actor=SYSTEM,
                runner=self.runner,
                public_key=base64.b64encode(raw).decode(),
            )
        )

    def sign(self, event: Any) -> Any:
        signature = base64.b64encode(self.key.sign(canonical_bytes(event))).decode()
        import msgspec

        return msgspec.structs.replace(event, signature=signature)

    def result(
        self,
        project: str,
        check: str,
        commit: str,
        outcome: str,
        findings: list[str],
        error: str = "",
    ) -> GateResultRecorded:
        return self.sign(
            GateResultRecorded(
                project=project,
                actor=SYSTEM,
                check=check,
                tree=commit,
                commit=commit,
                inputs=commit,
                config_sha="0" * 64,
                outcome=outcome,  # type: ignore[arg-type]
                error=error,
                duration_s=0.5,
                runner=self.runner,
                findings=findings,
                findings_total=len(findings),
            )
        )

    def suite(
        self, project: str, unit: str, commit: str, results: list[GateResultRecorded]
    ) -> GateSuiteCompleted:
        outcomes = [r.outcome for r in results]
        worst = "error" if "error" in outcomes else "fail" if "fail" in outcomes else "pass"
        return self.sign(
            GateSuiteCompleted(
                project=project,
                actor=SYSTEM,
                commit=commit,
                tree=commit,
                unit=unit,
                reason="unit",
                outcome=worst,  # type: ignore[arg-type]
                checks=[
                    SuiteEntry(
                        check=r.check,
                        outcome=r.outcome,
                        cached=False,
                        result=r.id,
                        duration_s=r.duration_s,
                        findings=len(r.findings),
                    )
                    for r in results
                ],
                runner=self.runner,
            )
        )
