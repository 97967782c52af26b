"""The local executor under a root daemon: what an agent's command can and cannot reach,
with bubblewrap namespaces and with the uid alone (``namespaces=False``)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from workers.agents import cgroups, local
from workers.agents.environment import agent_env
from workers.agents.local import LocalExecutor
from workers.agents.sandbox import Limits, SandboxResult, SandboxSpec
from workers.agents.workspace import remove, workdir

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0, reason="the local executor's uid fence needs root"
)

PYTHON = "/usr/bin/python3"  # outside any 0700 home: reachable by a run's uid on both paths

DEFAULT_LIMITS = Limits()


@pytest.fixture(params=[None, False], ids=["bwrap", "uid-only"])
def namespaces(request: pytest.FixtureRequest, bubblewrap: str | None) -> bool | None:
    """``None``: the executor's default, which must wrap the run in bubblewrap (the case
    is skipped only where bubblewrap does not work here by the independent probe);
    ``False``: the uid alone."""
    if not Path(PYTHON).exists():
        pytest.skip(f"{PYTHON} is not installed")
    if request.param is None and bubblewrap is not None:
        pytest.skip(bubblewrap)
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def data_dir() -> Iterator[Path]:
    """A data directory as ``loopbus up`` leaves it: 0700, a 0600 system credential."""
    folder = workdir("loopbus-data-", mode=0o700)
    (folder / "creds").mkdir(mode=0o700)
    secret = folder / "creds" / "system.json"
    secret.write_text('{"seed": "SUAM-the-system-credential"}')
    secret.chmod(0o600)
    yield folder
    remove(folder)


@pytest.fixture
def worktrees() -> Iterator[tuple[Path, Path]]:
    """Two units' worktrees as the builder prepares them (a 0711 folder, a 0700 tree)."""
    folders = [workdir("loopbus-build-", mode=0o711) for _ in range(2)]
    trees = []
    for folder in folders:
        tree = folder / "tree"
        tree.mkdir(mode=0o700)
        (tree / "app.py").write_text("print('hi')\n")
        trees.append(tree)
    yield trees[0], trees[1]
    for folder in folders:
        remove(folder)


async def run(
    namespaces: bool | None,
    worktree: Path,
    script: str,
    *,
    limits: Limits = DEFAULT_LIMITS,
    timeout_s: float = 60,
    env: dict[str, str] | None = None,
) -> SandboxResult:
    spec = SandboxSpec(
        argv=[PYTHON, "-c", textwrap.dedent(script)],
        stdin=b"",
        worktree=worktree,
        env=env if env is not None else agent_env({}),
        timeout_s=timeout_s,
        limits=limits,
    )
    executor = LocalExecutor(namespaces=namespaces)
    assert await executor.available() is None
    # None is asked for only where bubblewrap works here (the fixtures): it must wrap.
    assert namespaces is False or await executor.wraps(), await executor.bubblewrap.problem()
    return await executor.run(spec)


def out(result: SandboxResult) -> str:
    assert result.start_error is None, result.start_error
    return result.stdout.decode()


async def test_cannot_read_the_system_credential(
    namespaces: bool | None, data_dir: Path, worktrees: tuple[Path, Path]
) -> None:
    """A 0600 root file in a 0700 folder (creds/system.json) is out of the command's reach."""
    secret = data_dir / "creds" / "system.json"
    result = await run(
        namespaces,
        worktrees[0],
        f"""
        try:
            print(open({str(secret)!r}).read())
        except OSError as exc:
            print("refused", exc.errno)
        """,
    )
    assert "SUAM" not in out(result)
    assert "refused" in out(result)


async def test_cannot_list_or_write_a_sibling_worktree(
    namespaces: bool | None, worktrees: tuple[Path, Path]
) -> None:
    """Another unit's worktree can be neither listed nor written."""
    mine, sibling = worktrees
    result = await run(
        namespaces,
        mine,
        f"""
        import os
        for attempt in ("list", "write"):
            try:
                if attempt == "list":
                    os.listdir({str(sibling)!r})
                else:
                    open({str(sibling / "planted.py")!r}, "w").write("x")
                print(attempt, "succeeded")
            except OSError:
                print(attempt, "refused")
        """,
    )
    assert out(result).split() == ["list", "refused", "write", "refused"]
    assert not (sibling / "planted.py").exists()


