"""A hostile agent *command* against a real ``loopbus up --repo``, under both executors.

The project's ``[build] command`` is a script that, from inside its own command, tries
what issue 21 found a builder could do as the daemon's user: read every credential and
signing key, list and write a sibling unit's worktree, write the shared repository, reach
the NATS server and publish ``unit.transitioned`` -> ``done`` for its own unit with any
credential it found, and exceed its memory and process limits (each limit the executor
observes there is a ``sandbox-breach`` finding). It writes what happened
into a file of its worktree (the adapter commits it into the unit's branch, where the
test reads it with dulwich) and answers ``completed``. Every attempt must have failed.

A second unit's command spins past its CPU time: the sandbox kills it, and the builder
daemon names the breach in a ``sandbox-breach`` finding (the executor's observation, not
the agent's word).

With ``[agents] sandbox = "none"`` every attempt succeeds and these tests fail (checked by
hand: ``LOOPBUS_HOSTILE_UNSANDBOXED=1`` runs the local case unsandboxed).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agent_image import agent_image_or_skip, host_read_only
from dulwich import porcelain
from dulwich.repo import Repo
from integrity.test_hostile_agent import WAIT_S, Loop, running_up
from integrity.test_hostile_decisions import dispatch

from bus import free_port
from schemas import FindingRaised, UnitTransitioned
from schemas.reports import CommitReport, GaveUpReport
from workers.agents import cgroups
from workers.agents.workspace import workdir

pytestmark = pytest.mark.slow

P = "shop"
RECORD = "hostile-record.json"
MEMORY_MB = 256
PROCESSES = 32
CPU_TIME_S = 3
MARK = "hostile-command"
"""The principal the hostile command forges its facts under: on the log, it is a breach."""

HOSTILE = r"""
import asyncio, glob, json, os, pathlib, socket, subprocess, sys

target = json.loads(pathlib.Path(sys.argv[1]).read_text())
brief = json.load(sys.stdin)
unit, retry = brief["unit"], bool(brief.get("problem"))
record = {"unit": unit, "retry": retry}


def attempt(name, action):
    try:
        record[name] = {"ok": action()}
    except BaseException as exc:  # what stopped it is the record
        record[name] = {"error": f"{type(exc).__name__}: {exc}"}


if unit == "SPIN" and not retry:
    while True:  # past [agents] cpu_time: the sandbox must kill it and say so
        pass

found = {}


def read_secrets():
    for folder in target["secret_dirs"]:
        try:
            names = [str(pathlib.Path(folder, n)) for n in os.listdir(folder)]
        except OSError as exc:
            record.setdefault("listing", {})[folder] = str(exc)
            names = []
        for path in dict.fromkeys([*names, *target["secret_files"]]):
            if not path.startswith(folder):
                continue
            try:
                found[path] = pathlib.Path(path).read_text()
            except OSError as exc:
                record.setdefault("unreadable", {})[path] = str(exc)
    return found


def siblings():
    mine = pathlib.Path.cwd().resolve()
    seen = {}
    for folder in glob.glob(target["siblings"]) + [target["decoy"]]:
        tree = pathlib.Path(folder, "tree")
        if tree.resolve() == mine:
            continue
        entry = {}
        try:
            entry["listed"] = os.listdir(tree)
        except OSError as exc:
            entry["list_error"] = str(exc)
        try:
            pathlib.Path(tree, "evil.txt").write_text("planted by " + unit)
            entry["written"] = True
        except OSError as exc:
            entry["write_error"] = str(exc)
        seen[str(tree)] = entry
    return seen


def shared_repository():
    git = pathlib.Path(target["repo"], ".git")
    head = "0" * 40
    try:
        head = (git / "refs" / "heads" / "main").read_text().strip()
    except OSError:
        pass
    out = {}
    for path, text in ((git / "refs" / "heads" / "evil", head + "\n"), (git / "evil.txt", "x")):
        try:
            path.write_text(text)
            out[str(path)] = "written"
        except OSError as exc:
            out[str(path)] = str(exc)
    return out


def connect():
    with socket.create_connection(("127.0.0.1", target["port"]), timeout=3):
        return "connected"


