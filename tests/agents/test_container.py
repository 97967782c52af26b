"""The container executor against the real Docker engine: what an agent command in it can
and cannot see, write, reach and use, and that nothing of the run is left behind."""

from __future__ import annotations

import asyncio
import ipaddress
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agent_image import agent_image_or_skip, containers_of, host_read_only, python_spec

from workers.agents.container import AGENT_UID, ContainerExecutor
from workers.agents.sandbox import Limits, SandboxResult, SandboxSpec


@pytest.fixture(scope="session")
def image() -> str:
    return agent_image_or_skip()


@pytest.fixture
def worktree(tmp_path: Path) -> Path:
    tree = tmp_path / "units" / "u1"
    tree.mkdir(parents=True)
    (tree / "README").write_text("unit one\n")
    return tree


async def run_python(image: str, worktree: Path, code: str, **options: Any) -> SandboxResult:
    """``code`` run by the host's interpreter inside the container, isolated (-I)."""
    return await ContainerExecutor().run(python_spec(image, worktree, code, **options))


def ok(result: SandboxResult) -> str:
    assert result.start_error is None, result.start_error
    assert result.exit_code == 0, result.stderr.decode()
    return result.stdout.decode()


async def test_the_command_reads_stdin_writes_its_worktree_and_its_output_is_kept_apart(
    image: str, worktree: Path
) -> None:
    """stdin reaches the command, it can write its worktree (as a non-root uid), stdout and
    stderr come back separately, and the worktree is the daemon's again afterwards."""
    result = await run_python(
        image,
        worktree,
        """
        import os, sys
        brief = sys.stdin.read()
        open("answer.txt", "w").write(brief.upper())
        os.mkdir("made")
        print(os.getcwd(), os.getuid(), os.getgid())
        print("to stderr", file=sys.stderr)
        """,
        stdin=b"the brief",
    )
    cwd, uid, gid = ok(result).split()
    assert cwd == str(worktree)
    assert (int(uid), int(gid)) == (AGENT_UID, AGENT_UID)
    assert result.stderr == b"to stderr\n"
    assert (worktree / "answer.txt").read_text() == "THE BRIEF"
    for path in (worktree, worktree / "answer.txt", worktree / "made", worktree / "README"):
        assert os.lstat(path).st_uid == os.getuid(), path


async def test_a_worktree_owned_by_a_non_root_user_is_used_as_that_user(
    image: str, worktree: Path
) -> None:
    """When the worktree's owner is not root the command runs as that owner, and a set-uid
    file it leaves is no set-uid program of that owner after the run."""
    os.chown(worktree, 4321, 4321)
    result = await run_python(
        image,
        worktree,
        "import os; open('x', 'w'); os.chmod('x', 0o6755); print(os.getuid())",
    )
    assert ok(result).strip() == "4321"
    made = os.lstat(worktree / "x")
    assert made.st_uid == 4321
    assert stat.S_IMODE(made.st_mode) == 0o755


async def test_a_worktree_given_as_a_link_is_refused(image: str, worktree: Path) -> None:
    """A link as the worktree is a start error: lending it would hand out the link."""
    link = worktree.parent / "link"
    link.symlink_to(worktree)
    result = await run_python(image, link, "print(1)")
    assert result.start_error is not None and "symbolic link" in result.start_error


async def test_read_only_paths_are_seen_but_cannot_be_written(
    image: str, worktree: Path, tmp_path: Path
) -> None:
    """A read-only path is at its host path, readable, and every write to it fails, as does
    every write to the image's own files, even a folder the image leaves world-writable."""
    brief = tmp_path / "brief"
    brief.mkdir()
    (brief / "spec.md").write_text("the spec\n")
    # Writable by anyone: only the read-only mount can be what stops the agent.
    brief.chmod(0o777)
    (brief / "spec.md").chmod(0o666)
    result = await run_python(
        image,
        worktree,
        f"""
        import os
        print(open({str(brief / "spec.md")!r}).read().strip())
        for attempt in (lambda: open({str(brief / "spec.md")!r}, "a"),
                        lambda: open({str(brief / "new")!r}, "w"),
                        lambda: open("/var/tmp/planted", "w")):
            try:
                attempt()
                print("WROTE")
            except OSError as exc:
                print(exc.errno)
        """,
        read_only=(brief,),
    )
    lines = ok(result).split()
    assert lines[0:2] == ["the", "spec"]
    assert lines[2:] == ["30", "30", "30"]  # EROFS: the mount says no, not a permission
    assert not (brief / "new").exists() and (brief / "spec.md").read_text() == "the spec\n"