async def test_writes_its_own_worktree_and_the_daemon_gets_it_back(
    namespaces: bool | None, worktrees: tuple[Path, Path]
) -> None:
    """The command edits its worktree (its working directory); afterwards every file is
    the daemon's again, so the adapter can commit it."""
    mine = worktrees[0]
    result = await run(
        namespaces,
        mine,
        """
        import os
        open("app.py", "a").write("print('more')\\n")
        os.mkdir("new")
        open("new/mod.py", "w").write("x = 1\\n")
        os.chmod("new/mod.py", 0o6755)
        print(os.getcwd(), os.getuid())
        """,
    )
    cwd, uid = out(result).split()
    assert Path(cwd) == mine and int(uid) != 0
    assert (mine / "app.py").read_text().endswith("print('more')\n")
    for path in (mine, mine / "app.py", mine / "new", mine / "new" / "mod.py"):
        assert path.stat().st_uid == 0, path
    assert not (mine / "new" / "mod.py").stat().st_mode & 0o6000  # no set-uid for root


async def test_sees_a_private_empty_temporary_directory(
    namespaces: bool | None, worktrees: tuple[Path, Path]
) -> None:
    """HOME and TMPDIR are one private folder, empty, the command's own (0700); under
    bubblewrap /tmp itself holds nothing of the host's."""
    (Path("/tmp") / "loopbus-host-marker").write_text("host")
    try:
        result = await run(
            namespaces,
            worktrees[0],
            """
            import os, stat
            tmp = os.environ["TMPDIR"]
            info = os.stat(tmp)
            print(tmp == os.environ["HOME"], os.listdir(tmp), oct(stat.S_IMODE(info.st_mode)),
                  info.st_uid == os.getuid(), os.path.exists("/tmp/loopbus-host-marker"))
            """,
        )
    finally:
        (Path("/tmp") / "loopbus-host-marker").unlink()
    same, listing, mode, owned, marker = out(result).split()
    assert (same, listing, mode, owned) == ("True", "[]", "0o700", "True")
    assert marker == ("True" if namespaces is False else "False")