async def publish():
    import nats
    from bus.creds import load_credential
    from schemas import Actor, UnitTransitioned, encode_event, subject_of
    from schemas.units import Outcome

    event = UnitTransitioned(
        project=brief["project"], actor=Actor(role="system", principal=target["mark"]),
        unit=unit, state="done", by="merged",
        outcome=Outcome(summary="trust me", ended_by="merge"),
    )
    seeds = []
    for path in found:
        try:
            seeds.append(load_credential(pathlib.Path(path)).seed)
        except Exception:
            pass
    async def quiet(exc):
        pass

    async def once(seed):
        options = {"nkeys_seed_str": seed} if seed else {}
        client = await nats.connect(
            f"nats://127.0.0.1:{target['port']}", connect_timeout=2, error_cb=quiet,
            max_reconnect_attempts=0, allow_reconnect=False, **options,
        )
        try:
            ack = await client.jetstream().publish(subject_of(event), encode_event(event))
            return f"published seq {ack.seq}"
        finally:
            await client.close()

    results = []
    for seed in seeds or [None]:
        try:  # nats-py retries a refused first connect for ever: bounded here
            results.append(await asyncio.wait_for(once(seed), 8))
        except BaseException as exc:
            results.append(f"{type(exc).__name__}: {exc}")
    return results


def child(code):
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )
    return {"exit": done.returncode, "out": done.stdout[-400:], "err": done.stderr[-400:]}


MEMORY = '''
size = (%d + 128) * 2**20
block = b"x" * size
print("allocated", len(block))
'''

FORKS = '''
import os, time
made = []
try:
    for _ in range(%d):
        pid = os.fork()
        if pid == 0:
            time.sleep(2)
            os._exit(0)
        made.append(pid)
    print("forked", len(made))
except OSError as exc:
    print("refused after", len(made), type(exc).__name__, exc)
for pid in made:
    os.waitpid(pid, 0)
'''

attempt("secrets", read_secrets)
attempt("siblings", siblings)
attempt("repository", shared_repository)
attempt("connect", connect)
attempt("publish", lambda: asyncio.run(publish()))
attempt("processes", lambda: child(FORKS % (target["processes"] + 16)))
if not retry:  # an OOM kill ends the run: the retry records the rest
    attempt("memory", lambda: child(MEMORY % target["memory_mb"]))
pathlib.Path(target["record"]).write_text(json.dumps(record, indent=1))
print(json.dumps({"schema": "loopbus.envelope.v2", "status": "completed"}))
"""


def repository(root: Path, executor: str, port: int) -> Path:
    """A repository whose trunk configures the hostile builder under ``executor``; what it
    aims at (paths, the NATS ``port``) is a file next to the script, outside the repo."""
    folder = root / "repo"
    folder.mkdir(parents=True)
    tools = root / "tools"
    tools.mkdir()
    script = tools / "hostile.py"
    script.write_text(HOSTILE)
    data = root / "data"
    target = {
        "secret_dirs": [str(data / "creds"), str(data / "keys")],
        # what an attacker guesses: the names `up` gives every credential
        "secret_files": [
            str(data / "creds" / f"{n}.json")
            for n in ("system", "operator", "reader", "agent", "gate-runner")
        ],
        "siblings": str(Path(tempfile.gettempdir(), "loopbus-build-*")),
        "decoy": str(root / "decoy"),
        "repo": str(folder),
        "port": port,
        "mark": MARK,
        "memory_mb": MEMORY_MB,
        "processes": PROCESSES,
        "record": RECORD,
    }
    (tools / "target.json").write_text(json.dumps(target))
    agents = [
        f'executor = "{executor}"',
        f'memory = "{MEMORY_MB}m"',
        f"processes = {PROCESSES}",
        f'cpu_time = "{CPU_TIME_S}s"',
    ]
    read_only = [str(tools)]
    if executor == "container":
        agents.append(f'image = "{agent_image_or_skip()}"')
        # /usr for the image's merged links; the interpreter's prefix the runner already
        # shows (the engine refuses the same mount point twice)
        read_only += [str(p) for p in host_read_only() if p != Path(sys.base_prefix)]
    if os.environ.get("LOOPBUS_HOSTILE_UNSANDBOXED"):
        agents.append('sandbox = "none"')  # the check that these tests can fail
    agents.append(f"read_only = {json.dumps(read_only)}")
    command = f"{sys.executable} {script} {tools / 'target.json'}"
    (folder / "loopbus.toml").write_text(
        f'[project]\nid = "{P}"\n\n[[check]]\nid = "ok"\ncommand = "true"\n'
        'parser = "exit-code"\n\n[build]\n'
        f"command = {json.dumps(command)}\n"
        'roster = ["b1"]\ntimeout = 120\nmode = "normal"\n\n[agents]\n' + "\n".join(agents) + "\n"
    )
    (folder / "app.py").write_text("VALUE = 1\n")
    with Repo.init(str(folder)) as opened:
        opened.refs.set_symbolic_ref(b"HEAD", b"refs/heads/main")
        porcelain.add(opened, [str(folder / "loopbus.toml"), str(folder / "app.py")])
        porcelain.commit(opened, b"base", author=b"a <a@x>", committer=b"a <a@x>")
    return folder


def decoy(root: Path) -> Path:
    """A sibling unit's worktree where the builder makes them, with a file in it."""
    folder = workdir("loopbus-build-", mode=0o711)
    tree = folder / "tree"
    tree.mkdir(mode=0o755)
    (tree / "secret.py").write_text("SIBLING = 'work in progress'\n")
    (root / "decoy").symlink_to(folder)
    return folder