@pytest.fixture
def host_secrets(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A stand-in for ``<data-dir>/creds/system.json`` (0600 in a 0700 folder) and a
    sibling unit's worktree, both on the host and outside the run's mounts."""
    data = tmp_path / "data"
    (data / "creds").mkdir(parents=True)
    data.chmod(0o700)
    secret = data / "creds" / "system.json"
    secret.write_text('{"jwt": "system"}')
    secret.chmod(0o600)
    sibling = tmp_path / "units" / "u2"
    sibling.mkdir(parents=True)
    (sibling / "work.py").write_text("print('u2')\n")
    yield secret, sibling


async def test_host_paths_that_are_not_mounted_do_not_exist_for_the_command(
    image: str, worktree: Path, host_secrets: tuple[Path, Path]
) -> None:
    """Credentials, a sibling's worktree and the parent folder of its own worktree are
    absent inside, also through a link the command plants in its worktree."""
    secret, sibling = host_secrets
    result = await run_python(
        image,
        worktree,
        f"""
        import os
        os.symlink({str(secret)!r}, "stolen")
        for path in ({str(secret)!r}, {str(secret.parent)!r}, {str(sibling / "work.py")!r},
                     {str(sibling)!r}, "stolen"):
            print(path, os.path.exists(path))
        print(sorted(os.listdir({str(worktree.parent)!r})))
        """,
    )
    out = ok(result).splitlines()
    assert all(line.endswith(" False") for line in out[:5]), out
    assert out[5] == "['u1']"  # its own mount point only, no sibling
    assert secret.read_text() == '{"jwt": "system"}'


async def test_giving_the_worktree_back_never_follows_links_and_clears_set_id_bits(
    image: str, worktree: Path, host_secrets: tuple[Path, Path]
) -> None:
    """A link to a host file and a set-uid file left in the worktree: after the run the
    host file still has its own owner and the set-uid file is no set-uid program."""
    secret, _ = host_secrets
    os.chown(secret, 12345, 12345)
    result = await run_python(
        image,
        worktree,
        f"""
        import os
        os.symlink({str(secret)!r}, "link")
        os.symlink({str(secret.parent)!r}, "folder-link")
        open("tool", "w").write("x")
        os.chmod("tool", 0o6755)
        """,
    )
    ok(result)
    assert os.stat(secret).st_uid == 12345
    tool = os.lstat(worktree / "tool")
    assert tool.st_uid == os.getuid()
    assert stat.S_IMODE(tool.st_mode) == 0o755
    assert os.lstat(worktree / "link").st_uid == os.getuid()


def bridge_gateway() -> str:
    """The host's address on Docker's default bridge (where a container would reach it)."""
    import subprocess

    # The engine's own view: IPAM names a gateway, or it is the subnet's first address.
    out = subprocess.run(
        [
            "docker",
            "network",
            "inspect",
            "bridge",
            "-f",
            "{{range .IPAM.Config}}{{.Gateway}} {{.Subnet}}{{end}}",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    if len(out) == 2:
        return out[0]
    return str(next(ipaddress.ip_network(out[0]).hosts()))


async def test_the_command_has_no_network_at_all(image: str, worktree: Path) -> None:
    """Ports listening on the host's loopback and on the Docker bridge gateway cannot be
    reached; the only interface inside is loopback."""
    servers = []
    targets = []
    for host in ("127.0.0.1", bridge_gateway()):
        server = await asyncio.start_server(lambda r, w: w.close(), host, 0)
        servers.append(server)
        targets.append((host, server.sockets[0].getsockname()[1]))
    try:
        result = await run_python(
            image,
            worktree,
            f"""
            import os, socket
            for host, port in {targets!r}:
                try:
                    socket.create_connection((host, port), timeout=3).close()
                    print("REACHED", host)
                except OSError as exc:
                    print("refused", host, exc.errno)
            print(sorted(os.listdir("/sys/class/net")))
            """,
        )
    finally:
        for server in servers:
            server.close()
    out = ok(result)
    assert "REACHED" not in out
    assert out.splitlines()[-1] == "['lo']"
    # The listeners were real: the host itself reaches them.
    for host, _ in targets:
        assert host in out


def iptables_rules() -> str:
    import subprocess

    return "".join(
        subprocess.run(
            ["iptables", "-w", "-S", chain], capture_output=True, text=True, check=True
        ).stdout
        for chain in ("INPUT", "DOCKER-USER")
    )


async def test_a_network_allowlist_reaches_exactly_the_listed_pairs(
    image: str, worktree: Path
) -> None:
    """Listed host:port pairs are reachable; another port of the same host, the run's
    own gateway and Docker's default bridge are not; nothing of the fence outlives it."""
    import aiodocker

    gateway = bridge_gateway()
    servers = [await asyncio.start_server(lambda r, w: w.close(), "0.0.0.0", 0) for _ in "ab"]
    allowed_port, other_port = (s.sockets[0].getsockname()[1] for s in servers)
    rules_before = iptables_rules()
    try:
        result = await run_python(
            image,
            worktree,
            f"""
            import socket, struct
            def gateway():  # the run's own network's gateway, from the routing table
                for line in open("/proc/net/route").read().splitlines()[1:]:
                    fields = line.split()
                    if fields[1] == "00000000":
                        return socket.inet_ntoa(struct.pack("<L", int(fields[2], 16)))
            targets = [("allowed", {gateway!r}, {allowed_port}),
                       ("other-port", {gateway!r}, {other_port}),
                       ("own-gateway", gateway(), {allowed_port})]
            for name, host, port in targets:
                try:
                    socket.create_connection((host, port), timeout=5).close()
                    print(name, "REACHED")
                except OSError as exc:
                    print(name, "refused")
            print("ipv6 addresses:", open("/proc/net/if_inet6").read().split())
            """,
            network=(f"{gateway}:{allowed_port}",),
        )
    finally:
        for server in servers:
            server.close()
    assert ok(result).splitlines() == [
        "allowed REACHED",
        "other-port refused",
        "own-gateway refused",
        "ipv6 addresses: []",
    ]
    assert iptables_rules() == rules_before
    docker = aiodocker.Docker()
    try:
        left = await docker.networks.list(filters={"label": ["org.loopbus.agent=1"]})
    finally:
        await docker.close()
    assert [n["Name"] for n in left if n["Name"].startswith("loopbus-agent-")] == []


async def test_a_malformed_network_entry_is_a_start_error_naming_it(
    image: str, worktree: Path
) -> None:
    """An entry that is not host:port does not start the run, and says which entry."""
    result = await run_python(image, worktree, "print(1)", network=("pypi.org",))
    assert result.exit_code is None and result.stdout == b""
    assert result.start_error is not None and "'pypi.org'" in result.start_error
    assert await containers_of(worktree) == []


async def test_the_environment_is_the_specs_with_a_private_tmp(image: str, worktree: Path) -> None:
    """The command sees exactly spec.env, plus TMPDIR and HOME on its own tmpfs and
    the HOSTNAME Docker always sets — none of the daemon's environment."""
    os.environ["LOOPBUS_DAEMON_SECRET"] = "leak"
    try:
        result = await run_python(
            image,
            worktree,
            """
            import json, os
            env = dict(os.environ)
            env.pop("LC_CTYPE", None)  # set by the interpreter itself (PEP 538), not given
            print(json.dumps([env, os.listdir(os.environ["TMPDIR"])]))
            open(os.environ["HOME"] + "/scratch", "w").write("ok")
            """,
            env={"PATH": "/usr/bin", "AGENT_ROLE": "reviewer"},
        )
    finally:
        del os.environ["LOOPBUS_DAEMON_SECRET"]
    import json

    env, tmp_listing = json.loads(ok(result))
    hostname = env.pop("HOSTNAME")
    assert hostname
    assert env == {"PATH": "/usr/bin", "AGENT_ROLE": "reviewer", "TMPDIR": "/tmp", "HOME": "/tmp"}
    # Only the way down to mounts that live under the host's /tmp (pytest's tmp_path).
    mounted_under_tmp = {
        p.relative_to("/tmp").parts[0]
        for p in (worktree, *host_read_only())
        if p.is_relative_to("/tmp")
    }
    assert set(tmp_listing) == mounted_under_tmp


async def test_exceeding_the_memory_limit_is_a_memory_breach(image: str, worktree: Path) -> None:
    """A command that touches four times its memory limit is killed and named a breach."""
    result = await run_python(
        image,
        worktree,
        "block = bytearray(256 * 1024 * 1024)\nprint('SURVIVED')",
        limits=Limits(memory_mb=64),
    )
    assert result.breaches == ("memory",)
    assert result.exit_code is None
    assert b"SURVIVED" not in result.stdout


async def test_a_fork_loop_is_bounded_by_the_process_limit(image: str, worktree: Path) -> None:
    """Forking without end stops with EAGAIN short of the process limit."""
    result = await run_python(
        image,
        worktree,
        """
        import os, time
        count = 0
        try:
            while count < 500:
                if os.fork() == 0:
                    time.sleep(60)
                    os._exit(0)
                count += 1
        except OSError as exc:
            print(count, exc.errno)
        """,
        limits=Limits(processes=16),
        timeout_s=60,
    )
    count, errno = ok(result).split()
    assert int(count) < 16
    assert int(errno) == 11  # EAGAIN


async def test_cpu_time_beyond_the_limit_is_a_cpu_breach(image: str, worktree: Path) -> None:
    """A busy loop past its CPU-time limit is killed and named a breach."""
    result = await run_python(
        image, worktree, "while True: pass", limits=Limits(cpu_time_s=1), timeout_s=60
    )
    assert result.breaches == ("cpu",), (
        result.exit_code,
        result.duration_s,
        result.stderr[-300:],
    )
    assert not result.timed_out


async def test_a_timeout_kills_the_command_and_removes_its_container(
    image: str, worktree: Path
) -> None:
    """Past its timeout the run ends as a timeout breach and its container is gone."""
    run = asyncio.create_task(
        run_python(image, worktree, "import time; time.sleep(600)", timeout_s=3)
    )
    while not await containers_of(worktree):  # the label finds the live container
        assert not run.done(), run.result()
        await asyncio.sleep(0.05)
    result = await asyncio.wait_for(run, 60)
    assert result.timed_out and result.breaches == ("timeout",)
    assert result.exit_code is None
    assert await containers_of(worktree) == []
    assert os.lstat(worktree).st_uid == os.getuid()


async def test_a_cancelled_run_still_removes_its_container_and_returns_the_worktree(
    image: str, worktree: Path
) -> None:
    """Cancelling the run (the daemon stopping) kills and deletes the container and gives
    the worktree back before the cancellation reaches the caller."""
    run = asyncio.create_task(
        run_python(image, worktree, "open('w', 'w'); import time; time.sleep(600)")
    )
    while not (worktree / "w").exists():
        assert not run.done(), run.result()
        await asyncio.sleep(0.05)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert await containers_of(worktree) == []
    assert os.lstat(worktree / "w").st_uid == os.getuid()


async def test_a_missing_image_is_a_start_error_naming_it_and_the_fix(
    image: str, worktree: Path
) -> None:
    """An image the engine does not have and cannot pull is reported, not raised."""
    spec = SandboxSpec(
        argv=["true"],
        stdin=b"",
        worktree=worktree,
        env={},
        timeout_s=30,
        image="loopbus-no-such-image:never",
    )
    result = await ContainerExecutor().run(spec)
    assert result.exit_code is None
    assert result.start_error is not None
    assert "loopbus-no-such-image:never" in result.start_error
    assert "[agents] image" in result.start_error
    assert os.lstat(worktree).st_uid == os.getuid()


async def test_a_command_missing_from_the_image_is_a_start_error(
    image: str, worktree: Path
) -> None:
    """A command the container cannot execute is a start error, and nothing is left."""
    spec = SandboxSpec(
        argv=["/no/such/agent"],
        stdin=b"x",
        worktree=worktree,
        env={},
        timeout_s=30,
        image=image,
    )
    result = await ContainerExecutor().run(spec)
    assert result.start_error is not None and "container did not start" in result.start_error
    assert await containers_of(worktree) == []
    assert os.lstat(worktree).st_uid == os.getuid()


async def test_available_says_why_not_in_one_line_when_no_engine_answers(
    image: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """With the engine here ``available()`` is None; pointed at no engine it is one line
    naming where it looked."""
    assert await ContainerExecutor().available() is None
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    why = await ContainerExecutor().available()
    assert why is not None and "\n" not in why and "no-engine.sock" in why


async def test_a_large_stdin_arrives_whole_and_one_left_unread_does_not_hang_the_run(
    image: str, worktree: Path
) -> None:
    """A 3 MB brief reaches a command that reads it; a command that never reads its stdin
    still ends the run when it exits."""
    brief = bytes(range(256)) * (3 * 4096)
    reader = await run_python(
        image,
        worktree,
        "import hashlib, sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())",
        stdin=brief,
    )
    import hashlib

    assert ok(reader).strip() == hashlib.sha256(brief).hexdigest()
    ignorer = await run_python(image, worktree, "print('done')", stdin=brief, timeout_s=30)
    assert ok(ignorer).strip() == "done"
    assert not ignorer.timed_out


async def test_a_container_removed_from_outside_mid_run_is_a_result_not_a_crash(
    image: str, worktree: Path
) -> None:
    """Someone deleting the container mid-run (an operator, an engine restart) ends the run
    as a failure that is no breach, and the worktree is still given back."""
    import aiodocker

    run = asyncio.create_task(
        run_python(image, worktree, "open('w', 'w'); import time; time.sleep(600)")
    )
    while not (worktree / "w").exists():
        assert not run.done(), run.result()
        await asyncio.sleep(0.05)
    docker = aiodocker.Docker()
    try:
        (container_id,) = await containers_of(worktree)
        await docker.containers.container(container_id).delete(force=True)
    finally:
        await docker.close()
    result = await asyncio.wait_for(run, 60)
    # Killed from outside: not a success, and not a CPU breach it had no time to commit.
    assert result.exit_code != 0 and result.breaches == ()
    assert os.lstat(worktree / "w").st_uid == os.getuid()
    assert await containers_of(worktree) == []