async def test_gets_no_loopbus_or_nats_variable(
    namespaces: bool | None, worktrees: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever the daemon holds (its NATS address, credentials, LOOPBUS_* settings), the
    agent's environment has none of it: only the role's own variables."""
    monkeypatch.setenv("LOOPBUS_NATS_URL", "nats://127.0.0.1:4222")
    monkeypatch.setenv("LOOPBUS_CREDS", "/var/lib/loopbus/creds/system.json")
    monkeypatch.setenv("NATS_URL", "nats://127.0.0.1:4222")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    result = await run(
        namespaces,
        worktrees[0],
        "import os, json; print(json.dumps(dict(os.environ)))",
        env=agent_env({"LOOPBUS_UNIT": "U1"}),
    )
    seen = json.loads(out(result))
    assert seen["LOOPBUS_UNIT"] == "U1"
    leaked = [k for k in seen if k.startswith(("LOOPBUS_", "NATS")) and k != "LOOPBUS_UNIT"]
    assert leaked == [] and "AWS_SECRET_ACCESS_KEY" not in seen
    assert seen["PATH"].split(os.pathsep)[0] == os.path.dirname(sys.executable)


FORK_BOMB = """
import os, time
made = 0
for _ in range(200):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(600)
        os._exit(0)
    made += 1
print(made)
"""

ALLOCATE = """
try:
    block = bytearray(600 * 1024 * 1024)
    print("allocated", len(block))
except MemoryError:
    print("refused")
"""


async def test_a_fork_bomb_stops_at_the_process_limit_and_is_a_breach(
    namespaces: bool | None, worktrees: tuple[Path, Path]
) -> None:
    """Past ``processes`` the command cannot fork, and the executor (not the command) says
    so: the run's control group counted the refused fork."""
    result = await run(namespaces, worktrees[0], FORK_BOMB, limits=Limits(processes=32))
    made = int(out(result))
    assert made < 32
    assert result.breaches == ("processes",)


async def test_allocating_past_the_memory_limit_is_a_breach(
    namespaces: bool | None, worktrees: tuple[Path, Path]
) -> None:
    """An allocation past ``memory`` does not succeed: the kernel kills the process at the
    run's control group limit, and the result names the breach, whatever the command
    prints or hides."""
    result = await run(namespaces, worktrees[0], ALLOCATE, limits=Limits(memory_mb=256))
    assert "allocated" not in out(result)
    assert result.exit_code != 0
    assert result.breaches == ("memory",)


async def test_a_command_within_its_limits_has_no_breach(
    namespaces: bool | None, worktrees: tuple[Path, Path]
) -> None:
    """Forking a few children and allocating well under the limit is no breach."""
    result = await run(
        namespaces,
        worktrees[0],
        """
        import os
        block = bytearray(32 * 1024 * 1024)
        for _ in range(4):
            pid = os.fork()
            if pid == 0:
                os._exit(0)
            os.waitpid(pid, 0)
        print("ok", len(block))
        """,
        limits=Limits(memory_mb=256, processes=32),
    )
    assert out(result).split() == ["ok", str(32 * 1024 * 1024)]
    assert result.breaches == ()


@pytest.fixture
def no_cgroups(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A host where no cgroup hierarchy is mounted: /proc/self/mountinfo as it would read."""
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text("22 1 0:21 / / rw,relatime - ext4 /dev/vda rw\n")
    monkeypatch.setattr(cgroups, "MOUNTINFO", mountinfo)
    monkeypatch.setattr(local, "_told", set())


async def test_without_a_control_group_the_rlimits_hold_and_it_is_said_once(
    namespaces: bool | None, worktrees: tuple[Path, Path], no_cgroups: None
) -> None:
    """Where no control group can be made, the address-space and process rlimits still
    stop the command; the breach is then the command's own failure, not a reported one
    (never pretended), and the log says why once."""
    with capture_logs() as logs:
        memory = await run(namespaces, worktrees[0], ALLOCATE, limits=Limits(memory_mb=256))
        forks = await run(namespaces, worktrees[0], FORK_BOMB, limits=Limits(processes=32))
    assert out(memory).split() == ["refused"] and memory.breaches == ()
    assert int(out(forks)) < 32 and forks.breaches == ()
    said = [e for e in logs if e["event"] == "agent.limits_unobserved"]
    assert len(said) == 1, said
    assert "no cgroup hierarchy" in said[0]["reason"]


async def test_cannot_reach_a_port_on_the_host_with_no_network(
    worktrees: tuple[Path, Path], bubblewrap_works: None
) -> None:
    """With no ``network`` listed, a TCP port listening on 127.0.0.1 (the NATS server's
    place) cannot be reached: the command's loopback is its own."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        result = await run(
            None,
            worktrees[0],
            f"""
            import socket
            try:
                socket.create_connection(("127.0.0.1", {port}), timeout=5).close()
                print("connected")
            except OSError:
                print("refused")
            """,
        )
    assert out(result).split() == ["refused"]


async def test_a_timeout_kills_the_command_and_everything_it_started(
    namespaces: bool | None, worktrees: tuple[Path, Path]
) -> None:
    """Past the timeout the command is killed with its children, a child that left the
    process group with setsid included."""
    marker = f"loopbus-escapee-{os.getpid()}-{id(worktrees)}"
    result = await run(
        namespaces,
        worktrees[0],
        f"""
        import os, subprocess, sys, time
        subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(600)", {marker!r}],
            start_new_session=True, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        open("started", "w").close()
        time.sleep(600)
        """,
        timeout_s=3,
    )
    assert result.timed_out and result.breaches == ("timeout",)
    assert (worktrees[0] / "started").exists()
    assert not _running(marker)


def _running(marker: str) -> list[int]:
    """Live (not zombie) processes whose command line holds ``marker``."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            cmdline = Path(entry.path, "cmdline").read_bytes()
            state = Path(entry.path, "status").read_text().split("State:")[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker.encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


async def test_spinning_past_the_cpu_limit_is_a_cpu_breach(
    namespaces: bool | None, worktrees: tuple[Path, Path]
) -> None:
    """Past ``cpu_time`` CPU seconds the kernel stops the command (SIGXCPU), and the
    result names the breach."""
    result = await run(namespaces, worktrees[0], "while True: pass", limits=Limits(cpu_time_s=1))
    assert not result.timed_out and result.exit_code != 0
    assert result.breaches == ("cpu",)


PRELOAD_C = r"""
#include <stdio.h>
#include <unistd.h>
__attribute__((constructor)) static void grab(void) {
    FILE *f = fopen(MARKER, "a");
    if (f) { fprintf(f, "loaded as uid %d\n", (int)getuid()); fclose(f); }
}
"""


async def test_the_run_s_environment_never_reaches_what_starts_it_as_the_daemon(
    namespaces: bool | None, data_dir: Path, worktrees: tuple[Path, Path]
) -> None:
    """A check's ``env`` is the unit's to write (an added check): ``LD_PRELOAD`` naming a
    library in the worktree must not be loaded by bubblewrap or the launcher, which start
    as the daemon's user; only the command, inside, sees it. The library writes a marker
    into the (0700) data directory each time it is loaded."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler to build the preloaded library")
    marker = data_dir / "preloaded"
    source = worktrees[0] / "grab.c"
    source.write_text(PRELOAD_C)
    library = worktrees[0] / "grab.so"
    import subprocess

    subprocess.run(
        [compiler, "-shared", "-fPIC", f'-DMARKER="{marker}"', "-o", str(library), str(source)],
        check=True,
    )
    result = await run(
        namespaces,
        worktrees[0],
        "print('ran')",
        env={**agent_env({}), "LD_PRELOAD": str(library)},
    )
    assert "ran" in out(result)
    assert not marker.exists(), marker.read_text()