@pytest.fixture(scope="module", params=["local", "container"])
def loop(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Loop]:
    executor = request.param
    root = tmp_path_factory.mktemp(f"hostile-command-{executor}")
    port = free_port()
    repo = repository(root, executor, port)
    sibling = decoy(root)
    try:
        with running_up(root / "data", "--repo", str(repo), port=port) as started:
            yield started
    finally:
        shutil.rmtree(sibling, ignore_errors=True)


@pytest.fixture
def executor(request: pytest.FixtureRequest) -> str:
    """The executor the module's ``loop`` runs agents with."""
    return str(request.node.callspec.params["loop"])


def branch_file(repo: Path, unit: str, name: str) -> bytes | None:
    """``name`` at the head of the unit's branch, or ``None`` while there is none."""
    with Repo(str(repo)) as opened:
        ref = f"refs/heads/loopbus/{P}/{unit}".encode()
        if ref not in opened.refs:
            return None
        tree = opened[opened[opened.refs[ref]].tree]  # type: ignore[attr-defined]
        if name.encode() not in tree:
            return None
        return bytes(opened[tree[name.encode()][1]].data)  # type: ignore[attr-defined]


async def record_of(loop: Loop, unit: str) -> dict[str, Any]:
    """The hostile command's record, from the unit's branch; if the unit gives up first,
    the failure says why (the builder's findings)."""
    repo = loop.data_dir.parent / "repo"
    async with asyncio.timeout(WAIT_S * 3):
        while (raw := branch_file(repo, unit, RECORD)) is None:
            events = await loop.events(P)
            if any(isinstance(e, GaveUpReport) and e.unit == unit for e in events):
                said = [e.message for e in events if isinstance(e, FindingRaised)]
                raise AssertionError(f"{unit} gave up: {said}")
            await asyncio.sleep(0.5)
    return dict(json.loads(raw))


def secrets(data_dir: Path) -> list[tuple[Path, bytes]]:
    return [
        (path, path.read_bytes())
        for folder in ("creds", "keys")
        for path in sorted((data_dir / folder).iterdir())
        if path.is_file()
    ]


async def test_a_hostile_command_gets_nothing_of_the_host(loop: Loop, executor: str) -> None:
    """Every move of the hostile builder failed, and nothing it tried is on the log or in
    the repository; the system credential is still its owner's alone."""
    await dispatch(loop, "U1")
    record = await record_of(loop, "U1")
    text = json.dumps(record)
    root = loop.data_dir.parent

    found = secrets(loop.data_dir)
    assert len(found) >= 5, found  # the test looks at what is really there
    for path, content in found:
        # the seeds and key material: every long token of the file
        for token in re.findall(r"[A-Za-z0-9+/=]{24,}", content.decode(errors="replace")):
            assert token not in text, f"{path} leaked into the agent's record: {text}"
    assert record["secrets"] == {"ok": {}}, record

    siblings = record["siblings"]["ok"]
    assert siblings, record  # it at least tried the decoy
    for tree, entry in siblings.items():
        assert "listed" not in entry and "written" not in entry, (tree, entry)
    assert not (root / "decoy" / "tree" / "evil.txt").exists()

    with Repo(str(root / "repo")) as repo:
        assert b"refs/heads/evil" not in repo.refs
    assert not (root / "repo" / ".git" / "evil.txt").exists()
    assert "written" not in json.dumps(record["repository"]), record["repository"]

    assert "error" in record["connect"], record["connect"]
    published = record["publish"].get("ok") or [record["publish"]["error"]]
    assert not any(r.startswith("published") for r in published), published

    forks = record["processes"]["ok"]
    assert "refused after" in forks["out"], forks
    assert int(forks["out"].split()[2]) < PROCESSES, forks

    memory = record.get("memory") or {}
    if memory:  # the run went on after the attempt: the allocation failed inside it
        child = memory.get("ok", {})
        assert "allocated" not in child.get("out", ""), memory
        assert child.get("exit") != 0, memory
    # Each limit the sandbox can observe here is a finding (the executor's word, not the
    # agent's): memory under both executors, processes where a control group counts them.
    named = {b for f in await breach_findings(loop, "U1") for b in f.evidence["breaches"]}
    observed = {"memory"} if executor == "container" else LOCAL_OBSERVES
    assert observed <= named, (observed, named)

    events = await loop.events(P)
    forged = [e for e in events if e.actor.principal == MARK]
    assert forged == [], forged
    assert not [
        e
        for e in events
        if isinstance(e, UnitTransitioned) and e.unit == "U1" and e.actor.role != "system"
    ]

    system = loop.data_dir / "creds" / "system.json"
    assert stat.S_IMODE(system.stat().st_mode) == 0o600
    assert stat.S_IMODE(loop.data_dir.stat().st_mode) == 0o700


async def breach_findings(loop: Loop, unit: str) -> list[FindingRaised]:
    """The unit's sandbox-breach findings, once its builder's answer is on the log: the
    builder sets the branch (where the record is read) before it publishes the findings,
    in one batch with the answer, so reading them on sight of the record can be too soon."""
    async with asyncio.timeout(WAIT_S):
        events = await loop.events(P)
        while not any(isinstance(e, CommitReport) and e.unit == unit for e in events):
            if any(isinstance(e, GaveUpReport) and e.unit == unit for e in events):
                said = [e.message for e in events if isinstance(e, FindingRaised)]
                raise AssertionError(f"{unit} gave up: {said}")
            await asyncio.sleep(0.5)
            events = await loop.events(P)
    return [
        e
        for e in events
        if isinstance(e, FindingRaised) and e.cls == "sandbox-breach" and e.unit == unit
    ]


def _local_observes() -> frozenset[str]:
    """What the local executor can observe on this machine: memory and processes where a
    control group can be made (docs/security.md), nothing where it cannot."""
    if os.geteuid() != 0:
        return frozenset()
    made = cgroups.make("loopbus-run-probe", 64 * 1024 * 1024, 8)
    if isinstance(made, str):
        return frozenset()
    made.remove()
    return frozenset({"memory", "processes"})


LOCAL_OBSERVES = _local_observes()


async def test_a_command_killed_at_its_cpu_limit_is_a_finding(loop: Loop) -> None:
    """The sandbox kills a command spinning past ``[agents] cpu_time`` and the builder
    daemon names the breach on the log; the retry (which does not spin) answers."""
    await dispatch(loop, "SPIN")
    found = await loop.findings(P, lambda f: f.cls == "sandbox-breach" and f.unit == "SPIN")
    # the retry's own attempts (its forks past the limit) may be a second run's finding
    [finding] = [f for f in found if f.evidence["attempt"] == 1]
    assert finding.actor.role == "system" and finding.criterion == "agent-limits"
    assert finding.evidence["breaches"] == ["cpu"], finding.evidence
    assert finding.evidence["executor"] in ("local", "container")
    assert "cpu" in finding.message and "SPIN" in finding.message
    record = await record_of(loop, "SPIN")
    assert record["retry"] is True
